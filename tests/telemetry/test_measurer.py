"""The sweep's measurer with telemetry on, against the load generator's synthetic SSE server (a test
server, not an engine) and a fake ``nvidia-smi`` (no GPU here): samples land beside the records and the
figures in the result, on the load generator's own window."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from infx.loadgen.testserver import SyntheticServer
from infx.sweep.local import LocalMeasurer
from infx.sweep.profile import LoadProfile
from infx.telemetry.session import GPU_FILE, VALIDATION_FILE, TelemetryOptions
from tests.interop.helpers import fixed_point
from tests.telemetry.powerfiles import install_fake_tools


def test_measure_with_telemetry(tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    bin_dir = install_fake_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    point = fixed_point(2, 4)  # TP=2: two devices expected, sampled as --id=0,1
    profile = LoadProfile(prompts_per_conc=4, max_isl=32, max_osl=64)
    with SyntheticServer(ttft_s=0.01, token_interval_s=0.002) as srv:
        launch = SimpleNamespace(metrics_url=None, env={}, argv=[], model_path=str(tiny_model_dir))
        engine = SimpleNamespace(base_url=srv.base_url, served_model_name="m", launch=launch)
        result = LocalMeasurer(profile, telemetry=TelemetryOptions(gpu="nvidia", cpu_energy=False)).measure(
            point, engine, tmp_path / "point")
    t = result.extra.telemetry
    assert t is not None and t.gpu_tool == "nvidia-smi" and t.expected_gpu_count == 2
    assert t.power["power_valid"] == 1, t.power_reasons
    duration = result.metrics.throughput.duration_s
    assert t.power["total_gpu_energy_j"] == pytest.approx((100 + 110) * duration, abs=1e-3)
    assert result.extra.power is not None and result.extra.power.gpu_count == 2
    for name in (GPU_FILE, VALIDATION_FILE, "records.jsonl.gz"):
        assert (tmp_path / "point" / name).is_file()
    capsys.readouterr()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the tool is gone: a warning, once per run, and no number
    missing = LocalMeasurer(profile, telemetry=TelemetryOptions(gpu="nvidia", cpu_energy=False))
    for i in range(2):
        with SyntheticServer(ttft_s=0.01, token_interval_s=0.002) as srv:
            engine.base_url = srv.base_url
            r = missing.measure(point, engine, tmp_path / f"m{i}")
        assert r.extra.telemetry is not None and r.extra.telemetry.power_reasons == ["telemetry_file_missing"]
    assert capsys.readouterr().err.count("warning: telemetry: nvidia-smi not found on PATH") == 1
    off = LocalMeasurer(profile, telemetry=TelemetryOptions(enabled=False))
    with SyntheticServer(ttft_s=0.01, token_interval_s=0.002) as srv:
        engine.base_url = srv.base_url
        assert off.measure(point, engine, tmp_path / "p2").extra.telemetry is None
