"""The ``telemetry`` table (revision 0004): one row per measured point that carried telemetry
(``result.json`` ``extra.telemetry``, written by the telemetry stage). Energy columns are NULL unless
the point's power was valid; ``power_reasons_json`` says why not. The raw samples stay in the point's
directory (``gpu_metrics.csv``, ``cpu_energy.csv``, ``engine_state.jsonl``, ``power_validation.json``)."""

from __future__ import annotations

import json
from typing import Any

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


def telemetry_row(run_id: str, point_id: str, extra: dict[str, Any]) -> tuple[Any, ...] | None:
    t = extra.get("telemetry")
    if not isinstance(t, dict):
        return None
    power = t.get("power") or {}
    valid = int(power.get("power_valid") or 0)
    cpu = t.get("cpu") or {}
    engine = t.get("engine") or {}
    return (run_id, point_id, t.get("gpu_tool"), t.get("expected_gpu_count"),
            power.get("power_metric_schema_version"), valid, json.dumps(t.get("power_reasons") or []),
            *(power.get(k) if valid else None for k in _POWER),
            (int(bool(cpu.get("valid"))) if cpu else None), cpu.get("cpu_energy_j"), cpu.get("cpu_avg_power_w"),
            cpu.get("cpu_joules_per_output_token"),
            *(engine.get(k) for k in _ENGINE), t.get("theoretical_prefix_hit_rate"), json.dumps(t))
