"""Energy figures a measured point may carry, and the InferenceX power keys made from them.

The telemetry stage stores a point's integrated energy in its result as ``extra.power``
(:class:`~infx.metrics.sections.PowerFigures`: the validity flag, the whole-deployment joules over the
measured window, the device count, per-role joules on multi-node points). The agg keys are derived from those
figures exactly as InferenceX derives them (§2.5, §2.7): whole-deployment energy over the window,
every ratio with whole-deployment energy, 3 dp for ``_w``/``_j`` keys, 6 dp for the rest.
"""

from __future__ import annotations

import math
from typing import Any

from infx.interop.formats import POWER_SCHEMA_VERSION
from infx.metrics.sections import PowerFigures


def _rounded(metrics: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3 if k.endswith(("_w", "_j")) else 6) for k, v in metrics.items()}


def power_keys(power: PowerFigures | None, *, start_unix: float, end_unix: float, completed: int,
               input_tokens: int, output_tokens: int, prefill_gpus: int | None = None,
               decode_gpus: int | None = None) -> dict[str, Any]:
    """``power_metric_schema_version``, ``power_valid`` (int) and, when valid, the derived keys.
    Without usable figures the point is published as InferenceX publishes missing telemetry:
    ``power_valid: 0`` and no energy keys."""
    out: dict[str, Any] = {"power_metric_schema_version": POWER_SCHEMA_VERSION, "power_valid": 0}
    if (power is None or not power.power_valid or power.total_gpu_energy_j is None or not power.gpu_count
            or min(completed, input_tokens, output_tokens) <= 0 or end_unix <= start_unix):
        return out
    energy, duration = power.total_gpu_energy_j, end_unix - start_unix
    metrics = {
        "avg_power_w": energy / duration / power.gpu_count,
        "avg_total_gpu_power_w": energy / duration,
        "total_gpu_energy_j": energy,
        "joules_per_successful_query": energy / completed,
        "joules_per_input_token": energy / input_tokens,
        "joules_per_output_token": energy / output_tokens,
        "joules_per_total_token": energy / (input_tokens + output_tokens),
    }
    if prefill_gpus and power.prefill_gpu_energy_j is not None:
        metrics["prefill_gpu_energy_j"] = power.prefill_gpu_energy_j
        metrics["prefill_avg_power_w"] = power.prefill_gpu_energy_j / duration / prefill_gpus
        metrics["prefill_joules_per_input_token"] = power.prefill_gpu_energy_j / input_tokens
    if decode_gpus and power.decode_gpu_energy_j is not None:
        metrics["decode_gpu_energy_j"] = power.decode_gpu_energy_j
        metrics["decode_avg_power_w"] = power.decode_gpu_energy_j / duration / decode_gpus
        metrics["decode_joules_per_output_token"] = power.decode_gpu_energy_j / output_tokens
    if not all(math.isfinite(v) for v in metrics.values()):
        return out
    out["power_valid"] = 1
    out.update(_rounded(metrics))
    return out
