"""The telemetry stage around a (hand-made) measurement: the window comes from the result's own clock
anchor, figures land in ``extra.telemetry``/``extra.power``, the store's ``telemetry`` table (migration 4)
and InferenceX's agg keys on export; a failure inside telemetry never costs the point its throughput."""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.interop.export import agg
from infx.metrics.result import BenchResult
from infx.results.telemetry_rows import COLUMNS, telemetry_row
from infx.telemetry.session import GPU_FILE, Telemetry, TelemetryOptions, attach, window_of
from tests.interop.test_interop_golden import hand_result, single
from tests.telemetry.powerfiles import T0, nvidia_csv


def clocked(result: BenchResult, start: float, end: float) -> BenchResult:
    """A result whose clock anchor puts the window at [start, end] (unix s)."""
    mono0, unix0 = 5_000_000_000, int((start - 10) * 1e9)
    w0 = mono0 + int(round((start - (start - 10)) * 1e9))
    w1 = w0 + int(round((end - start) * 1e9))
    extra = {**result.extra, "clock": {"monotonic_ns": mono0, "unix_ns": unix0, "window_ns": [w0, w1]}}
    return result.model_copy(update={"extra": extra})


def test_window_from_the_clock_anchor() -> None:
    r = clocked(hand_result(), T0, T0 + 100.0)
    w = window_of(r).window
    assert w is not None and w.start_time_unix == pytest.approx(T0) and w.end_time_unix == pytest.approx(T0 + 100)
    assert (w.completed, w.total_input_tokens, w.total_output_tokens) == (200, 700_000, 100_000)
    bad = r.model_copy(update={"extra": {"clock": {"window_ns": [1, 2]}}})
    assert window_of(bad).reasons == ["invalid_benchmark_result"]


def test_finalize_attach_store_and_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))  # no GPU tool: we write the CSV ourselves
    # 4 GPUs at 250 W over a 100 s window: 100 kJ; 1 s samples from 1 s before to 1 s after
    samples = {str(g): [(float(t), 250.0) for t in range(-1, 102)] for g in range(4)}
    tel = Telemetry(tmp_path, TelemetryOptions(gpu="none", cpu_energy=False), expected_gpus=4)
    nvidia_csv(tmp_path / GPU_FILE, samples)
    summary = tel.finalize(clocked(hand_result(), T0, T0 + 100.0))
    assert summary.power["power_valid"] == 1 and summary.power["total_gpu_energy_j"] == 100_000.0
    assert summary.power["avg_power_w"] == 250.0 and summary.power["joules_per_output_token"] == 1.0
    result = attach(hand_result(), summary)
    row = dict(zip(COLUMNS, telemetry_row("run", "p1", result.extra) or ()))
    assert row["power_valid"] == 1 and row["joules_per_output_token"] == 1.0 and row["expected_gpu_count"] == 4
    a = agg(single(), result)  # the InferenceX export reads extra.power
    assert a["power_valid"] == 1 and a["total_gpu_energy_j"] == 100_000.0 and a["joules_per_output_token"] == 1.0


def test_invalid_power_keeps_throughput_and_says_why(tmp_path: Path) -> None:
    tel = Telemetry(tmp_path, TelemetryOptions(gpu="none", cpu_energy=False), expected_gpus=8)
    nvidia_csv(tmp_path / GPU_FILE, {"0": [(-1.0, 10.0), (101.0, 10.0)]})  # one GPU of 8, a 102 s gap
    summary = tel.finalize(clocked(hand_result(), T0, T0 + 100.0))
    assert summary.power == {"power_metric_schema_version": 2, "power_valid": 0}
    assert summary.power_reasons == ["expected_gpu_count_mismatch", "sampling_gap_exceeded"]
    result = attach(hand_result(), summary)
    row = dict(zip(COLUMNS, telemetry_row("run", "p1", result.extra) or ()))
    assert row["power_valid"] == 0 and row["total_gpu_energy_j"] is None
    assert result.metrics.throughput.output_tok_per_s == 1000.0
    assert "total_gpu_energy_j" not in agg(single(), result)


def test_internal_error_is_a_reason_not_a_crash(tmp_path: Path) -> None:
    tel = Telemetry(tmp_path, TelemetryOptions(gpu="none", cpu_energy=False))
    summary = tel.finalize("not a result")  # type: ignore[arg-type]
    assert summary.power_reasons == ["aggregation_internal_error"] and summary.power["power_valid"] == 0
