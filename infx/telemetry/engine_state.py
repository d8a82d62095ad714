"""The engine's own state over time: its Prometheus ``/metrics`` page scraped once a second and parsed
with ``prometheus_client``'s text parser. vLLM and SGLang names map onto one :class:`EngineStateSample`;
values are summed over label sets (engines, models), KV usage is the max (a fraction, 0..1)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from infx.atomic import write_text
from infx.telemetry.models import BenchWindow, EngineStateSample, EngineStateSummary

# sample name -> field. vLLM v1 (0.8+) and older V0 spellings; SGLang (``sglang:cached_tokens_total`` is
# its prefix-cache hit counter in tokens, so queries are its prompt tokens).
SUMMED: dict[str, str] = {
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:num_preemptions_total": "preemptions",
    "vllm:prefix_cache_queries_total": "prefix_queries",
    "vllm:prefix_cache_hits_total": "prefix_hits",
    "vllm:gpu_prefix_cache_queries_total": "prefix_queries",
    "vllm:gpu_prefix_cache_hits_total": "prefix_hits",
    "vllm:prompt_tokens_total": "prompt_tokens",
    "vllm:generation_tokens_total": "generation_tokens",
    "sglang:num_running_reqs": "running",
    "sglang:num_queue_reqs": "waiting",
    "sglang:num_retracted_reqs": "preemptions",
    "sglang:cached_tokens_total": "prefix_hits",
    "sglang:prompt_tokens_total": "prompt_tokens",
    "sglang:generation_tokens_total": "generation_tokens",
}
MAXED: dict[str, str] = {
    "vllm:kv_cache_usage_perc": "kv_usage",
    "vllm:gpu_cache_usage_perc": "kv_usage",
    "sglang:token_usage": "kv_usage",
}
COUNTERS = ("preemptions", "prefix_queries", "prefix_hits", "prompt_tokens", "generation_tokens")
ENGINE_STATE_FILE = "engine_state.jsonl"


def parse_metrics(text: str, t: float) -> EngineStateSample:
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            field = SUMMED.get(s.name)
            if field is not None:
                values[field] = values.get(field, 0.0) + float(s.value)
                continue
            field = MAXED.get(s.name)
            if field is not None:
                values[field] = max(values.get(field, float("-inf")), float(s.value))
    if "prefix_queries" not in values and "prefix_hits" in values and "sglang:cached_tokens_total" in text:
        values["prefix_queries"] = values.get("prompt_tokens", 0.0)
    return EngineStateSample(t=t, **values)


class EngineStateScraper:
    """A daemon thread: one scrape at start, one per interval, one at stop (so the window is bracketed)."""

    def __init__(self, url: str, out: Path, interval_s: float = 1.0, timeout_s: float = 2.0):
        self.url, self.out, self.interval_s, self.timeout_s = url, out, interval_s, timeout_s
        self.samples: list[EngineStateSample] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="infx-engine-state", daemon=True)

    def scrape(self) -> None:
        t = time.time()
        try:
            with urllib.request.urlopen(self.url, timeout=self.timeout_s) as resp:  # noqa: S310 - the engine
                text = resp.read().decode("utf-8", errors="replace")
            self.samples.append(parse_metrics(text, t))
        except (OSError, ValueError):
            self.errors += 1

    def start(self) -> None:
        self.scrape()
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.scrape()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.scrape()
        write_samples(self.out, self.samples)


def write_samples(path: Path, samples: list[EngineStateSample]) -> None:
    write_text(path, "".join(s.model_dump_json(exclude_none=True) + "\n" for s in samples))


def read_samples(path: Path) -> list[EngineStateSample]:
    return [EngineStateSample.model_validate(json.loads(line)) for line in path.read_text().splitlines() if line]


def summarise(samples: list[EngineStateSample], window: BenchWindow | None) -> EngineStateSummary:
    samples = sorted(samples, key=lambda s: s.t)
    if window is None:
        return EngineStateSummary(samples=len(samples), samples_in_window=0)
    start, end = window.start_time_unix, window.end_time_unix
    inside = [s for s in samples if start <= s.t <= end]
    out: dict[str, float | None] = {}
    for name in ("running", "waiting", "kv_usage"):
        vals = [getattr(s, name) for s in inside if getattr(s, name) is not None]
        out[f"{name}_mean"] = sum(vals) / len(vals) if vals else None
        out[f"{name}_max"] = max(vals) if vals else None
    for name in COUNTERS:
        out[name] = counter_delta([(s.t, getattr(s, name)) for s in samples if getattr(s, name) is not None],
                                  start, end)
    q, h = out["prefix_queries"], out["prefix_hits"]
    out["prefix_cache_hit_rate"] = h / q if (q is not None and h is not None and q > 0) else None
    return EngineStateSummary(samples=len(samples), samples_in_window=len(inside), **out)


def counter_delta(series: list[tuple[float, float]], start: float, end: float) -> float | None:
    """Counter increase from the last scrape <= start to the first scrape >= end (None unless both exist).
    No load runs after the window, so the end is exact; the start may include up to one interval of the
    warmup's tail."""
    before = [v for t, v in series if t <= start]
    after = [v for t, v in series if t >= end]
    if not before or not after:
        return None
    return after[0] - before[-1]
