"""The KV-capacity comparison stored with each launch (no engine: the calibrator and ``infx status``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from infx.results.layout import StartupSummary
from infx.sweep.layout import PointStatus
from infx.sweep.local import kv_calibrator
from infx.sweep.manifest import new_manifest
from infx.sweep.prepare import RunRequest, make_renderer, prepare
from infx.sweep.status import kv_text, run_state

REPO = Path(__file__).resolve().parents[2]


def _demo_point():  # type: ignore[no-untyped-def]
    req = RunRequest(config_files=[str(REPO / "configs/cpu-master.yaml")],
                     runner_config=str(REPO / "configs/runners.yaml"), config_keys=["tinyllama-bf16-cpu-vllm"],
                     results="unused", preflight=False)
    point = prepare(req).points[0]
    return point, make_renderer(None)(point)


def test_kv_calibrator_compares_the_prediction_with_the_logged_figure() -> None:
    point, launch = _demo_point()
    calibrate = kv_calibrator(str(REPO / "configs/runners.yaml"))
    # the recipe gives vLLM-CPU VLLM_CPU_KVCACHE_SPACE=1 (GiB): the prediction follows from the model card
    predicted = calibrate(point, launch, StartupSummary(kv_cache_tokens=1))["kv_tokens_predicted"]
    assert isinstance(predicted, int) and predicted > 1
    same = calibrate(point, launch, StartupSummary(kv_cache_tokens=predicted))
    assert same == {"kv_tokens_predicted": predicted, "kv_tokens_logged": predicted, "kv_prediction_ratio": 1.0,
                    "kv_prediction": "match"}
    off = calibrate(point, launch, StartupSummary(kv_cache_tokens=predicted * 2))
    assert off["kv_prediction"] == "mismatch" and off["kv_prediction_ratio"] == 0.5
    unknown = calibrate(point, launch, StartupSummary())
    assert unknown["kv_prediction"] == "unknown" and unknown["kv_tokens_logged"] is None


def test_kv_calibrator_never_raises() -> None:
    point, _ = _demo_point()
    out = kv_calibrator(None)(point, object(), StartupSummary(kv_cache_tokens=5))
    assert out["kv_tokens_logged"] == 5 and out["kv_prediction"].startswith("error: ")


def test_status_shows_the_stored_comparison(tmp_path: Path) -> None:
    from infx.sweep.layout import RunDir

    point, _ = _demo_point()
    rd = RunDir(tmp_path, "r")
    rd.root.mkdir(parents=True)
    rd.results.write_manifest(new_manifest("r", config_files=[], recipes=None, config_keys=["k"], images=[]))
    rd.write_point(point, "fp")
    other = {"kv_tokens_predicted": 100, "kv_tokens_logged": 80, "kv_prediction_ratio": 1.25,
             "kv_prediction": "mismatch"}
    rd.write_status(point.point_id, PointStatus(state="failed", reason="x", launch_fingerprint="fp",
                                                startup=StartupSummary(kv_cache_tokens=80, other=other)))
    (p,) = run_state(rd).points
    assert p.kv == "100/80 (mismatch)" == kv_text(StartupSummary(other=other))
    assert kv_text(StartupSummary()) == "" and kv_text(None) == ""
    r = subprocess.run([sys.executable, "-m", "infx", "status", str(rd.root), "--json"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["points"][0]["kv"] == "100/80 (mismatch)"
    r = subprocess.run([sys.executable, "-m", "infx", "status", str(rd.root)], cwd=REPO, capture_output=True,
                       text=True, timeout=120, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and "100/80 (mismatch)" in r.stdout, r.stdout + r.stderr
