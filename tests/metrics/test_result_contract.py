"""The typed result contract (issue 20): one measured window for every reader, typed ``extra`` sections and
``config`` shapes that write the keys infx always wrote, strict where infx always wrote the same keys and
tolerant where the files vary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from infx.diagnostics import InfxError
from infx.interop.export import agg, raw_client
from infx.metrics.result import BenchResult, Trial
from infx.metrics.run_config import AgenticRunConfig, BenchSettings, OtherRunConfig
from infx.metrics.sections import Clock, PowerFigures, ResultExtra, TelemetrySummary
from infx.results.layout import read_model
from infx.telemetry.session import window_of
from tests.interop.test_interop_golden import hand_result, single

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden_results" / "results" / "golden" / "points"


def warmed_up() -> BenchResult:
    """No clock anchor (results from before it, hand-made ones), and 20 s of warmup and prompt building
    between ``started_at`` and the 80 s measured window that ends at ``ended_at``."""
    r = hand_result({"power_valid": True, "total_gpu_energy_j": 32_000.0, "gpu_count": 4})
    thr = r.metrics.throughput.model_copy(update={"duration_s": 80.0})
    return r.model_copy(update={"started_at": 1000.0, "ended_at": 1100.0,
                                "metrics": r.metrics.model_copy(update={"throughput": thr})})


def test_every_reader_uses_the_one_measured_window_where_the_two_old_ones_disagree() -> None:
    """The telemetry stage used to take [started_at, ended_at] (100 s, warmup included: a duration
    mismatch, and power averaged over 100 s) and the export [started_at, started_at + duration] (the
    warmup in, the window's last 20 s out). Both now read the window the result defines: the measured
    duration ending at ``ended_at``."""
    r = warmed_up()
    w = r.window()
    assert (w.start, w.end, w.duration_s) == (1020.0, 1100.0, 80.0)
    check = window_of(r)
    assert check.window is not None and check.reasons == []  # no benchmark_duration_mismatch
    assert (check.window.start_time_unix, check.window.end_time_unix) == (1020.0, 1100.0)
    raw = raw_client(single(), r)
    assert (raw["benchmark_start_time_unix"], raw["benchmark_end_time_unix"]) == (1020.0, 1100.0)
    assert agg(single(), r)["avg_total_gpu_power_w"] == 400.0  # 32 kJ over the 80 s window, not 100 s


def test_the_window_comes_from_the_clock_anchor_when_there_is_one() -> None:
    clock = Clock(monotonic_ns=5_000_000_000, unix_ns=1_700_000_000_000_000_000,
                  window_ns=(7_000_000_000, 9_500_000_000))
    r = hand_result().model_copy(update={"extra": ResultExtra(clock=clock)})
    w = r.window()
    assert (w.start, w.end) == (1_700_000_002.0, 1_700_000_004.5)
    assert raw_client(single(), r)["benchmark_start_time_unix"] == w.start == window_of(r).window.start_time_unix
    trial = Trial(trial=1, started_at=0.0, ended_at=0.0, warmup=False, window_ns=(8_000_000_000, 9_000_000_000),
                  metrics=r.metrics)
    assert (r.window(trial).start, r.window(trial).end) == (1_700_000_003.0, 1_700_000_004.0)
    # an agentic replay that measured nothing has an anchor but no window (and a measured duration of 0):
    # an empty window at its end, which telemetry cannot integrate over
    nothing = r.metrics.model_copy(update={"throughput": r.metrics.throughput.model_copy(update={"duration_s": 0.0})})
    empty = r.model_copy(update={"metrics": nothing,
                                 "extra": ResultExtra(clock=clock.model_copy(update={"window_ns": None}))})
    assert empty.window().start == empty.window().end == r.ended_at
    assert window_of(empty).window is None and window_of(empty).reasons == ["invalid_benchmark_window"]


def test_absent_sections_and_keys_are_left_out_as_infx_always_wrote_them() -> None:
    data = json.loads(hand_result().model_dump_json())
    assert data["extra"] == {} and data["config"] == {"max_concurrency": 16, "endpoint": "completions"}
    power = PowerFigures(power_valid=False, gpu_count=None)
    assert json.loads(power.model_dump_json()) == {"power_valid": False, "total_gpu_energy_j": None,
                                                   "gpu_count": None}  # role figures only when measured
    with_roles = power.model_copy(update={"prefill_gpu_energy_j": 1.0})
    assert json.loads(with_roles.model_dump_json())["prefill_gpu_energy_j"] == 1.0


def test_config_shapes() -> None:
    agentic = read_model(GOLDEN / "dsv41flash_tp2_conc2_kvnone_spec-mtp" / "result.json", BenchResult)
    assert isinstance(agentic.config, AgenticRunConfig) and agentic.config.concurrency == 2
    assert agentic.config.trace_file == "traces/synthetic.jsonl" and agentic.config.request_rate is None
    bench = read_model(GOLDEN / "golden_tp1_conc2_1024_128" / "result.json", BenchResult)
    assert isinstance(bench.config, BenchSettings) and bench.config.concurrency == 2
    assert bench.config.trace_file is None
    # any other shape is kept key for key, in its order, and read the way the raw keys always were
    other = hand_result().model_copy(update={"config": OtherRunConfig.model_validate(
        {"synthetic": True, "conc": 8, "request_rate": 4, "endpoint": "chat"})})
    assert isinstance(other.config, OtherRunConfig)
    assert (other.config.concurrency, other.config.request_rate, other.config.endpoint) == (8, 4.0, "chat")
    again = BenchResult.model_validate_json(other.model_dump_json())
    assert isinstance(again.config, OtherRunConfig)
    assert list(json.loads(again.model_dump_json())["config"]) == ["synthetic", "conc", "request_rate", "endpoint"]


@pytest.mark.parametrize(("where", "edit", "loc"), [
    ("an unknown extra section", lambda d: d["extra"].update(notes="hi"), "extra.notes"),
    ("an unknown agentic figure", lambda d: d["extra"]["agentic"].update(sessions_lost=1), "sessions_lost"),
    ("an unknown clock key", lambda d: d["extra"]["clock"].update(tz="UTC"), "extra.clock.tz"),
    ("an unknown replay setting", lambda d: d["config"]["replay"].update(turbo=True), "turbo"),
])
def test_sections_infx_always_wrote_the_same_are_strict(tmp_path: Path, where: str, edit, loc: str) -> None:
    data = json.loads((GOLDEN / "dsv41flash_tp2_conc2_kvnone_spec-mtp" / "result.json").read_text())
    edit(data)
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(InfxError) as exc:
        read_model(path, BenchResult)
    assert loc in str(exc.value) and str(path) in str(exc.value), where


def test_a_bench_config_with_an_unknown_setting_is_refused() -> None:
    data = json.loads((GOLDEN / "golden_tp1_conc2_1024_128" / "result.json").read_text())
    data["config"]["turbo"] = True
    with pytest.raises(ValidationError, match="turbo"):
        BenchResult.model_validate(data)


def test_an_older_telemetry_summary_reads_with_defaults_and_is_stored_as_written() -> None:
    """Before ``gpu_energy_j``, ``observed_gpu_count`` and the per-trial energies existed (and before
    ``extra.power``): the summary reads, and the store keeps it with the keys its file holds."""
    text = (GOLDEN / "golden_tp4_conc2_1024_128" / "result.json").read_text()
    old = json.loads(text)["extra"]["telemetry"]
    assert "gpu_energy_j" not in old
    r = BenchResult.model_validate_json(text)
    t = r.extra.telemetry
    assert isinstance(t, TelemetrySummary) and r.extra.power is None
    assert t.gpu_energy_j is None and t.observed_gpu_count == 0 and t.trial_joules_per_output_token == []
    assert t.as_written() == json.dumps(old)


def test_the_repro_payload_reads_the_load_settings_from_the_typed_config(tmp_path: Path) -> None:
    import shutil

    from infx.matrix.point import Point
    from infx.repro.writer import BundleContext, build_payload
    from infx.sweep.profile import LoadProfile

    for name, agentic in (("golden_tp1_conc2_1024_128", False), ("dsv41flash_tp2_conc2_kvnone_spec-mtp", True)):
        d = tmp_path / name
        shutil.copytree(GOLDEN / name, d)
        point = Point.from_row(json.loads((d / "result.json").read_text())["point"])
        payload = build_payload(d, BundleContext(run_id="golden", point=point, load=LoadProfile(seed=11)))
        load = payload.load
        assert load is not None
        if agentic:  # the replay's settings live in the load profile
            assert (load.seed, load.warmup_requests, load.num_prompts, load.concurrency) == (11, None, None, None)
            assert payload.inputs.dataset == "agentic-trace"
        else:  # the load generator's, as run (result.json config), over the profile's
            assert (load.seed, load.warmup_requests, load.num_prompts, load.concurrency) == (7, 2, 8, 2)
            assert payload.inputs.dataset == "random"
