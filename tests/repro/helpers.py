"""Bundles for the repro tests: the demo point rendered by the real recipe renderer, a point directory in the
results layout with synthetic records, and its bundle written by the real writer."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from infx.engines.launch import Launch
from infx.matrix.point import Point
from infx.repro.writer import BundleContext, write_bundle
from infx.results.layout import PointStatus, ResultsDir, write_point_outcome
from infx.results.synthetic import make_manifest, make_records
from infx.sweep.profile import LoadProfile
from infx.sweep.rendering import renderer_at_port
from infx.telemetry.session import TelemetryOptions
from tests.sweep.fakes import make_result

REPO = Path(__file__).resolve().parents[2]
BUILTIN_RECIPE = REPO / "infx/builtin/recipes/tinyllama-cpu-vllm.yaml"


def demo_point(conc: int = 1) -> Point:
    from infx.matrix.select import select_points

    pts = select_points([str(REPO / "configs/cpu-master.yaml")], str(REPO / "configs/runners.yaml"),
                        ["tinyllama-bf16-cpu-vllm"])
    return next(p for p in pts if p.concs == [conc])


def recipe_dir(tmp: Path, extra_args: str = "") -> Path:
    """A recipes directory holding the built-in tiny recipe, optionally with more ``base.args`` lines."""
    tmp.mkdir(parents=True, exist_ok=True)
    text = BUILTIN_RECIPE.read_text()
    if extra_args:
        text = text.replace("    enforce-eager: true", "    enforce-eager: true\n" + extra_args, 1)
        assert extra_args in text
    (tmp / BUILTIN_RECIPE.name).write_text(text)
    return tmp


def render(point: Point, recipes: Path | None = None, port: int = 8123) -> Launch:
    return renderer_at_port(str(recipes) if recipes else None)(point, port)


def point_dir(results: Path, run_id: str, point: Point, *, seed: int = 1, n: int = 60,
              telemetry_file: bool = True) -> Path:
    rd = ResultsDir(results)
    if not rd.manifest_path(run_id).is_file():
        rd.write_manifest(make_manifest(run_id))
    result = make_result(issued=n)
    result.metrics.ttft_ms.median = 50.0
    result.metrics.itl_ms.median = 10.0
    records = make_records(point, result, random.Random(seed), n=n)
    d = write_point_outcome(rd, run_id, point, PointStatus(state="done", launch_fingerprint="fp"), result,
                            records=records, engine_log="INFO engine up\n")
    if telemetry_file:
        (d / "engine_state.jsonl").write_text('{"t": 1.0, "running": 1}\n')
    return d


def bundle(results: Path, run_id: str, point: Point, launch: Launch | None, **ctx: object) -> Path:
    d = point_dir(results, run_id, point)
    write_bundle(d, BundleContext(run_id=run_id, point=point, launch=launch, load=LoadProfile(seed=7),
                                  telemetry=TelemetryOptions(), workspace_root=str(REPO), **ctx))  # type: ignore[arg-type]
    return d


def copy_bundle(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest
