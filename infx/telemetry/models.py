"""Typed telemetry records: the benchmark window and the power validation (InferenceX's sidecar shape).
What a point's telemetry adds to its result (CPU energy, the engine-state summary, the per-point summary
stored in ``result.json`` ``extra.telemetry``) is part of the result contract, in
:mod:`infx.metrics.sections`; one engine-state sample is :class:`infx.engine_metrics.EngineStateSample`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

INTEGRATION_METHOD = "per_device_trapezoidal_with_linear_boundary_interpolation"
POWER_METRIC_SCHEMA_VERSION = 2
MAX_SAMPLE_GAP_S = 3.0
# derived metric keys (InferenceX names and units); 3 dp for *_w / *_j, 6 dp for the rest
POWER_METRIC_KEYS = ("avg_power_w", "avg_total_gpu_power_w", "total_gpu_energy_j", "joules_per_successful_query",
                     "joules_per_input_token", "joules_per_output_token", "joules_per_total_token")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BenchWindow(_Model):
    """The throughput window (unix seconds) and the counts energy is normalised by."""

    start_time_unix: float
    end_time_unix: float
    reported_duration_s: float
    completed: int
    total_input_tokens: int
    total_output_tokens: int

    @property
    def integration_duration_s(self) -> float:
        return self.end_time_unix - self.start_time_unix


class WindowCheck(_Model):
    """The window side of the validation: ``window`` is None when it cannot be integrated at all."""

    window: BenchWindow | None
    reasons: list[str] = Field(default_factory=list)


class PowerValidation(_Model):
    """InferenceX's ``power_validation_<result>.json`` (schema 1) for one point's GPU power."""

    schema_version: int = 1
    power_valid: bool
    reasons: list[str]
    telemetry_source: str
    benchmark_window: dict[str, Any] | None
    integration_method: str = INTEGRATION_METHOD
    expected_gpu_count: int | None
    observed_gpu_count: int
    observed_gpu_ids: list[str]
    per_gpu_sample_counts: dict[str, int]
    per_gpu_max_sample_gap_s: dict[str, float]
    per_gpu_energy_j: dict[str, float]
    device_issues: dict[str, list[str]]
    accumulator_check: dict[str, Any] | None = None
    metrics: dict[str, float] = Field(default_factory=dict)  # 6 dp; empty unless valid

    def result_keys(self) -> dict[str, int | float]:
        """The keys InferenceX writes into the aggregated result: schema version, ``power_valid`` as int,
        and (only when valid) the derived metrics rounded 3 dp (``_w``/``_j``) or 6 dp."""
        out: dict[str, int | float] = {"power_metric_schema_version": POWER_METRIC_SCHEMA_VERSION,
                               "power_valid": int(self.power_valid)}
        if self.power_valid:
            for key, value in self.raw_metrics.items():
                out[key] = round(value, 3 if key.endswith(("_w", "_j")) else 6)
        return out

    raw_metrics: dict[str, float] = Field(default_factory=dict, exclude=True)
