"""``BenchConfig``: the typed configuration of one ``infx bench`` run (its settings are recorded in
result.json as :class:`infx.metrics.run_config.BenchSettings`)."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlsplit

from pydantic import field_validator, model_validator

from infx.bounds import MAX_INT
from infx.metrics.run_config import BenchSettings

#: Lowest open-loop rate: one request in 11.6 days. Below it the arrival schedule's offsets overflow.
MIN_REQUEST_RATE = 1e-6
#: Longest arrival schedule (about 3 years, the bound on --duration too).
MAX_SCHEDULE_S = 1e8


class BenchConfig(BenchSettings):
    """A bench request: the settings a result records (:class:`~infx.metrics.run_config.BenchSettings`),
    the matrix row it measures, and the rules between options it must satisfy before it runs."""

    point: dict[str, Any] | None = None  # the matrix row, if run for a matrix point (result.json ``point``)
    # the first request that stalls ends the run (``Target.stop_on_stall``; a sweep's points): how the run went,
    # not a setting a result records
    stop_on_stall: bool = False

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, v: str) -> str:
        return check_base_url(v)

    @field_validator("seed")
    @classmethod
    def _seed(cls, v: int) -> int:
        if not 0 <= v <= MAX_INT:
            raise ValueError(f"must be between 0 and {MAX_INT}")
        return v

    @field_validator("request_rate")
    @classmethod
    def _rate(cls, v: float | None) -> float | None:
        if v is not None and not math.isinf(v) and v < MIN_REQUEST_RATE:
            raise ValueError(f"must be at least {MIN_REQUEST_RATE:g} requests/s (or inf for a closed loop)")
        return v

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
        if self.request_rate is not None and n is not None and n / self.request_rate > MAX_SCHEDULE_S:
            raise ValueError(f"{n:,} requests at {self.request_rate:g}/s take longer than {MAX_SCHEDULE_S:g} s to "
                             "send: raise --request-rate or lower --num-prompts")
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
