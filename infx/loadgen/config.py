"""``BenchConfig``: the typed configuration of one ``infx bench`` run (recorded in result.json)."""

from __future__ import annotations

import math
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from infx.loadgen.source import Arrival
from infx.records import Endpoint


class BenchConfig(BaseModel):
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
    # trials (issue 21): ``trials`` runs of the measured phase (warmup before the first only);
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
    # what to ask the server for
    continuous_usage: bool = True
    token_ids: bool = False
    stall_timeout_s: float = Field(120.0, gt=0, le=1e8)
    total_timeout_s: float | None = Field(1800.0, gt=0, le=1e8)
    # metrics
    goodput: dict[str, float] = Field(default_factory=dict)
    gpus: int | None = Field(None, ge=1)  # per-GPU throughput when known
    nodes: int | None = Field(None, ge=1)
    point: dict[str, Any] | None = None  # the matrix row, if run for a matrix point
    # execution
    workers: int = Field(1, ge=1, le=1024)
    out_dir: str | None = None
    progress: bool = True

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, v: str) -> str:
        return check_base_url(v)

    @model_validator(mode="after")
    def _shape(self) -> BenchConfig:
        if self.request_rate is not None and math.isinf(self.request_rate):
            self.request_rate = None
        if self.request_rate is None and self.concurrency is None:
            raise ValueError("give --concurrency (closed loop) or --request-rate (open loop)")
        if self.num_prompts is not None and self.duration_s is not None:
            raise ValueError("give --num-prompts or --duration, not both")
        if self.warmup_requests and self.warmup_s:
            raise ValueError("warmup is a request count or a number of seconds, not both")
        if self.dataset == "sharegpt" and not self.dataset_path:
            raise ValueError("the sharegpt dataset needs --dataset-path")
        if self.max_trials is not None and self.max_trials < self.trials:
            raise ValueError(f"--max-trials {self.max_trials} is below --trials {self.trials}")
        if self.workers > 1 and self.concurrency is not None and self.concurrency < self.workers:
            raise ValueError(f"--workers {self.workers} needs --concurrency >= {self.workers} "
                             "(lanes are sharded over workers)")
        n = self.effective_num_prompts
        if n is not None and n * self.input_len > MAX_PROMPT_TOKENS:  # every prompt is built before the run
            raise ValueError(f"{n:,} prompts of {self.input_len:,} tokens are more than {MAX_PROMPT_TOKENS:,} prompt "
                             "tokens to build: lower --num-prompts, --concurrency or --input-len")
        return self

    @property
    def open_loop(self) -> bool:
        return self.request_rate is not None

    @property
    def effective_num_prompts(self) -> int | None:
        if self.duration_s is not None:
            return None
        if self.num_prompts is not None:
            return self.num_prompts
        return 10 * (self.concurrency or 10)  # the reference client's CONC*10


#: Most prompt tokens one bench builds up front (about 1 GiB of token ids).
MAX_PROMPT_TOKENS = 2**27


def check_base_url(url: str) -> str:
    """``url`` if it is an http(s) server root with a host (and a numeric port, if any); else
    ``ValueError`` saying what is wrong."""
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise ValueError(f"bad --base-url {url!r}: it holds a space or control character")
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError for a non-numeric or out-of-range port
    except ValueError as exc:
        raise ValueError(f"bad --base-url {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"bad --base-url {url!r}: give http://HOST[:PORT] or https://HOST[:PORT]")
    if not parts.hostname:
        raise ValueError(f"bad --base-url {url!r}: no host")
    if port == 0:
        raise ValueError(f"bad --base-url {url!r}: port 0")
    return url


def parse_warmup(text: str | None) -> tuple[int, float]:
    """``"16"`` -> 16 requests; ``"5s"`` / ``"2.5s"`` -> seconds. Returns (requests, seconds)."""
    if text is None or text.strip() in ("", "0"):
        return 0, 0.0
    t = text.strip().lower()
    if t.endswith("s"):
        value = float(t[:-1])
        if not math.isfinite(value) or value < 0:
            raise ValueError("warmup seconds must be a finite number >= 0")
        return 0, value
    if len(t) > 12:
        raise ValueError("warmup count too large")
    count = int(t)
    if count < 0:
        raise ValueError("warmup count must be >= 0")
    return count, 0.0
