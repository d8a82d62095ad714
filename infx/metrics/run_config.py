"""``result.json``'s ``config``: the configuration a point was measured with, in one of three shapes.

* :class:`BenchSettings`: the load generator's settings as run. ``infx.loadgen.config.BenchConfig`` is
  this model plus the matrix row (recorded as the result's ``point``, not here) and the rules between
  options that a request must satisfy before it runs; a result only records what ran.
* :class:`AgenticRunConfig`: an agentic replay (``scenario: agentic-coding``) with its
  :class:`ReplaySettings` (``infx.agentic.replay.ReplayConfig`` adds its rules the same way) and trace.
* :class:`OtherRunConfig`: any other shape, kept key for key as written: synthetic results
  (``infx.results.synthetic``: ``max_concurrency``, ``synthetic``), hand-made and older files.

The load generator and the replay have always written their settings with fields only ever added, so
those two shapes are strict (an unknown key is an error naming it); a config with neither a
``base_url`` nor the agentic scenario is read tolerantly as the third. Each shape answers the few
questions the readers ask of a config (:attr:`request_rate`, :attr:`endpoint`, :attr:`concurrency`,
:attr:`trace_file`) the way each reader used to answer them from the raw keys.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from infx.records import Endpoint

Arrival = Literal["poisson", "gamma", "constant"]  # an open loop's inter-arrival distribution


class BenchSettings(BaseModel):
    """The load generator's settings, as ``infx bench`` and the sweep ran them."""

    model_config = ConfigDict(extra="forbid")  # request_rate=inf is a closed loop; NaN fails gt=0

    base_url: str
    model: str
    tokenizer: str | None = None  # local dir with tokenizer.json (default: model, if a dir)
    endpoint: Endpoint = "completions"
    # load shape: closed loop (concurrency only) or open loop (request_rate [+ concurrency cap])
    concurrency: int | None = Field(None, ge=1, le=100_000)
    request_rate: float | None = Field(None, gt=0)
    arrival: Arrival = "poisson"
    burstiness: float = Field(1.0, gt=0, le=1e6)
    # how much: a request count or a duration
    num_prompts: int | None = Field(None, ge=1, le=100_000_000)
    duration_s: float | None = Field(None, gt=0, le=1e8)  # finite: the runner turns it into ns
    warmup_requests: int = Field(0, ge=0, le=100_000_000)
    warmup_s: float = Field(0.0, ge=0, le=1e8)
    # trials: ``trials`` runs of the measured phase (warmup before the first only);
    # ``max_trials`` > trials: adaptive, more trials until the 95 % CI half-width of the output
    # throughput is within ``ci_target`` of its mean
    trials: int = Field(1, ge=1, le=1000)
    max_trials: int | None = Field(None, ge=1, le=1000)
    ci_target: float = Field(0.05, gt=0, lt=1)
    seed: int = 0
    # dataset
    dataset: Literal["random", "sharegpt"] = "random"
    dataset_path: str | None = None
    input_len: int = Field(1024, ge=1, le=10_000_000)
    output_len: int | None = Field(None, ge=1, le=10_000_000)  # random: default 128; sharegpt: from the reply
    range_ratio: float = Field(1.0, gt=0, le=1)
    ignore_eos: bool = False
    # sampling temperature sent with every request (None: the server's default; 0: greedy)
    temperature: float | None = Field(None, ge=0, le=100, exclude_if=lambda v: v is None)
    # what to ask the server for
    continuous_usage: bool = True
    token_ids: bool = False
    stall_timeout_s: float = Field(120.0, gt=0, le=1e8)
    total_timeout_s: float | None = Field(1800.0, gt=0, le=1e8)
    # metrics
    goodput: dict[str, float] = Field(default_factory=dict)
    gpus: int | None = Field(None, ge=1)  # per-GPU throughput when known
    nodes: int | None = Field(None, ge=1)
    # execution
    workers: int = Field(1, ge=1, le=1024)
    out_dir: str | None = None
    progress: bool = True

    @property
    def trace_file(self) -> None:
        return None


class ReplaySettings(BaseModel):
    """How the agentic replay ran (defaults follow the reference system's AIPerf flags where it has one)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    concurrency: int = Field(ge=1, description="lanes: concurrent session trees, not requests")
    duration_s: float | None = Field(3600.0, gt=0, description="stop issuing new requests after this")
    max_sessions: int | None = Field(None, ge=1,
                                     description="stop after this many sessions (None: cycle until duration)")
    trajectory_start_min: float = Field(0.25, ge=0, le=1)
    trajectory_start_max: float = Field(0.75, ge=0, le=1)
    idle_gap_cap_s: float = Field(300.0, ge=0)
    time_scale: float = Field(1.0, ge=0, description="multiplies every idle gap (0: back to back)")
    warmup_requests_per_lane: int = Field(10, ge=0)
    error_rate_threshold: float = Field(0.10, ge=0, le=1)
    abort_on_error_rate: bool = Field(True, description="stop early once the measured error rate is over the threshold")
    abort_min_requests: int = Field(20, ge=1, description="...but only after this many measured requests finished")
    drain_timeout_s: float = Field(60.0, ge=0)
    seed: int = 42
    cache_salt: str | None = Field(None, description="prompt salt; None: random per run (no cache hits across runs)")
    max_context: int | None = Field(None, ge=1, description="skip requests whose in + out exceed this")
    subagents: str = Field("parallel", pattern="^(parallel|sequential)$")
    stall_timeout_s: float = Field(120.0, gt=0)
    total_timeout_s: float | None = Field(1800.0, gt=0)


class AgenticRunConfig(BaseModel):
    """An agentic point's configuration: the replay's settings and the trace it replayed."""

    model_config = ConfigDict(extra="forbid")

    scenario: Literal["agentic-coding"] = "agentic-coding"
    replay: ReplaySettings
    trace_file: str | None = None

    @property
    def request_rate(self) -> None:  # lanes replay session trees: no offered request rate
        return None

    @property
    def endpoint(self) -> Endpoint:
        return "chat"

    @property
    def concurrency(self) -> int:
        return self.replay.concurrency


_CONCURRENCY_KEYS = ("max_concurrency", "concurrency", "conc")


class OtherRunConfig(BaseModel):
    """A configuration neither infx measurement wrote (synthetic results, hand-made files): every key kept
    as written, read the way the readers always read them."""

    model_config = ConfigDict(extra="allow")

    def _get(self, key: str) -> Any:
        return (self.model_extra or {}).get(key)

    @property
    def request_rate(self) -> float | None:
        rate = self._get("request_rate")
        return None if rate is None else float(rate)

    @property
    def endpoint(self) -> str:
        endpoint = self._get("endpoint")
        return "completions" if endpoint is None else str(endpoint)

    @property
    def concurrency(self) -> int | None:
        """The first integer of ``max_concurrency``, ``concurrency`` or ``conc``."""
        for key in _CONCURRENCY_KEYS:
            value = self._get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    @property
    def trace_file(self) -> None:
        return None


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        if value.get("scenario") == "agentic-coding":
            return "agentic"
        return "bench" if "base_url" in value else "other"
    if isinstance(value, AgenticRunConfig):
        return "agentic"
    return "bench" if isinstance(value, BenchSettings) else "other"


RunConfig = Annotated[
    Annotated[BenchSettings, Tag("bench")] | Annotated[AgenticRunConfig, Tag("agentic")]
    | Annotated[OtherRunConfig, Tag("other")],
    Discriminator(_shape),
]
