"""The engine's Prometheus ``/metrics`` page, scraped once and parsed with ``prometheus_client``'s text
parser into one :class:`EngineStateSample`. vLLM and SGLang names map onto the same fields; values are
summed over label sets (engines, models), KV usage is the max (a fraction, 0..1).

It sits low in the stack because several stages read the same page: the telemetry scrape loop (engine
state over time), the agentic replay (prefix-cache hit rate over a run) and the live progress display.
"""

from __future__ import annotations

import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, ConfigDict


class EngineStateSample(BaseModel):
    """One scrape of the engine's ``/metrics`` (summed over label sets; ``kv_usage`` is the max, 0..1)."""

    model_config = ConfigDict(extra="forbid")

    t: float  # unix seconds when the scrape was sent, the same wall clock as the load generator's window
    t_done: float | None = None  # when the page had arrived: the engine served it between t and t_done
    running: float | None = None
    waiting: float | None = None
    kv_usage: float | None = None
    preemptions: float | None = None  # counter
    prefix_queries: float | None = None  # counter, tokens
    prefix_hits: float | None = None  # counter, tokens
    prompt_tokens: float | None = None  # counter
    generation_tokens: float | None = None  # counter
    requests_finished: float | None = None  # counter (the live req/s of the progress display)
    # speculative decoding (vLLM v1 counters; absent when the engine runs no drafter or has no such series)
    spec_drafts: float | None = None  # counter: drafting steps
    spec_draft_tokens: float | None = None  # counter: tokens proposed
    spec_accepted: float | None = None  # counter: tokens accepted
    spec_accepted_per_pos: dict[str, float] | None = None  # counter per draft position ("0", "1", ...)
    spec_accept_length: float | None = None  # SGLang's gauge: its own mean acceptance length (not a counter)


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
    "vllm:request_success_total": "requests_finished",
    "vllm:spec_decode_num_drafts_total": "spec_drafts",
    "vllm:spec_decode_num_draft_tokens_total": "spec_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "spec_accepted",
    "sglang:num_running_reqs": "running",
    "sglang:num_queue_reqs": "waiting",
    "sglang:num_retracted_reqs": "preemptions",
    "sglang:cached_tokens_total": "prefix_hits",
    "sglang:prompt_tokens_total": "prompt_tokens",
    "sglang:generation_tokens_total": "generation_tokens",
    "sglang:num_requests_total": "requests_finished",
}
MAXED: dict[str, str] = {
    "vllm:kv_cache_usage_perc": "kv_usage",
    "vllm:gpu_cache_usage_perc": "kv_usage",
    "sglang:token_usage": "kv_usage",
    "sglang:spec_accept_length": "spec_accept_length",
}
COUNTERS = ("preemptions", "prefix_queries", "prefix_hits", "prompt_tokens", "generation_tokens")
#: the speculative-decoding counters (and the series each is read from): acceptance is their delta over a window
SPEC_COUNTERS: dict[str, str] = {"spec_drafts": "vllm:spec_decode_num_drafts_total",
                                 "spec_draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
                                 "spec_accepted": "vllm:spec_decode_num_accepted_tokens_total"}
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


_WANTED = (*SUMMED, *MAXED, PER_POS)
_WANTED_TYPES = tuple(f"# TYPE {n}" for n in _WANTED) + tuple(f"# TYPE {n.removesuffix('_total')} " for n in _WANTED)


def wanted_lines(text: str) -> str:
    """Only the series (and their ``# TYPE`` lines) the sample needs: vLLM's page is mostly histogram
    buckets, and parsing all of it once a second costs more CPU than everything else telemetry does."""
    return "".join(line + "\n" for line in text.splitlines()
                   if line.startswith(_WANTED) or line.startswith(_WANTED_TYPES))


def parse_metrics(text: str, t: float) -> EngineStateSample:
    values: dict[str, float] = {}
    per_pos: dict[str, float] = {}
    for family in text_string_to_metric_families(wanted_lines(text)):
        for s in family.samples:
            field = SUMMED.get(s.name)
            if field is not None:
                values[field] = values.get(field, 0.0) + float(s.value)
                continue
            field = MAXED.get(s.name)
            if field is not None:
                values[field] = max(values.get(field, float("-inf")), float(s.value))
            elif s.name == PER_POS:
                pos = s.labels.get("position", "")
                per_pos[pos] = per_pos.get(pos, 0.0) + float(s.value)
    if "prefix_queries" not in values and "prefix_hits" in values and "sglang:cached_tokens_total" in text:
        values["prefix_queries"] = values.get("prompt_tokens", 0.0)
    return EngineStateSample(t=t, **values, spec_accepted_per_pos=per_pos or None)


def scrape_once(url: str, timeout_s: float) -> EngineStateSample | None:
    t = time.time()
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            text = resp.read().decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None
    done = time.time()
    try:
        sample = parse_metrics(text, t)
    except ValueError:
        return None
    sample.t_done = done
    return sample
