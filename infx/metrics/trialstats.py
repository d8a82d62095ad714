"""Per-point uncertainty of a bench: the headline figures of a :class:`Metrics`, their within-run
bootstrap (one trial) and their Student-t intervals across trials (``docs/metrics.md``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from infx.metrics.compute import e2el_ms, itl_samples_ms, tpot_ms, ttft_ms
from infx.metrics.result import Metrics
from infx.metrics.uncertainty import (
    TAIL_MINIMUM,
    Estimate,
    across_trials,
    block_rates,
    bootstrap_mean,
    bootstrap_percentiles,
)
from infx.records import RequestRecord

_LATENCY = ("ttft", "tpot", "itl", "e2el")
_STATS = (("median", 50.0), ("p90", 90.0), ("p99", 99.0))
HEADLINE_THROUGHPUT = ("output_tok_per_s", "total_tok_per_s", "request_per_s")


def headline_names() -> list[str]:
    return [*HEADLINE_THROUGHPUT, "interactivity_median", "interactivity_p90",
            *(f"{m}_{s}" for m in _LATENCY for s, _ in _STATS)]


def within_run(records: Sequence[RequestRecord], values: dict[str, float | None], window_ns: tuple[int, int],
               *, seed: int = 0) -> dict[str, Estimate]:
    """Within-run intervals of one trial's headline ``values``: requests resampled for latency
    percentiles (and interactivity, from TPOT), time blocks resampled for throughput."""
    ok = [r for r in records if not r.warmup and r.ok]
    out: dict[str, Estimate] = {}
    arrays = {
        "ttft": np.fromiter((t for r in ok if (t := ttft_ms(r)) is not None), dtype=float),
        "tpot": np.fromiter((t for r in ok if (t := tpot_ms(r)) is not None), dtype=float),
        "e2el": np.fromiter((e2el_ms(r) for r in ok), dtype=float),
    }
    parts = [itl_samples_ms(r) for r in ok]
    arrays["itl"] = np.concatenate(parts) if parts else np.empty(0)
    qs = [q for _, q in _STATS]
    for k, (name, a) in enumerate(arrays.items()):
        if a.size < 2:
            continue
        lo, hi, sd = bootstrap_percentiles(a, qs, seed=seed + k)
        for (stat, _), low, high, s in zip(_STATS, lo, hi, sd, strict=True):
            key = f"{name}_{stat}"
            v = values.get(key)
            if v is None:
                continue
            tail = None if stat == "median" else stat
            out[key] = Estimate(mean=v, lo=float(min(low, v)), hi=float(max(high, v)), n=1, method="within-run",
                                se=float(s), samples=int(a.size),
                                certified=None if tail is None else a.size >= TAIL_MINIMUM[tail])
            if name == "tpot" and stat in ("median", "p90"):
                ikey = f"interactivity_{stat}"
                iv = values.get(ikey)
                if iv is not None and low > 0 and high > 0:
                    out[ikey] = Estimate(mean=iv, lo=float(min(1000.0 / high, iv)), hi=float(max(1000.0 / low, iv)),
                                         n=1, method="within-run", se=float(iv * s / v) if v else None,
                                         samples=int(a.size),
                                         certified=None if tail is None else a.size >= TAIL_MINIMUM[tail])
    # throughput: output tokens at their chunk times, input tokens at each request's first token
    if ok:
        chunk_t = np.concatenate([np.asarray(r.chunk_ns, dtype=np.int64) for r in ok])
        chunk_w = np.concatenate([np.asarray(r.chunk_tokens, dtype=float) for r in ok])
        first = np.fromiter(((r.first_token_ns or r.end_ns) for r in ok), dtype=np.int64)
        inputs = np.fromiter(((r.prompt_tokens if r.prompt_tokens is not None else (r.expected_input_tokens or 0))
                              for r in ok), dtype=float)
        ends = np.fromiter((r.end_ns for r in ok), dtype=np.int64)
        streams = {
            "output_tok_per_s": (chunk_t, chunk_w),
            "total_tok_per_s": (np.concatenate([chunk_t, first]), np.concatenate([chunk_w, inputs])),
            "request_per_s": (ends, np.ones(ends.size)),
        }
        for k, (key, (t, w)) in enumerate(streams.items()):
            v = values.get(key)
            rates = block_rates(t, w, window_ns)
            boot = bootstrap_mean(rates, seed=seed + 100 + k) if v else None
            if not v or boot is None or not rates.mean():
                continue
            scale = v / float(rates.mean())  # block attribution differs slightly from the headline's
            b_lo, b_hi, b_sd = (x * scale for x in boot)
            out[key] = Estimate(mean=v, lo=min(b_lo, v), hi=max(b_hi, v), n=1, method="within-run", se=b_sd,
                                samples=int(rates.size))
    return out


def headline_values(metrics: Metrics) -> dict[str, float | None]:
    """The headline figures of one :class:`~infx.metrics.result.Metrics`."""
    t = metrics.throughput
    out: dict[str, float | None] = {k: getattr(t, k) for k in HEADLINE_THROUGHPUT}
    out["interactivity_median"] = metrics.interactivity_median
    out["interactivity_p90"] = metrics.interactivity_p90
    for m in _LATENCY:
        s = getattr(metrics, f"{m}_ms")
        for stat, _ in _STATS:
            out[f"{m}_{stat}"] = getattr(s, stat)
    return out


def sample_counts(metrics: Metrics) -> dict[str, int]:
    out = {f"{m}_{s}": getattr(metrics, f"{m}_ms").count for m in _LATENCY for s, _ in _STATS}
    out["interactivity_median"] = out["interactivity_p90"] = metrics.tpot_ms.count
    return out


def trial_estimates(per_trial: Sequence[dict[str, float | None]], counts: Sequence[dict[str, int]],
                    single: Callable[[], dict[str, Estimate]] | None = None) -> dict[str, Estimate]:
    """Every headline figure across trials (Student-t); with one trial, ``single()`` (the
    within-run bootstrap) supplies the intervals."""
    if len(per_trial) == 1 and single is not None:
        return single()
    out: dict[str, Estimate] = {}
    for key in headline_names():
        tail = next((s for s in TAIL_MINIMUM if key.endswith("_" + s)), None)
        n_min = min((c.get(key, 0) for c in counts), default=0) if key in counts[0] else None
        est = across_trials([t.get(key) for t in per_trial], samples=n_min, tail=tail)
        if est is not None:
            out[key] = est
    return out
