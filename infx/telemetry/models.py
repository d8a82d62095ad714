"""Typed telemetry records: the benchmark window, the power validation (InferenceX's sidecar shape), CPU
energy, the engine-state summary (one sample is :class:`infx.engine_metrics.EngineStateSample`) and the
per-point summary stored in ``result.json`` ``extra.telemetry``."""

from __future__ import annotations

from typing import Any, Literal

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

    def result_keys(self) -> dict[str, Any]:
        """The keys InferenceX writes into the aggregated result: schema version, ``power_valid`` as int,
        and (only when valid) the derived metrics rounded 3 dp (``_w``/``_j``) or 6 dp."""
        out: dict[str, Any] = {"power_metric_schema_version": POWER_METRIC_SCHEMA_VERSION,
                               "power_valid": int(self.power_valid)}
        if self.power_valid:
            for key, value in self.raw_metrics.items():
                out[key] = round(value, 3 if key.endswith(("_w", "_j")) else 6)
        return out

    raw_metrics: dict[str, float] = Field(default_factory=dict, exclude=True)


class CpuEnergy(_Model):
    """CPU package energy from RAPL counters over the window (infx's figure; no InferenceX counterpart)."""

    valid: bool
    reasons: list[str] = Field(default_factory=list)
    zones: list[str] = Field(default_factory=list)
    per_zone_energy_j: dict[str, float] = Field(default_factory=dict)
    per_zone_sample_counts: dict[str, int] = Field(default_factory=dict)
    per_zone_max_sample_gap_s: dict[str, float] = Field(default_factory=dict)
    cpu_energy_j: float | None = None
    cpu_avg_power_w: float | None = None
    cpu_joules_per_output_token: float | None = None


class EngineStateSummary(_Model):
    """Engine state over the window: gauges from in-window samples, counters as deltas from the last scrape
    <= start to the first >= end (the scrapes bracket it: one at start, one after the last response)."""

    samples: int
    samples_in_window: int
    running_mean: float | None = None
    running_max: float | None = None
    waiting_mean: float | None = None
    waiting_max: float | None = None
    kv_usage_mean: float | None = None
    kv_usage_max: float | None = None
    preemptions: float | None = None
    prefix_queries: float | None = None
    prefix_hits: float | None = None
    prefix_cache_hit_rate: float | None = None
    prompt_tokens: float | None = None
    generation_tokens: float | None = None


class TelemetrySummary(_Model):
    """``result.json`` ``extra.telemetry``: what the store and the report read."""

    schema_version: int = 1
    gpu_tool: Literal["nvidia-smi", "amd-smi", "none"] = "none"
    expected_gpu_count: int | None = None
    power: dict[str, Any] = Field(default_factory=dict)  # PowerValidation.result_keys()
    power_reasons: list[str] = Field(default_factory=list)
    gpu_energy_j: float | None = None  # unrounded whole-deployment energy over the window (valid power only)
    observed_gpu_count: int = 0
    cpu: CpuEnergy | None = None
    engine: EngineStateSummary | None = None
    theoretical_prefix_hit_rate: float | None = None  # agentic: the trace's ideal prefix reuse
    # issue 21: with --trials N, each trial's J/output token over its own window (None: that window's
    # power was not valid); result.json ``stats`` carries their mean and Student-t interval
    trial_joules_per_output_token: list[float | None] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)  # raw sample files beside the records
