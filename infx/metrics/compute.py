"""Metrics from raw request records. Every formula is written down in ``docs/metrics.md``;
tests in ``tests/metrics`` pin each on hand-computed examples.

Conventions: latencies in milliseconds; distributions with numpy (population std, linear
percentiles); warmup records are excluded; a failed request never contributes a latency
sample but counts in ``issued``, ``failed``, the success rate, ``good_fraction`` and the
error-aware view.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from infx.metrics.result import ErrorAware, Metrics, Stat, Throughput
from infx.records import RequestRecord

NS_PER_MS = 1e6
GOODPUT_KEYS = ("ttft", "tpot", "e2el")
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


def stat(samples: Iterable[float] | np.ndarray) -> Stat:
    a = np.asarray(samples if isinstance(samples, np.ndarray) else list(samples), dtype=np.float64)
    if a.size == 0:
        return Stat()
    p50, p90, p99, p999 = np.percentile(a, PERCENTILES)
    return Stat(
        mean=float(a.mean()),
        median=float(p50),
        std=float(a.std()),
        p90=float(p90),
        p99=float(p99),
        p999=float(p999),
        count=int(a.size),
    )


def percentile_with_failures(values: list[float], q: float) -> float | None:
    """Linear percentile where ``inf`` marks a failure; ``None`` if it lands on one."""
    if not values:
        return None
    v = sorted(values)
    pos = q / 100.0 * (len(v) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if math.isinf(v[hi]):
        return None
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def ttft_ms(r: RequestRecord) -> float | None:
    return None if r.first_token_ns is None else (r.first_token_ns - r.send_ns) / NS_PER_MS


def e2el_ms(r: RequestRecord) -> float:
    return (r.end_ns - r.send_ns) / NS_PER_MS


def tpot_ms(r: RequestRecord) -> float | None:
    """(E2EL - TTFT) / (N - 1); undefined (None) for N <= 1."""
    n = r.output_tokens
    t = ttft_ms(r)
    if n <= 1 or t is None:
        return None
    return (e2el_ms(r) - t) / (n - 1)


def itl_samples_ms(r: RequestRecord) -> np.ndarray:
    """Per-token ITL: chunk j (after the first) carrying k tokens after a gap g from the
    previous chunk contributes k samples of g/k."""
    if len(r.chunk_ns) < 2:
        return np.empty(0)
    gaps = np.diff(np.asarray(r.chunk_ns, dtype=np.int64)).astype(np.float64) / NS_PER_MS
    k = np.asarray(r.chunk_tokens[1:], dtype=np.int64)
    return np.repeat(gaps / k, k)


def parse_goodput(items: Iterable[str]) -> dict[str, float]:
    """``["ttft:500", "tpot:50"]`` (or ``"ttft:500 tpot:50"``/comma separated) -> {key: ms}."""
    out: dict[str, float] = {}
    for item in items:
        for part in item.replace(",", " ").split():
            key, sep, val = part.partition(":")
            key = key.strip().lower()
            if not sep or key not in GOODPUT_KEYS:
                keys = ", ".join(k + ":MS" for k in GOODPUT_KEYS)
                raise ValueError(f"bad goodput SLO {part!r}: expected one of {keys}")
            try:
                ms = float(val)
            except ValueError:
                raise ValueError(f"bad goodput SLO {part!r}: {val!r} is not a number of milliseconds") from None
            if ms <= 0:
                raise ValueError(f"bad goodput SLO {part!r}: must be > 0 ms")
            out[key] = ms
    return out


def is_good(r: RequestRecord, slo: Mapping[str, float]) -> bool:
    if not r.ok:
        return False
    t = ttft_ms(r)
    if "ttft" in slo and (t is None or t > slo["ttft"]):
        return False
    if "tpot" in slo:
        tp = tpot_ms(r)
        if tp is not None and tp > slo["tpot"]:  # <= 1 token: no TPOT, not held against it
            return False
    return not ("e2el" in slo and e2el_ms(r) > slo["e2el"])


def measurement_window(records: Iterable[RequestRecord]) -> tuple[int, int] | None:
    """First send to last end among measured (non-warmup) records."""
    rs = [r for r in records if not r.warmup]
    if not rs:
        return None
    return min(r.send_ns for r in rs), max(r.end_ns for r in rs)


def compute_metrics(
    records: Iterable[RequestRecord],
    *,
    window_ns: tuple[int, int] | None = None,
    goodput: Mapping[str, float] | None = None,
    gpus: int | None = None,
    nodes: int | None = None,
    duration_s: float | None = None,
) -> Metrics:
    """Aggregate records into :class:`Metrics`. ``window_ns`` (monotonic start, end) is the
    throughput denominator; by default first send -> last end of the measured records
    (``duration_s`` overrides it)."""
    all_records = list(records)
    measured = [r for r in all_records if not r.warmup]
    warmup = len(all_records) - len(measured)
    ok = [r for r in measured if r.ok]
    failed = [r for r in measured if not r.ok]
    issued = len(measured)

    ttfts = [t for r in ok if (t := ttft_ms(r)) is not None]
    tpots = [t for r in ok if (t := tpot_ms(r)) is not None]
    e2els = [e2el_ms(r) for r in ok]
    itl_parts = [itl_samples_ms(r) for r in ok]
    itls = np.concatenate(itl_parts) if itl_parts else np.empty(0)
    queue = [(r.send_ns - r.intended_send_ns) / NS_PER_MS for r in measured if r.intended_send_ns is not None]
    ttfbs = [(r.first_byte_ns - r.send_ns) / NS_PER_MS for r in ok if r.first_byte_ns is not None]

    total_in = sum(
        (r.prompt_tokens if r.prompt_tokens is not None else (r.expected_input_tokens or 0)) for r in ok
    )
    total_out = sum(r.output_tokens for r in ok)

    if window_ns is None:
        window_ns = measurement_window(measured)
    if duration_s is None:  # given: the summed windows of several trials (pooled metrics)
        duration_s = max((window_ns[1] - window_ns[0]) / 1e9, 0.0) if window_ns else 0.0

    def rate(x: float) -> float:
        return x / duration_s if duration_s > 0 else 0.0

    good: int | None = None
    if goodput:
        good = sum(1 for r in ok if is_good(r, goodput))
    tput = Throughput(
        duration_s=duration_s,
        request_per_s=rate(len(ok)),
        output_tok_per_s=rate(total_out),
        input_tok_per_s=rate(total_in),
        total_tok_per_s=rate(total_in + total_out),
        goodput_req_per_s=rate(good) if good is not None else None,
    )
    _normalise(tput, gpus, nodes)

    tpot_stat = stat(tpots)
    inter_med = 1000.0 / tpot_stat.median if tpot_stat.median else None
    inter_p90 = 1000.0 / tpot_stat.p90 if tpot_stat.p90 else None
    norm = [e2el_ms(r) / r.output_tokens for r in ok if r.output_tokens >= 1]
    inter_e2e = None
    if norm:
        p90_norm = float(np.percentile(np.asarray(norm), 90))
        inter_e2e = 1000.0 / p90_norm if p90_norm > 0 else None

    return Metrics(
        issued=issued,
        completed=len(ok),
        failed=len(failed),
        success_rate=len(ok) / issued if issued else 0.0,
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        ttft_ms=stat(ttfts),
        tpot_ms=tpot_stat,
        itl_ms=stat(itls),
        e2el_ms=stat(e2els),
        queue_delay_ms=stat(queue),
        throughput=tput,
        interactivity_median=inter_med,
        interactivity_p90=inter_p90,
        error_classes=dict(sorted(Counter(r.error_class for r in failed if r.error_class).items())),
        warmup_requests=warmup,
        ttfb_ms=stat(ttfbs),
        interactivity_e2e_p90=inter_e2e,
        good_requests=good,
        good_fraction=(good / issued if issued else 0.0) if good is not None else None,
        error_aware=_error_aware(measured, issued, len(failed)),
        **reasoning_figures(ok),
    )


def _normalise(tput: Throughput, gpus: int | None, nodes: int | None) -> None:
    """Per-GPU and per-node throughput (``gpus``: GPUs per server; ``nodes``: nodes the server spans)."""
    if gpus:
        tput.gpus_per_server = gpus
        tput.output_tok_per_s_per_gpu = tput.output_tok_per_s / gpus
        tput.total_tok_per_s_per_gpu = tput.total_tok_per_s / gpus
        tput.input_tok_per_s_per_gpu = tput.input_tok_per_s / gpus
    if nodes:
        tput.nodes = nodes
        tput.output_tok_per_s_per_node = tput.output_tok_per_s / nodes
        tput.total_tok_per_s_per_node = tput.total_tok_per_s / nodes


def _error_aware(measured: Sequence[RequestRecord], issued: int, failed: int) -> ErrorAware:
    """Latency percentiles that count a failed request as infinitely slow (it never answered)."""
    inf = math.inf
    ea_ttft = [(t if (t := ttft_ms(r)) is not None else inf) if r.ok else inf for r in measured]
    ea_e2el = [e2el_ms(r) if r.ok else inf for r in measured]
    return ErrorAware(
        issued=issued,
        failed=failed,
        ttft_p50_ms=percentile_with_failures(ea_ttft, 50),
        ttft_p90_ms=percentile_with_failures(ea_ttft, 90),
        ttft_p99_ms=percentile_with_failures(ea_ttft, 99),
        e2el_p50_ms=percentile_with_failures(ea_e2el, 50),
        e2el_p90_ms=percentile_with_failures(ea_e2el, 90),
        e2el_p99_ms=percentile_with_failures(ea_e2el, 99),
    )


def reasoning_figures(ok: Sequence[RequestRecord]) -> dict[str, Any]:
    """TTFO and the reasoning token count, when any request streamed reasoning deltas (else nothing): TTFO is
    send -> first answer (non-reasoning) token; a request without reasoning has TTFO = TTFT; one that reasoned
    but never answered has no TTFO."""
    if all(r.reasoning_tokens is None for r in ok):
        return {}
    answers = [(r.first_content_ns if r.reasoning_tokens is not None else r.first_token_ns, r.send_ns) for r in ok]
    ttfos = [(t - send) / NS_PER_MS for t, send in answers if t is not None]
    return {"ttfo_ms": stat(ttfos), "reasoning_tokens": sum(r.reasoning_tokens or 0 for r in ok)}
