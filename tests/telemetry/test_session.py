"""The telemetry stage around a (hand-made) measurement: the window comes from the result's own clock
anchor, figures land in ``extra.telemetry``/``extra.power``, the store's ``telemetry`` table (migration 4)
and InferenceX's agg keys on export; a failure inside telemetry never costs the point its throughput."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from infx.interop.export import agg
from infx.metrics.result import BenchResult
from infx.metrics.sections import Clock
from infx.results.telemetry_rows import COLUMNS, telemetry_row
from infx.telemetry.session import GPU_FILE, Telemetry, TelemetryOptions, attach, window_of
from tests.interop.test_interop_golden import hand_result, single
from tests.telemetry.powerfiles import T0, nvidia_csv


def clocked(result: BenchResult, start: float, end: float) -> BenchResult:
    """A result whose clock anchor puts the window at [start, end] (unix s)."""
    mono0, unix0 = 5_000_000_000, int((start - 10) * 1e9)
    w0 = mono0 + int(round((start - (start - 10)) * 1e9))
    w1 = w0 + int(round((end - start) * 1e9))
    clock = Clock(monotonic_ns=mono0, unix_ns=unix0, window_ns=(w0, w1))
    return result.model_copy(update={"extra": result.extra.model_copy(update={"clock": clock})})


def test_window_from_the_clock_anchor() -> None:
    r = clocked(hand_result(), T0, T0 + 100.0)
    w = window_of(r).window
    assert w is not None and w.start_time_unix == pytest.approx(T0) and w.end_time_unix == pytest.approx(T0 + 100)
    assert (w.completed, w.total_input_tokens, w.total_output_tokens) == (200, 700_000, 100_000)
    data = r.model_dump(mode="json")
    data["extra"]["clock"] = {"window_ns": [1, 2]}  # no anchor: the window cannot be placed on the wall clock
    with pytest.raises(ValidationError, match=r"extra\.clock\.monotonic_ns"):  # refused where it is read
        BenchResult.model_validate(data)


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
    row = dict(zip(COLUMNS, telemetry_row("run", "p1", result.extra.telemetry) or (), strict=True))
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
    row = dict(zip(COLUMNS, telemetry_row("run", "p1", result.extra.telemetry) or (), strict=True))
    assert row["power_valid"] == 0 and row["total_gpu_energy_j"] is None
    assert result.metrics.throughput.output_tok_per_s == 1000.0
    assert "total_gpu_energy_j" not in agg(single(), result)


def test_internal_error_is_a_reason_not_a_crash(tmp_path: Path) -> None:
    tel = Telemetry(tmp_path, TelemetryOptions(gpu="none", cpu_energy=False))
    summary = tel.finalize("not a result")  # type: ignore[arg-type]  # deliberately not a result
    assert summary.power_reasons == ["aggregation_internal_error"] and summary.power["power_valid"] == 0


def test_energy_per_token_has_an_interval_across_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three trials, each integrated over its own window of the one power file: J/output token per
    trial, their mean and Student-t interval in result.json ``stats``, in the store (packed with the
    other intervals) and, inverted, on the energy axis (output tokens per joule) the verdicts read."""
    from infx.analysis.dataset import load_measured, series
    from infx.metrics.result import Trial
    from infx.metrics.uncertainty import across_trials
    from infx.results.layout import PointStatus
    from infx.results.store import Store, make_bundle
    from infx.results.synthetic import make_manifest, make_point

    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    # 4 GPUs: 250 W over trial 0 [0, 30] s, 300 W over trial 1 [35, 65], 200 W over trial 2 [70, 100]
    watts = [(t, 250.0 if t <= 32 else 300.0 if t <= 67 else 200.0) for t in range(-1, 102)]
    nvidia_csv(tmp_path / GPU_FILE, {str(g): [(float(t), w) for t, w in watts] for g in range(4)})
    base = clocked(hand_result(), T0, T0 + 100.0)
    clock = base.extra.clock
    assert clock is not None
    mono_at = lambda t: clock.monotonic_ns + int(round((T0 + t) * 1e9)) - clock.unix_ns  # noqa: E731
    m = base.metrics
    part = m.model_copy(update={"completed": 60, "total_input_tokens": 210_000, "total_output_tokens": 30_000,
                                "throughput": m.throughput.model_copy(update={"duration_s": 30.0})})
    trials = [Trial(trial=k, started_at=T0 + s, ended_at=T0 + s + 30, warmup=k == 0,
                    window_ns=(mono_at(s), mono_at(s + 30)), metrics=part) for k, s in enumerate((0, 35, 70))]
    result = base.model_copy(update={"trials": trials})
    tel = Telemetry(tmp_path, TelemetryOptions(gpu="none", cpu_energy=False), expected_gpus=4)
    summary = tel.finalize(result)
    want = [4 * w * 30 / 30_000 for w in (250.0, 300.0, 200.0)]  # J per output token, by hand
    assert summary.trial_joules_per_output_token == pytest.approx(want, rel=1e-9)
    attached = attach(result, summary)
    est = attached.stats["joules_per_output_token"]
    ref = across_trials(want)
    assert ref is not None and est.method == "trials" and est.n == 3 and est.mean == pytest.approx(1.0)
    assert (est.lo, est.hi) == (pytest.approx(ref.lo), pytest.approx(ref.hi)) and est.lo < 0.8 < 1.2 < est.hi
    # one trial without valid power (here: a window past the samples): no interval, the point's figure stays
    late = [*trials[:2], trials[2].model_copy(update={"window_ns": (mono_at(200), mono_at(230))})]
    s2 = tel.finalize(result.model_copy(update={"trials": late}))
    assert s2.trial_joules_per_output_token[2] is None
    assert "joules_per_output_token" not in attach(result, s2).stats
    # store -> analysis: the interval rides on the point's J/token; tok/J gets its inverse
    point = make_point(1, 4, isl=1024, osl=1024)
    with Store(tmp_path / "infx.db") as st:
        st.upsert_run(make_manifest("r"))
        st.add_points([make_bundle("r", point, PointStatus(state="done"), attached)])
        (got,) = load_measured(st, gpus_per_node=lambda r, n: 8)
    j = got.joules_per_output_token
    assert j == pytest.approx(summary.power["joules_per_output_token"])
    e = got.estimate("joules_per_output_token")
    assert e is not None and e.lo == pytest.approx(j * est.lo / est.mean, rel=1e-5) and e.df == 2
    inv = got.estimate("output_tok_per_j")
    assert inv is not None and inv.mean == pytest.approx(1 / j) and inv.lo == pytest.approx(1 / e.hi)
    rel, df, n = next(iter(series([got], y_metric="energy", norm="gpu").values()))[0].errors()
    assert rel[0] == pytest.approx(e.se / j / j * j, rel=1e-6) and df[0] == 2 and n[0] == 3
    # the report's telemetry table shows it beside the figure
    from infx.report.telemetry import PointTelemetry, figures_table

    html = figures_table([PointTelemetry(got.point_id, 4, None, figures={"power_valid": 1,
                                                                        "joules_per_output_token": j},
                                         energy_ci=e)])
    assert f"&plusmn;{(e.hi - e.lo) / 2 / j * 100:.1f}%" in html and "(3 trials)" in html
