"""GPU power parsing and integration: pinned hand-computed energies, every InferenceX reason code, and
InferenceX's own ``aggregate_power.py`` (run, never copied) on the same CSV and window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infx.telemetry.energy import check_window, validate_power
from infx.telemetry.powercsv import detect_columns, parse_power, parse_timestamp
from tests.telemetry.powerfiles import NV_HEADER, PINNED, PINNED_METRICS, PINNED_WINDOW, T0, nv_row, nvidia_csv

REPO = Path(__file__).resolve().parents[2]
ORACLE = Path(os.environ.get("INFX_SHARED", REPO / ".." / "shared")).resolve() / "compat" / "inferencex" / "oracle" \
    / "aggregate_power.py"


def ours(csv_path: Path, window: dict[str, Any], expected: int | None) -> Any:
    w = window
    return validate_power(csv_path, check_window(w["start"], w["end"], w["duration"], w["completed"],
                                                 w["input_tokens"], w["output_tokens"]), expected)


def test_cells_in_real_formats() -> None:
    assert parse_power("412.34 W") == 412.34
    assert parse_power(" 87 ") == 87.0
    for na in ("[N/A]", "N/A", "NA", "", "W"):
        assert parse_power(na) is None
    assert parse_timestamp("1767225600.5") == 1767225600.5
    assert parse_timestamp("1767225600500") == 1767225600.5  # milliseconds
    assert parse_timestamp("2026-01-01T00:00:00+00:00") == 1767225600.0
    from tests.telemetry.powerfiles import smi_time

    assert parse_timestamp(smi_time(T0 + 0.25)) == pytest.approx(T0 + 0.25, abs=1e-3)  # local time round trip
    assert parse_timestamp("yesterday") is None
    cols = detect_columns([c.strip() for c in NV_HEADER.split(",")])
    assert (cols.timestamp, cols.power, cols.gpu) == ("timestamp", "power.draw [W]", "index")
    cols = detect_columns(["timestamp", "gpu", "power_limit", "socket_power"])
    assert (cols.power, cols.gpu) == ("socket_power", "gpu")  # limit/cap/max/min columns are not power


def test_pinned_hand_computed_energy(tmp_path: Path) -> None:
    v = ours(nvidia_csv(tmp_path / "g.csv", PINNED), PINNED_WINDOW, 2)
    assert v.power_valid and v.reasons == []
    assert v.per_gpu_energy_j == pytest.approx({"0": 462.5, "1": 100.0})
    assert v.raw_metrics == pytest.approx(PINNED_METRICS)
    keys = v.result_keys()
    assert keys["power_valid"] == 1 and keys["power_metric_schema_version"] == 2
    assert keys["total_gpu_energy_j"] == 562.5 and keys["joules_per_output_token"] == 1.125
    assert v.per_gpu_max_sample_gap_s == pytest.approx({"0": 1.0, "1": 1.0})


def test_invalid_telemetry_yields_no_number(tmp_path: Path) -> None:
    v = ours(nvidia_csv(tmp_path / "g.csv", PINNED), PINNED_WINDOW, 4)
    assert not v.power_valid and v.reasons == ["expected_gpu_count_mismatch"]
    assert v.result_keys() == {"power_metric_schema_version": 2, "power_valid": 0}


def _shifted(samples: dict[str, list[tuple[float, Any]]], **changes: Any) -> dict[str, list[tuple[float, Any]]]:
    out = {g: list(s) for g, s in samples.items()}
    out.update(changes)
    return out


W = PINNED_WINDOW


def _case_files(tmp: Path) -> dict[str, tuple[Path, dict[str, Any], int, list[str]]]:
    def csv_of(name: str, samples: dict[str, Any], header: str = NV_HEADER, extra: str = "") -> Path:
        return nvidia_csv(tmp / f"{name}.csv", samples, header, extra)

    good = csv_of("good", PINNED)
    empty = tmp / "empty.csv"
    empty.write_text("")
    huge = tmp / "huge.csv"  # a cell over the csv module's field limit: the file cannot be read
    huge.write_text(NV_HEADER + nv_row(T0, "0", "1" * 200_000))
    no_ts = csv_of("no_ts", PINNED, header=NV_HEADER.replace("timestamp", "stamp"))
    no_pw = csv_of("no_pw", PINNED, header=NV_HEADER.replace("power.draw [W]", "draw [W]"))
    no_id = csv_of("no_id", PINNED, header=NV_HEADER.replace(" index,", " slot,"))
    return {
        "valid": (good, W, 2, []),
        "invalid_benchmark_window": (good, {**W, "end": W["start"]}, 2, ["invalid_benchmark_window"]),
        "benchmark_duration_mismatch": (good, {**W, "duration": 5.0}, 2, ["benchmark_duration_mismatch"]),
        "counts": (good, {**W, "completed": 0, "input_tokens": True, "output_tokens": -1}, 2,
                   ["invalid_successful_query_count", "invalid_input_token_count", "invalid_output_token_count"]),
        "invalid_expected_gpu_count": (good, W, 0, ["invalid_expected_gpu_count"]),
        "telemetry_file_missing": (tmp / "absent.csv", W, 2, ["telemetry_file_missing"]),
        "telemetry_file_empty": (empty, W, 2, ["telemetry_file_empty"]),
        "telemetry_file_unreadable": (huge, W, 1, ["telemetry_file_unreadable"]),
        "timestamp_column_missing": (no_ts, W, 2, ["timestamp_column_missing"]),
        "power_column_missing": (no_pw, W, 2, ["power_column_missing"]),
        "gpu_identity_column_missing": (no_id, W, 2, ["gpu_identity_column_missing"]),
        # a truncated last line far outside the window still has an unparseable stamp
        "invalid_timestamp_sample": (csv_of("bad_ts", PINNED, extra="2026/01/01 00:0"), W, 2,
                                     ["invalid_timestamp_sample"]),
        "invalid_power_sample": (csv_of("na", _shifted(PINNED, **{"1": [*PINNED["1"], (1.0, "[N/A]")]})), W, 2,
                                 ["invalid_power_sample"]),
        "negative_power": (csv_of("neg", _shifted(PINNED, **{"1": [*PINNED["1"], (1.0, -3.0)]})), W, 2,
                           ["invalid_power_sample"]),
        "na_outside_window_is_ignored": (csv_of("na_out", _shifted(PINNED, **{"1": [*PINNED["1"], (60.0, "[N/A]")]})),
                                         W, 2, []),
        "gpu_identity_missing": (csv_of("noid_row", _shifted(PINNED, **{"": [(1.0, 10.0)]})), W, 2,
                                 ["gpu_identity_missing"]),
        "no_usable_power_samples": (csv_of("far", {"0": [(100.0, 10.0), (101.0, 10.0)]}), W, 1,
                                    ["no_usable_power_samples"]),
        "expected_gpu_count_mismatch": (good, W, 8, ["expected_gpu_count_mismatch"]),
        "insufficient_power_samples": (csv_of("one", _shifted(PINNED, **{"1": [(0.5, 50.0)]})), W, 2,
                                       ["insufficient_power_samples"]),
        "benchmark_window_not_bracketed": (csv_of("late", _shifted(PINNED, **{"1": [(0.5, 50.0), (2.5, 50.0)]})),
                                           W, 2, ["benchmark_window_not_bracketed"]),
        "sampling_gap_exceeded": (csv_of("gap", _shifted(PINNED, **{"1": [(-0.5, 50.0), (2.9, 50.0)]})), W, 2,
                                  ["sampling_gap_exceeded"]),
        "duplicate_stamps_averaged": (csv_of("dup", _shifted(PINNED, **{"1": [*PINNED["1"], (0.5, 150.0)]})), W, 2,
                                      []),
    }


@pytest.fixture
def cases(tmp_path: Path) -> dict[str, tuple[Path, dict[str, Any], int, list[str]]]:
    return _case_files(tmp_path)


CASE_NAMES = [
    "valid", "invalid_benchmark_window", "benchmark_duration_mismatch", "counts", "invalid_expected_gpu_count",
    "telemetry_file_missing", "telemetry_file_empty", "telemetry_file_unreadable", "timestamp_column_missing",
    "power_column_missing", "gpu_identity_column_missing", "invalid_timestamp_sample", "invalid_power_sample",
    "negative_power", "na_outside_window_is_ignored", "gpu_identity_missing", "no_usable_power_samples",
    "expected_gpu_count_mismatch", "insufficient_power_samples", "benchmark_window_not_bracketed",
    "sampling_gap_exceeded", "duplicate_stamps_averaged"]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_reason_codes(cases: dict[str, Any], name: str) -> None:
    path, window, expected, reasons = cases[name]
    v = ours(path, window, expected)
    assert v.reasons == reasons
    assert v.power_valid is (not reasons)
    assert bool(v.raw_metrics) is (not reasons)


def test_duplicate_stamps_are_averaged(cases: dict[str, Any]) -> None:
    path, window, expected, _ = cases["duplicate_stamps_averaged"]
    v = ours(path, window, expected)
    # GPU 1 at +0.5 s reads (50 + 150) / 2 = 100 W: 0.5*(75+100)/2 + 1*(100+50)/2 + 0.5*50 = 43.75+75+25
    assert v.per_gpu_energy_j["1"] == pytest.approx(143.75)


def run_oracle(tmp: Path, path: Path, window: dict[str, Any], expected: int) -> dict[str, Any]:
    bench = tmp / "bench.json"
    bench.write_text(json.dumps({"benchmark_start_time_unix": window["start"], "benchmark_end_time_unix": window["end"],
                                 "duration": window["duration"], "completed": window["completed"],
                                 "total_input_tokens": window["input_tokens"],
                                 "total_output_tokens": window["output_tokens"]}))
    agg = tmp / "agg.json"
    agg.write_text("{}")
    sidecar = tmp / "sidecar.json"
    subprocess.run([sys.executable, str(ORACLE), "--csv", str(path), "--bench-result", str(bench), "--agg-result",
                    str(agg), "--expected-num-gpus", str(expected), "--validation-result", str(sidecar)],
                   check=True, capture_output=True, env={**os.environ})
    return {"sidecar": json.loads(sidecar.read_text()), "agg": json.loads(agg.read_text())}


@pytest.mark.skipif(not ORACLE.is_file(), reason=f"InferenceX oracle not found at {ORACLE} (set INFX_SHARED)")
@pytest.mark.parametrize("name", CASE_NAMES)
def test_same_as_inferencex(cases: dict[str, Any], name: str, tmp_path: Path) -> None:
    path, window, expected, _ = cases[name]
    v = ours(path, window, expected)
    got = run_oracle(tmp_path, path, window, expected)
    side = got["sidecar"]
    assert v.power_valid == side["power_valid"]
    assert v.reasons == side["reasons"]
    assert v.observed_gpu_ids == side["observed_gpu_ids"]
    assert v.per_gpu_sample_counts == side["per_gpu_sample_counts"]
    assert v.device_issues == side["device_issues"]
    assert v.per_gpu_energy_j == pytest.approx(side["per_gpu_energy_j"], rel=1e-12)
    assert v.per_gpu_max_sample_gap_s == pytest.approx(side["per_gpu_max_sample_gap_s"], rel=1e-12)
    assert v.metrics == side["metrics"]
    assert v.result_keys() == got["agg"]  # the aggregated-result keys, rounding included
