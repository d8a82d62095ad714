"""Energy over exactly the throughput window, with InferenceX's validity rules and reason codes.

Per device: readings at identical timestamps are averaged; the device needs >= 2 samples, the first at or
before the window start and the last at or after its end; the largest gap between the last sample <= start
and the first sample >= end must be <= 3.0 s. Energy = trapezoid over [start, samples strictly inside,
end], boundary powers interpolated linearly between the bracketing samples (a sample within 1e-9 s of a
boundary is used as is). Total = sum over devices, whose count must equal the expected TP x PP x PCP.
Invalid telemetry never yields a number: ``power_valid`` is false, reasons say why, no energy keys.
"""

from __future__ import annotations

import bisect
import csv
import math
from itertools import pairwise
from pathlib import Path
from statistics import fmean
from typing import Any

from infx.telemetry.models import MAX_SAMPLE_GAP_S, BenchWindow, PowerValidation, WindowCheck
from infx.telemetry.powercsv import detect_columns, finite, gpu_sort_key, parse_power, parse_timestamp
from infx.telemetry.reasons import Reason, add

Series = list[tuple[float, float]]  # sorted (unix s, value)


def check_window(start: Any, end: Any, duration: Any, completed: Any, input_tokens: Any,
                 output_tokens: Any) -> WindowCheck:
    """The benchmark-side checks: finite window with end > start and duration > 0 (else nothing can be
    integrated), |duration - (end - start)| <= max(0.5 s, 1 %), positive int counts (bools are not ints)."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))

    if not (number(start) and number(end) and number(duration)) or float(end) <= float(start) or float(duration) <= 0:
        return WindowCheck(window=None, reasons=[Reason.INVALID_BENCHMARK_WINDOW])
    reasons: list[str] = []
    span = float(end) - float(start)
    if abs(float(duration) - span) > max(0.5, 0.01 * span):
        add(reasons, Reason.BENCHMARK_DURATION_MISMATCH)

    def count(v: Any, reason: Reason) -> int:
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
        add(reasons, reason)
        return 0

    window = BenchWindow(start_time_unix=float(start), end_time_unix=float(end), reported_duration_s=float(duration),
                         completed=count(completed, Reason.INVALID_SUCCESSFUL_QUERY_COUNT),
                         total_input_tokens=count(input_tokens, Reason.INVALID_INPUT_TOKEN_COUNT),
                         total_output_tokens=count(output_tokens, Reason.INVALID_OUTPUT_TOKEN_COUNT))
    return WindowCheck(window=window, reasons=reasons)


def value_at(series: Series, t: float) -> float:
    """Linear interpolation inside ``series`` (which must bracket ``t``)."""
    times = [s[0] for s in series]
    i = bisect.bisect_left(times, t)
    if i < len(series) and abs(series[i][0] - t) <= 1e-9:
        return series[i][1]
    if i == 0 or i >= len(series):
        raise ValueError(f"{t} is not bracketed by the samples")
    (t0, v0), (t1, v1) = series[i - 1], series[i]
    return v0 + (t - t0) / (t1 - t0) * (v1 - v0)


def trapezoid_window(series: Series, start: float, end: float) -> float:
    """Integral of a bracketing power series over [start, end] (J when watts and seconds)."""
    pts = [(start, value_at(series, start)), *[(t, p) for t, p in series if start < t < end],
           (end, value_at(series, end))]
    return sum((t1 - t0) * (p0 + p1) / 2.0 for (t0, p0), (t1, p1) in pairwise(pts))


def window_gap(series: Series, start: float, end: float) -> float:
    """Largest gap from the last sample <= start to the first sample >= end."""
    times = [s[0] for s in series]
    lo = bisect.bisect_right(times, start) - 1
    hi = bisect.bisect_left(times, end)
    rel = times[max(lo, 0):hi + 1]
    return max((b - a for a, b in pairwise(rel)), default=0.0)


def bracket_issue(series: Series, start: float, end: float) -> Reason | None:
    if len(series) < 2:
        return Reason.INSUFFICIENT_POWER_SAMPLES
    if series[0][0] > start or series[-1][0] < end:
        return Reason.BENCHMARK_WINDOW_NOT_BRACKETED
    return None


def read_power_csv(path: Path, start: float, end: float, max_gap_s: float,
                   reasons: list[str]) -> dict[str, dict[float, list[float]]] | None:
    """Per-GPU readings near the window (``None``: the file cannot be used at all; reasons say why).
    A bad timestamp anywhere, or a bad/negative power near the window, is a reason; rows without a GPU id
    are dropped but flagged."""
    if not path.is_file():
        add(reasons, Reason.TELEMETRY_FILE_MISSING)
        return None
    try:
        if path.stat().st_size == 0:
            add(reasons, Reason.TELEMETRY_FILE_EMPTY)
            return None
    except OSError:
        add(reasons, Reason.TELEMETRY_FILE_UNREADABLE)
        return None
    readings: dict[str, dict[float, list[float]]] = {}
    missing_id = False
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as fh:
            reader = csv.DictReader(fh, skipinitialspace=True)
            reader.fieldnames = [h.strip() for h in (reader.fieldnames or [])]
            cols = detect_columns(list(reader.fieldnames))
            for col, reason in ((cols.timestamp, Reason.TIMESTAMP_COLUMN_MISSING),
                                (cols.power, Reason.POWER_COLUMN_MISSING),
                                (cols.gpu, Reason.GPU_IDENTITY_COLUMN_MISSING)):
                if col is None:
                    add(reasons, reason)
            if cols.timestamp is None or cols.power is None or cols.gpu is None:
                return None
            for row in reader:
                ts = parse_timestamp(row.get(cols.timestamp) or "")
                if not finite(ts):
                    add(reasons, Reason.INVALID_TIMESTAMP_SAMPLE)
                    continue
                assert ts is not None
                if ts < start - max_gap_s or ts > end + max_gap_s:
                    continue
                watts = parse_power(row.get(cols.power) or "")
                if watts is None or not math.isfinite(watts) or watts < 0:
                    add(reasons, Reason.INVALID_POWER_SAMPLE)
                    continue
                gpu = (row.get(cols.gpu) or "").strip()
                if not gpu:
                    missing_id = True
                    continue
                readings.setdefault(gpu, {}).setdefault(ts, []).append(watts)
    except (OSError, csv.Error):
        add(reasons, Reason.TELEMETRY_FILE_UNREADABLE)
        return None
    if missing_id:
        add(reasons, Reason.GPU_IDENTITY_MISSING)
    return readings


def validate_power(path: Path, check: WindowCheck, expected_gpus: int | None, *,
                   max_gap_s: float = MAX_SAMPLE_GAP_S) -> PowerValidation:
    """The whole validation of one GPU power CSV against a checked window (InferenceX's ``run`` minus
    the agg-JSON patching): reasons in discovery order, per-GPU audit, derived metrics when valid."""
    reasons: list[str] = list(check.reasons)
    window = check.window
    audit: dict[str, Any] = dict(observed_gpu_ids=[], per_gpu_sample_counts={}, per_gpu_max_sample_gap_s={},
                                 per_gpu_energy_j={}, device_issues={})
    bw = None if window is None else {**window.model_dump(), "integration_duration_s": window.integration_duration_s}

    def result() -> PowerValidation:
        return PowerValidation(power_valid=False, reasons=reasons, telemetry_source=str(path), benchmark_window=bw,
                               expected_gpu_count=expected_gpus, observed_gpu_count=len(audit["observed_gpu_ids"]),
                               **audit)

    if window is None:
        return result()
    start, end = window.start_time_unix, window.end_time_unix
    if expected_gpus is not None and expected_gpus <= 0:
        add(reasons, Reason.INVALID_EXPECTED_GPU_COUNT)
    if not math.isfinite(max_gap_s) or max_gap_s <= 0:
        add(reasons, Reason.INVALID_MAX_SAMPLE_GAP)
        return result()
    readings = read_power_csv(path, start, end, max_gap_s, reasons)
    if readings is None:
        return result()
    if not readings:
        add(reasons, Reason.NO_USABLE_POWER_SAMPLES)
        return result()
    ids = sorted(readings, key=gpu_sort_key)
    audit["observed_gpu_ids"] = ids
    if expected_gpus is not None and expected_gpus > 0 and len(ids) != expected_gpus:
        add(reasons, Reason.EXPECTED_GPU_COUNT_MISMATCH)
    for gpu in ids:
        series = sorted((t, fmean(v)) for t, v in readings[gpu].items())
        audit["per_gpu_sample_counts"][gpu] = len(series)
        issue = bracket_issue(series, start, end)
        if issue is None:
            gap = window_gap(series, start, end)
            audit["per_gpu_max_sample_gap_s"][gpu] = gap
            if gap > max_gap_s:
                issue = Reason.SAMPLING_GAP_EXCEEDED
            audit["per_gpu_energy_j"][gpu] = trapezoid_window(series, start, end)
        if issue is not None:
            audit["device_issues"][gpu] = [str(issue)]
            add(reasons, issue)
    out = result()
    if not reasons:
        energy = sum(audit["per_gpu_energy_j"].values())
        raw = derived_metrics(energy, len(ids), window)
        out = out.model_copy(update={"power_valid": True, "raw_metrics": raw,
                                     "metrics": {k: round(v, 6) for k, v in raw.items()}})
    return out


def derived_metrics(energy_j: float, gpus: int, window: BenchWindow) -> dict[str, float]:
    """InferenceX's derived keys; whole-deployment energy is the numerator of every ratio."""
    total_power = energy_j / window.integration_duration_s
    tokens = window.total_input_tokens + window.total_output_tokens
    return {
        "avg_power_w": total_power / gpus,
        "avg_total_gpu_power_w": total_power,
        "total_gpu_energy_j": energy_j,
        "joules_per_successful_query": energy_j / window.completed,
        "joules_per_input_token": energy_j / window.total_input_tokens,
        "joules_per_output_token": energy_j / window.total_output_tokens,
        "joules_per_total_token": energy_j / tokens,
    }
