"""``result.json``: the contract between the load generator (measure) and the store (show).

One file per measured point. Written atomically by the load generator; read by
``infx ingest`` / the report. Fields may be added (bump ``schema_version`` when a
field's meaning changes); never rename one.

Every part is typed: ``config`` (:mod:`infx.metrics.run_config`), the ``extra`` sections
(:mod:`infx.metrics.sections`), the metrics, trials and intervals here. The measured window is defined
once, by :meth:`BenchResult.window`, which every reader uses (docs/metrics.md, "The measured window").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from infx.metrics import cipack
from infx.metrics.run_config import RunConfig
from infx.metrics.sections import ResultExtra
from infx.metrics.uncertainty import Estimate

SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")


class Stat(_Model):
    """Distribution summary of one latency metric, in milliseconds (numpy, population std,
    linear-interpolated percentiles). ``None`` when there were no samples."""

    mean: float | None = None
    median: float | None = None
    std: float | None = None
    p90: float | None = None
    p99: float | None = None
    p999: float | None = None
    count: int = Field(0, ge=0)


class Throughput(_Model):
    """Rates over the measured window (warmup excluded)."""

    duration_s: float
    request_per_s: float
    output_tok_per_s: float
    input_tok_per_s: float
    total_tok_per_s: float
    goodput_req_per_s: float | None = None
    # normalised; None when the point's topology is unknown
    gpus_per_server: int | None = None
    output_tok_per_s_per_gpu: float | None = None
    total_tok_per_s_per_gpu: float | None = None
    # added (loadgen): input per GPU, per-node rates (None when the node count is unknown)
    input_tok_per_s_per_gpu: float | None = None
    nodes: int | None = None
    output_tok_per_s_per_node: float | None = None
    total_tok_per_s_per_node: float | None = None


class ErrorAware(_Model):
    """Latency percentiles over *all* measured requests, each failed request counted as
    infinitely slow (ms). ``None`` where the percentile falls on a failure (unbounded)."""

    issued: int
    failed: int
    ttft_p50_ms: float | None = None
    ttft_p90_ms: float | None = None
    ttft_p99_ms: float | None = None
    e2el_p50_ms: float | None = None
    e2el_p90_ms: float | None = None
    e2el_p99_ms: float | None = None


class Metrics(_Model):
    issued: int = Field(ge=0)
    completed: int = Field(ge=0)
    failed: int = Field(ge=0)
    success_rate: float = Field(ge=0, le=1)
    total_input_tokens: int = Field(ge=0)
    total_output_tokens: int = Field(ge=0)
    ttft_ms: Stat
    tpot_ms: Stat
    itl_ms: Stat
    e2el_ms: Stat
    queue_delay_ms: Stat
    throughput: Throughput
    # tok/s/user: 1000 / TPOT at the median and at P90 TPOT
    interactivity_median: float | None = None
    interactivity_p90: float | None = None
    error_classes: dict[str, int] = Field(default_factory=dict)
    # added (loadgen); definitions in docs/metrics.md
    warmup_requests: int = 0
    ttfb_ms: Stat | None = None  # send -> first body byte
    interactivity_e2e_p90: float | None = None  # 1000 / p90(E2EL_ms / output tokens) (InferenceX)
    good_requests: int | None = None  # requests meeting every goodput SLO (None: no SLO given)
    good_fraction: float | None = None  # good_requests / issued (failures count against it)
    error_aware: ErrorAware | None = None
    # reasoning streams only (left out otherwise): send -> first answer token, and the reasoning tokens streamed
    ttfo_ms: Stat | None = Field(None, exclude_if=lambda v: v is None)
    reasoning_tokens: int | None = Field(None, ge=0, exclude_if=lambda v: v is None)


class Check(_Model):
    name: str
    status: Literal["ok", "warn", "fail"]
    detail: str = ""


class SteadyState(_Model):
    """The point's stationary window (``infx.metrics.steady``) and the figures over it."""

    start_ns: int  # window: first kept request's send ...
    end_ns: int  # ... to the last kept request's end
    ramp_up_requests: int  # trimmed before the window
    ramp_down_requests: int  # trimmed after it
    kept_requests: int
    fraction_retained: float
    latency_rho: float | None = None
    latency_p: float | None = None
    throughput_rho: float | None = None
    throughput_p: float | None = None
    trend: bool = False
    text: str = ""
    metrics: Metrics | None = None  # the figures over the window (None: nothing was trimmed)


class Trial(_Model):
    """One trial of a point measured with ``--trials N`` (every trial is kept)."""

    trial: int
    started_at: float
    ended_at: float
    warmup: bool  # this trial was preceded by the point's warmup (only the first one is)
    window_ns: tuple[int, int]
    metrics: Metrics
    checks: list[Check] = Field(default_factory=list)


@dataclass(frozen=True)
class Window:
    """The measured window on the unix clock (seconds): the first measured request's send to the last
    one's end, warmup excluded."""

    start: float
    end: float

    @property
    def duration_s(self) -> float:
        return self.end - self.start


class BenchResult(_Model):
    schema_version: int = SCHEMA_VERSION

    @field_validator("schema_version")
    @classmethod
    def _known_schema(cls, v: int) -> int:
        if not 1 <= v <= SCHEMA_VERSION:
            raise ValueError(f"schema_version {v} is not one this infx reads (1..{SCHEMA_VERSION}): "
                             "written by a newer infx, or not a result.json")
        return v

    @field_validator("ci")
    @classmethod
    def _ci_packed(cls, v: str | None) -> str | None:
        if v is not None:
            cipack.decode(v)
        return v

    @field_serializer("ci")
    def _ci_from_stats(self, _v: str | None) -> str | None:
        return cipack.encode(cipack.pack_stats(self.stats))

    def packed_ci(self) -> bytes | None:
        """The packed summary of ``stats``: from ``ci`` as read from result.json, else packed now."""
        if self.ci is not None and self.stats:
            return cipack.decode(self.ci)
        return cipack.pack_stats(self.stats)
    complete: bool = True
    started_at: float  # unix seconds
    ended_at: float
    config: RunConfig  # the configuration as run (infx.metrics.run_config)
    metrics: Metrics
    checks: list[Check] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)  # infx, server, python...
    point: dict[str, Any] | None = None  # the matrix row (infx.matrix.point.Point.to_row())
    extra: ResultExtra = Field(default_factory=ResultExtra)  # clock, client, telemetry, power, agentic
    # with --trials N, ``metrics`` pools every trial's requests (throughput over the
    # summed trial windows) and ``trials`` keeps each one; ``stats`` holds each headline figure's
    # mean and 95 % interval (across trials, or a within-run bootstrap for a single trial)
    trials: list[Trial] = Field(default_factory=list)
    stats: dict[str, Estimate] = Field(default_factory=dict)
    # the packed interval summary of ``stats`` (infx.metrics.cipack, base64): what the store keeps; rewritten
    # from ``stats`` whenever the result is serialised, so a result.json never carries a stale one
    ci: str | None = None
    stop_reason: str | None = None  # adaptive trials: why no further trial ran
    steady: SteadyState | None = None  # the stationary window (MSER-5) and its figures; None: < 20 requests

    def window(self, trial: Trial | None = None) -> Window:
        """The measured window (of one of ``trials``, when given) on the unix clock: the monotonic window
        the load generator recorded, mapped through its clock anchor. A result without one (agentic
        results from before the anchor, synthetic and hand-made ones) gives the window that ends at
        ``ended_at`` and lasts the measured duration; so does an agentic result that measured nothing."""
        clock = self.extra.clock
        if clock is not None:
            window_ns = clock.window_ns if trial is None else trial.window_ns
            if window_ns is not None:
                return Window(clock.to_unix(window_ns[0]), clock.to_unix(window_ns[1]))
        ended_at, metrics = (self.ended_at, self.metrics) if trial is None else (trial.ended_at, trial.metrics)
        return Window(ended_at - metrics.throughput.duration_s, ended_at)
