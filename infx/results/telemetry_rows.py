"""The ``telemetry`` table (revision 0004): one row per measured point that carried telemetry
(``result.json`` ``extra.telemetry``, written by the telemetry stage). Energy columns are NULL unless
the point's power was valid; ``power_reasons_json`` says why not; ``summary_json`` is the summary with
the keys its result.json holds. The raw samples stay in the point's
directory (``gpu_metrics.csv``, ``cpu_energy.csv``, ``engine_state.jsonl``, ``power_validation.json``)."""

from __future__ import annotations

import json
from typing import Any

from infx.metrics.sections import TelemetrySummary

#: The order of :func:`telemetry_row`'s values: the ``telemetry`` table's columns (a test keeps them equal).
COLUMNS = (
    "run_id", "point_id", "gpu_tool", "expected_gpu_count", "power_metric_schema_version", "power_valid",
    "power_reasons_json", "total_gpu_energy_j", "avg_total_gpu_power_w", "avg_power_w",
    "joules_per_successful_query", "joules_per_input_token", "joules_per_output_token", "joules_per_total_token",
    "cpu_energy_valid", "cpu_energy_j", "cpu_avg_power_w", "cpu_joules_per_output_token",
    "running_mean", "running_max", "waiting_mean", "waiting_max", "kv_usage_mean", "kv_usage_max", "preemptions",
    "prefix_cache_hit_rate", "theoretical_prefix_hit_rate", "summary_json",
)
_POWER = ("total_gpu_energy_j", "avg_total_gpu_power_w", "avg_power_w", "joules_per_successful_query",
          "joules_per_input_token", "joules_per_output_token", "joules_per_total_token")
_ENGINE = ("running_mean", "running_max", "waiting_mean", "waiting_max", "kv_usage_mean", "kv_usage_max",
           "preemptions", "prefix_cache_hit_rate")


def telemetry_row(run_id: str, point_id: str, t: TelemetrySummary | None) -> tuple[Any, ...] | None:
    """The ``telemetry`` row of a point whose result carries ``extra.telemetry`` (None: it has none)."""
    if t is None:
        return None
    power = t.power
    valid = int(power.get("power_valid") or 0)
    cpu, engine = t.cpu, t.engine
    cpu_cols = (None,) * 4 if cpu is None else (int(cpu.valid), cpu.cpu_energy_j, cpu.cpu_avg_power_w,
                                                 cpu.cpu_joules_per_output_token)
    return (run_id, point_id, t.gpu_tool, t.expected_gpu_count,
            power.get("power_metric_schema_version"), valid, json.dumps(t.power_reasons),
            *(power.get(k) if valid else None for k in _POWER), *cpu_cols,
            *(None if engine is None else getattr(engine, k) for k in _ENGINE), t.theoretical_prefix_hit_rate,
            t.as_written())
