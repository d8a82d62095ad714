"""Steady state of one measured point (``docs/metrics.md``, "Steady state").

The stationary window is found with MSER-5 (White 1997, as AIPerf's steady-state analyzer): the
per-request latency series (E2EL in send order) is cut into batches of 5; the warm-up truncation
``d`` minimises ``var(batches[d:]) / (k - d)``, at most half the batches cut. The same rule on
the reversed series trims the ramp-down. Inside the window, a Spearman rank correlation of 10
batch means of latency against time, and of 10 time-block output rates, tests for a trend
(warning when |rho| > 0.65 and p < 0.05, AIPerf's thresholds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from infx.metrics.compute import e2el_ms
from infx.metrics.result import SteadyState
from infx.metrics.uncertainty import block_rates, t_cdf
from infx.records import RequestRecord

BATCH = 5
TREND_RHO = 0.65
TREND_P = 0.05


def mser_cut(values: np.ndarray, batch: int = BATCH) -> int:
    """Values to drop from the start (a multiple of ``batch``) by MSER-``batch``."""
    k = values.size // batch
    if k < 4:
        return 0
    means = values[: k * batch].reshape(k, batch).mean(axis=1)
    best, best_d = math.inf, 0
    for d in range(0, k // 2 + 1):
        tail = means[d:]
        score = tail.var() / tail.size
        if score < best:
            best, best_d = score, d
    return best_d * batch


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float] | None:
    """Spearman's rho and its two-sided p (t approximation, n - 2 degrees of freedom)."""
    n = x.size
    if n < 4:
        return None
    rx = np.argsort(np.argsort(x)).astype(float)
    ry = np.argsort(np.argsort(y)).astype(float)
    if rx.std() == 0 or ry.std() == 0:
        return 0.0, 1.0
    rho = float(np.corrcoef(rx, ry)[0, 1])
    if abs(rho) >= 1 - 1e-12:
        return rho, 0.0
    t = rho * math.sqrt((n - 2) / (1 - rho * rho))
    return rho, 2 * (1 - t_cdf(abs(t), n - 2))


def steady_state(records: Sequence[RequestRecord]) -> SteadyState | None:
    """The stationary window of a point's successful measured requests (None: fewer than 20)."""
    ok = sorted((r for r in records if not r.warmup and r.ok), key=lambda r: r.send_ns)
    if len(ok) < 20:
        return None
    lat = np.fromiter((e2el_ms(r) for r in ok), dtype=float, count=len(ok))
    head = mser_cut(lat)
    tail = mser_cut(lat[head:][::-1])
    kept = ok[head: len(ok) - tail]
    start, end = kept[0].send_ns, max(r.end_ns for r in kept)
    out = SteadyState(start_ns=start, end_ns=end, ramp_up_requests=head, ramp_down_requests=tail,
                      kept_requests=len(kept), fraction_retained=len(kept) / len(ok))
    klat = lat[head: len(ok) - tail]
    nb = 10 if klat.size >= 20 else max(4, klat.size // 2)
    means = np.array([b.mean() for b in np.array_split(klat, nb)])
    lr = spearman(np.arange(nb, dtype=float), means)
    chunk_t = np.concatenate([np.asarray(r.chunk_ns, dtype=np.int64) for r in kept])
    chunk_w = np.concatenate([np.asarray(r.chunk_tokens, dtype=float) for r in kept])
    rates = block_rates(chunk_t, chunk_w, (start, end))
    tr = spearman(np.arange(rates.size, dtype=float), rates) if rates.size else None
    trend = False
    notes = []
    if lr is not None:
        out.latency_rho, out.latency_p = lr
        if abs(lr[0]) > TREND_RHO and lr[1] < TREND_P:
            trend = True
            notes.append(f"latency trends {'up' if lr[0] > 0 else 'down'} inside the window (rho {lr[0]:+.2f})")
    if tr is not None:
        out.throughput_rho, out.throughput_p = tr
        if abs(tr[0]) > TREND_RHO and tr[1] < TREND_P:
            trend = True
            notes.append(f"throughput trends {'up' if tr[0] > 0 else 'down'} inside the window (rho {tr[0]:+.2f})")
    out.trend = trend
    trimmed = f"trimmed {head} ramp-up and {tail} ramp-down request(s), {out.fraction_retained:.0%} kept"
    out.text = "; ".join(notes + [trimmed])
    return out
