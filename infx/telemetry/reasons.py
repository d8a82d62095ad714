"""InferenceX's power-validation reason codes (``utils/aggregate_power.py``), in one place.

Reasons are reported in discovery order, each once. The first block are InferenceX's; the RAPL block is
infx's own (CPU package energy has no InferenceX counterpart)."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    # benchmark side
    INVALID_BENCHMARK_RESULT = "invalid_benchmark_result"
    INVALID_BENCHMARK_WINDOW = "invalid_benchmark_window"
    BENCHMARK_DURATION_MISMATCH = "benchmark_duration_mismatch"
    INVALID_SUCCESSFUL_QUERY_COUNT = "invalid_successful_query_count"
    INVALID_INPUT_TOKEN_COUNT = "invalid_input_token_count"
    INVALID_OUTPUT_TOKEN_COUNT = "invalid_output_token_count"
    INVALID_EXPECTED_GPU_COUNT = "invalid_expected_gpu_count"
    INVALID_MAX_SAMPLE_GAP = "invalid_max_sample_gap"
    # telemetry file
    TELEMETRY_FILE_MISSING = "telemetry_file_missing"
    TELEMETRY_FILE_EMPTY = "telemetry_file_empty"
    TELEMETRY_FILE_UNREADABLE = "telemetry_file_unreadable"
    TIMESTAMP_COLUMN_MISSING = "timestamp_column_missing"
    POWER_COLUMN_MISSING = "power_column_missing"
    GPU_IDENTITY_COLUMN_MISSING = "gpu_identity_column_missing"
    # samples
    INVALID_TIMESTAMP_SAMPLE = "invalid_timestamp_sample"
    INVALID_POWER_SAMPLE = "invalid_power_sample"
    GPU_IDENTITY_MISSING = "gpu_identity_missing"
    NO_USABLE_POWER_SAMPLES = "no_usable_power_samples"
    EXPECTED_GPU_COUNT_MISMATCH = "expected_gpu_count_mismatch"
    INSUFFICIENT_POWER_SAMPLES = "insufficient_power_samples"
    BENCHMARK_WINDOW_NOT_BRACKETED = "benchmark_window_not_bracketed"
    SAMPLING_GAP_EXCEEDED = "sampling_gap_exceeded"
    # output side (InferenceX patches an agg JSON; infx writes result.json, so only the internal error applies)
    AGGREGATE_RESULT_MISSING = "aggregate_result_missing"
    AGGREGATE_RESULT_UNWRITABLE = "aggregate_result_unwritable"
    AGGREGATION_INTERNAL_ERROR = "aggregation_internal_error"
    # infx: CPU package energy (RAPL)
    POWERCAP_MISSING = "powercap_missing"
    POWERCAP_UNREADABLE = "powercap_unreadable"
    INSUFFICIENT_ENERGY_SAMPLES = "insufficient_energy_samples"


def add(reasons: list[str], reason: Reason | str) -> None:
    """Append once, keeping discovery order."""
    value = str(reason)
    if value not in reasons:
        reasons.append(value)
