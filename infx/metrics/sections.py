"""The typed sections of ``result.json``'s ``extra``: what a measurement adds beside its metrics.

* ``agentic`` (:class:`AgenticFigures`): the agentic replay's session figures; the sweep and
  ``infx agentic replay`` read them.
* ``clock`` (:class:`Clock`): the load generator's (and the replay's) clock anchor and measured window;
  every reader of the window goes through :meth:`infx.metrics.result.BenchResult.window`.
* ``client`` (:class:`ClientCost`): the load generator's own CPU cost (the overhead benchmarks read it).
* ``telemetry`` (:class:`TelemetrySummary`): power, CPU energy and engine state over the window; the
  store's ``telemetry`` table and the report read it.
* ``power`` (:class:`PowerFigures`): the energy figures the InferenceX export derives its power keys from.

The keys, their nesting and their order are those infx has always written, and an absent section is
left out (never ``null``), so what infx writes today reads in older infx and the other way round. Each
section has always been written with the same keys, so each is strict (an unknown key is an error that
names it); the one that grew (``telemetry``: ``gpu_energy_j``, ``observed_gpu_count``, the per-trial
energies) reads an older summary with those fields' defaults.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")


class _TelemetryModel(BaseModel):
    """The telemetry stage's models, moved down here unchanged (no bound on floats: they take what its
    integration computes)."""

    model_config = ConfigDict(extra="forbid")


def _absent(value: object) -> bool:
    """``exclude_if`` of an optional key that is left out of result.json rather than written as null."""
    return value is None


def _empty(value: object) -> bool:
    """``exclude_if`` of a list key left out of result.json when empty (older infx reads the file)."""
    return not value


class Clock(_Section):
    """One monotonic and one unix reading taken together (the anchor mapping the records' monotonic
    timestamps to wall time) and the measured window in monotonic ns: the first measured request's send
    to the last one's end, warmup excluded. ``window_ns`` is None when nothing was measured (an agentic
    replay whose every request was warmup)."""

    monotonic_ns: int
    unix_ns: int
    window_ns: tuple[int, int] | None

    def to_unix(self, monotonic_ns: int) -> float:
        """A monotonic reading of this process on the unix clock, in seconds."""
        return (self.unix_ns + (monotonic_ns - self.monotonic_ns)) / 1e9


class ClientCost(_Section):
    """What the load generator itself spent on the measured phase (its own overhead, not the server's)."""

    workers: int
    cpu_s: float
    cpu_fraction_max: float  # the busiest worker's CPU time over its wall time
    chunks: int  # streamed chunks received
    cpu_us_per_chunk: float | None
    cpu_us_per_request: float | None


class PowerFigures(_Section):
    """The energy figures the InferenceX export derives its power keys from (:mod:`infx.interop.power`):
    validity, whole-deployment joules over the measured window, the observed device count, and per-role
    joules of a disaggregated deployment (left out when not measured)."""

    power_valid: bool
    total_gpu_energy_j: float | None = None  # summed over every device, over the measured window
    gpu_count: int | None = None  # observed devices
    prefill_gpu_energy_j: float | None = Field(None, exclude_if=_absent)  # multi-node roles
    decode_gpu_energy_j: float | None = Field(None, exclude_if=_absent)


class CpuEnergy(_TelemetryModel):
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


class EngineStateSummary(_TelemetryModel):
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


class AcceptanceFigures(_TelemetryModel):
    """Speculative-decoding acceptance over one window, from the engine's counter deltas (docs/metrics.md):
    ``acceptance_length`` = 1 + accepted / drafts (the tokens one target step emits), ``acceptance_rate`` =
    accepted / draft tokens, ``per_position[i]`` = accepted at draft position i / drafts."""

    drafts: float
    draft_tokens: float
    accepted: float
    acceptance_length: float | None = None  # None: no drafts in the window
    acceptance_rate: float | None = None  # None: no draft tokens
    per_position: list[float] = Field(default_factory=list)


AcceptanceState = Literal["measured", "not_reported", "invalid", "gauge"]


class RoleAcceptance(_TelemetryModel):
    """One role's acceptance (``server`` for a single engine): over the whole measured window, per trial, and
    the mean and 95 % interval across trials. ``state``: ``measured`` (counter deltas), ``gauge`` (the engine
    exposes only its own mean acceptance length, SGLang), ``not_reported`` (the engine's ``/metrics`` has no
    spec-decode series: never read as 0), ``invalid`` (a counter went backwards inside the window, or no
    scrape brackets it; ``reason`` says which)."""

    role: str = "server"
    state: AcceptanceState
    reason: str = ""
    window: AcceptanceFigures | None = None
    trials: list[AcceptanceFigures | None] = Field(default_factory=list)
    acceptance_length_mean: float | None = None  # across trials (the window's figure with one trial)
    acceptance_length_lo: float | None = None  # 95 % Student-t interval across trials (None: < 2 trials)
    acceptance_length_hi: float | None = None
    acceptance_rate_mean: float | None = None
    acceptance_rate_lo: float | None = None
    acceptance_rate_hi: float | None = None
    gauge_acceptance_length: float | None = None  # state "gauge": the in-window mean of the engine's gauge

    def text(self) -> str:
        """One line: ``AL 2.81 [2.70, 2.93], 60% accepted`` or why there is none."""
        if self.state == "not_reported":
            return "not reported by this engine"
        if self.state == "invalid":
            return f"invalid: {self.reason}"
        if self.state == "gauge":
            al = self.gauge_acceptance_length
            return f"AL {al:.2f} (engine gauge)" if al is not None else "not reported by this engine"
        if self.acceptance_length_mean is None:
            return "no drafts in the window"
        ci = (f" [{self.acceptance_length_lo:.2f}, {self.acceptance_length_hi:.2f}]"
              if self.acceptance_length_lo is not None and self.acceptance_length_hi is not None else "")
        rate = f", {self.acceptance_rate_mean:.0%} of drafted tokens accepted" \
            if self.acceptance_rate_mean is not None else ""
        return f"AL {self.acceptance_length_mean:.2f}{ci}{rate}"


class SpecDecodeLabel(_Section):
    """``extra.spec_decode``: how a speculative-decoding point's acceptance came about. ``acceptance``:
    ``synthetic`` when the rendered launch forces an acceptance length (``synthetic_al``, named by ``via``),
    else ``measured``. Absent for points without speculative decoding."""

    method: str  # the point's spec-decoding (mtp, ngram, draft_model)
    acceptance: Literal["measured", "synthetic"]
    synthetic_al: float | None = None  # None: synthetic, length resolved by the injector's reference table
    via: str | None = None  # vLLM synthetic_acceptance_length | SGLANG_SIMULATE_ACC_LEN | ...

    def text(self) -> str:
        if self.acceptance == "measured":
            return "measured"
        al = f"AL {self.synthetic_al:g}" if self.synthetic_al is not None else "AL from the reference table"
        return f"synthetic ({al}, via {self.via})"


class TelemetrySummary(_TelemetryModel):
    """``extra.telemetry``: what the store and the report read (written by :mod:`infx.telemetry.session`)."""

    schema_version: int = 1
    gpu_tool: Literal["nvidia-smi", "amd-smi", "none"] = "none"
    expected_gpu_count: int | None = None
    # InferenceX's agg power keys (``PowerValidation.result_keys()``): ``power_metric_schema_version``,
    # ``power_valid`` (0/1) and, only when valid, the derived figures
    power: dict[str, int | float] = Field(default_factory=dict)
    power_reasons: list[str] = Field(default_factory=list)
    gpu_energy_j: float | None = None  # unrounded whole-deployment energy over the window (valid power only)
    observed_gpu_count: int = 0
    cpu: CpuEnergy | None = None
    engine: EngineStateSummary | None = None
    theoretical_prefix_hit_rate: float | None = None  # agentic: the trace's ideal prefix reuse
    # with --trials N, each trial's J/output token over its own window (None: that window's
    # power was not valid); result.json ``stats`` carries their mean and Student-t interval
    trial_joules_per_output_token: list[float | None] = Field(default_factory=list)
    # speculative decoding: acceptance per role from the engine's counters (empty: no /metrics scraped)
    acceptance: list[RoleAcceptance] = Field(default_factory=list, exclude_if=_empty)
    warnings: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)  # raw sample files beside the records

    def as_written(self) -> str:
        """The summary as JSON with the keys its result.json holds (a summary read from an older file keeps
        that file's key set): what the store keeps beside its columns."""
        return json.dumps(self.model_dump(mode="json", exclude_unset=True))


class Dist(BaseModel):
    """A distribution's count, extremes, median, mean and P90 (None: no values); the agentic trace
    statistics use it too."""

    model_config = ConfigDict(extra="forbid")

    count: int
    min: float | None = None
    p50: float | None = None
    mean: float | None = None
    p90: float | None = None
    max: float | None = None

    @classmethod
    def of(cls, values: Sequence[float]) -> Dist:
        if not values:
            return cls(count=0)
        a = np.asarray(values, dtype=float)
        return cls(count=len(a), min=float(a.min()), p50=float(np.percentile(a, 50)), mean=float(a.mean()),
                   p90=float(np.percentile(a, 90)), max=float(a.max()))


class ServerPrefixCache(_Section):
    """The engine's prefix-cache token counters over the replay (``/metrics`` before and after)."""

    hits: float
    queries: float
    hit_rate: float | None  # None: no queries


class AgenticFigures(_Section):
    """``extra.agentic``: what only a session replay knows (:mod:`infx.agentic.measure` defines each)."""

    in_flight_high_water: int
    in_flight_high_water_profiled: int
    concurrency: int
    records_total: int
    records_warmup: int
    records_cancelled: int
    error_rate: float
    chat_overhead_tokens: int
    prompt_token_mismatches: int
    skipped_requests: int
    cache_salt: str
    stopped_by: str
    abort_reason: str | None
    mean_in_flight: float | None
    trace_file: str | None
    sessions_started: int
    sessions_completed: int
    sessions_measured: int
    session_requests: Dist
    session_subagent_requests: Dist
    session_duration_s: Dist
    session_busy_s: Dist
    session_max_in_flight: Dist
    agentic_interactivity: Dist
    agentic_interactivity_median: float | None
    agentic_interactivity_p90: float | None
    server_prefix_cache: ServerPrefixCache | None = Field(None, exclude_if=_absent)  # None: no /metrics page


class ResultExtra(_Section):
    """``result.json`` ``extra``: the sections a measurement carries (absent ones are left out)."""

    # declared in the order infx writes them: the agentic replay's figures first, then the load
    # generator's clock and client cost, then what the telemetry stage adds
    agentic: AgenticFigures | None = Field(None, exclude_if=_absent)
    clock: Clock | None = Field(None, exclude_if=_absent)
    client: ClientCost | None = Field(None, exclude_if=_absent)
    telemetry: TelemetrySummary | None = Field(None, exclude_if=_absent)
    power: PowerFigures | None = Field(None, exclude_if=_absent)
    spec_decode: SpecDecodeLabel | None = Field(None, exclude_if=_absent)  # measured or synthetic acceptance
