"""SLO tiers, goodput against a tier, and the online saturation detector (definitions in
``docs/metrics.md``, "SLO tiers and capacity").

A tier is a set of percentile ceilings, ``{ttft_p95_ms: 500, tpot_p95_ms: 30}``: key
``<metric>_<stat>_ms`` with metric ttft | tpot | itl | e2el and stat median | p50 | p90 | p95 | p99.
A point meets the tier when every ceiling holds for the error-aware percentile: a failed or
timed-out request counts as infinitely slow (a miss), so failures can never make a point pass.
Goodput is the fraction of issued requests that meet every ceiling as a per-request bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from infx.catalog.slo import SLO_METRICS, SLO_STATS, check_tier, parse_slo_key  # noqa: F401 - re-exported
from infx.metrics.compute import e2el_ms, tpot_ms, ttft_ms
from infx.records import RequestRecord


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def parse_tier_text(text: str) -> dict[str, float]:
    """``"ttft_p95_ms:500,tpot_p95_ms:30"`` (the command-line form) -> a validated tier."""
    tier: dict[str, float] = {}
    for part in text.replace(",", " ").split():
        key, sep, val = part.partition(":")
        if not sep:
            raise ValueError(f"bad SLO {part!r}: expected KEY:MS, e.g. ttft_p95_ms:500")
        try:
            tier[key.strip()] = float(val)
        except ValueError:
            raise ValueError(f"bad SLO {part!r}: {val!r} is not a number of milliseconds") from None
    return check_tier(tier)


class Ceiling(_Model):
    key: str
    limit_ms: float
    value_ms: float | None  # error-aware percentile (None: it falls on a failed request)
    met: bool


class TierVerdict(_Model):
    """Whether one measured point meets a tier."""

    met: bool
    ceilings: list[Ceiling]
    issued: int
    good: int  # requests meeting every ceiling as a per-request bound (failures: never)
    goodput_fraction: float
    text: str


def _per_request(r: RequestRecord, metric: str) -> float:
    """A request's value of ``metric`` (ms); ``inf`` for a failure (a miss)."""
    if not r.ok:
        return math.inf
    if metric == "ttft":
        v = ttft_ms(r)
    elif metric == "tpot":
        v = tpot_ms(r)
        if v is None:  # one token: no TPOT, not held against it
            return 0.0
    elif metric == "e2el":
        v = e2el_ms(r)
    else:  # itl: the request's worst gap per token
        if len(r.chunk_ns) < 2:
            return 0.0
        gaps = np.diff(np.asarray(r.chunk_ns, dtype=np.int64)) / 1e6 / np.asarray(r.chunk_tokens[1:], dtype=float)
        v = float(gaps.max())
    return math.inf if v is None else float(v)


def evaluate_tier(records: Sequence[RequestRecord], tier: Mapping[str, float]) -> TierVerdict:
    """The tier against a point's measured records (warmup excluded)."""
    measured = [r for r in records if not r.warmup]
    issued = len(measured)
    ceilings: list[Ceiling] = []
    per_req_ok = np.ones(issued, dtype=bool)
    for key, limit in tier.items():
        metric, q = parse_slo_key(key)
        values = np.fromiter((_per_request(r, metric) for r in measured), dtype=float, count=issued)
        per_req_ok &= values <= limit
        value: float | None
        if issued == 0:
            value = None
        else:
            srt = np.sort(values)
            pos = q / 100 * (issued - 1)
            lo, hi = math.floor(pos), math.ceil(pos)
            value = None if math.isinf(srt[hi]) else float(srt[lo] + (srt[hi] - srt[lo]) * (pos - lo))
        ceilings.append(Ceiling(key=key, limit_ms=limit, value_ms=value, met=value is not None and value <= limit))
    good = int(per_req_ok.sum())
    met = issued > 0 and all(c.met for c in ceilings)
    parts = [f"{c.key} {'failed request' if c.value_ms is None else f'{c.value_ms:,.1f}'} "
             f"{'<=' if c.met else '>'} {c.limit_ms:g}" for c in ceilings]
    return TierVerdict(met=met, ceilings=ceilings, issued=issued, good=good,
                       goodput_fraction=good / issued if issued else 0.0,
                       text=("meets" if met else "misses") + " the tier: " + ", ".join(parts))


# --------------------------------------------------------------------------- saturation


class Saturation(_Model):
    saturated: bool
    inflight_slope: float | None  # requests in flight per second
    ttft_slope: float | None  # ms of TTFT per second of the run
    text: str


def _slope(t: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """OLS slope and its standard error."""
    n = t.size
    tc = t - t.mean()
    sxx = float((tc * tc).sum())
    if n < 3 or sxx == 0:
        return 0.0, math.inf
    b = float((tc * (y - y.mean())).sum() / sxx)
    resid = y - y.mean() - b * tc
    se = math.sqrt(float((resid * resid).sum()) / (n - 2) / sxx)
    return b, se


def saturation(records: Sequence[RequestRecord], *, closed_loop: bool = True, confidence: float = 0.95,
               min_requests: int = 8, min_rise_ms: float = 250.0) -> Saturation:
    """GuideLLM-style over-saturation test on one point: the slopes (OLS over the run, by send time)
    of the requests in flight at each send and of TTFT are both positive, each beyond its
    confidence margin: the queue keeps growing and waiting keeps getting longer. A closed loop
    holds the client's in-flight count fixed (the queue is inside the server), so there only the
    TTFT slope is tested. As GuideLLM's ``minimum_ttft``, a rise that is small in absolute terms
    (under ``min_rise_ms`` across the run, or under the first quarter's median TTFT) never counts:
    a busy machine's jitter is not a queue."""
    from infx.metrics.uncertainty import t_critical

    rs = sorted((r for r in records if not r.warmup), key=lambda r: r.send_ns)
    if len(rs) < min_requests:
        return Saturation(saturated=False, inflight_slope=None, ttft_slope=None,
                          text=f"too few requests ({len(rs)} < {min_requests}) to judge saturation")
    send = np.fromiter((r.send_ns for r in rs), dtype=np.int64)
    end = np.sort(np.fromiter((r.end_ns for r in rs), dtype=np.int64))
    t = (send - send[0]) / 1e9
    inflight = np.arange(1, send.size + 1) - np.searchsorted(end, send, side="right")
    ttft = np.fromiter(((ttft_ms(r) if r.ok and r.first_token_ns else math.nan) for r in rs), dtype=float)
    ok = ~np.isnan(ttft)
    b1, se1 = _slope(t, inflight.astype(float))
    b2, se2 = _slope(t[ok], ttft[ok])
    tc = t_critical(max(send.size - 2, 1), confidence)
    span = float(t[ok].max() - t[ok].min()) if ok.any() else 0.0
    early = float(np.median(ttft[ok][: max(1, int(ok.sum()) // 4)])) if ok.any() else 0.0
    rise = b2 * span
    sat = ((closed_loop or b1 - tc * se1 > 0) and b2 - tc * se2 > 0 and rise >= max(min_rise_ms, early))
    return Saturation(saturated=bool(sat), inflight_slope=b1, ttft_slope=b2,
                      text=(f"saturated: in flight +{b1:.2f}/s and TTFT +{b2:.1f} ms/s keep rising"
                            if sat else f"not saturated (in flight {b1:+.2f}/s, TTFT {b2:+.1f} ms/s)"))


def ladder_saturated(prev: tuple[float, float | None], cur: tuple[float, float | None], *,
                     min_gain: float = 0.05, ttft_growth: float = 1.5) -> bool:
    """Across a concurrency ladder, (output tok/s, median TTFT ms) of consecutive points: more load
    bought less than ``min_gain`` more throughput while TTFT grew by ``ttft_growth`` or more."""
    (t0, f0), (t1, f1) = prev, cur
    if f0 is None or f1 is None or f0 <= 0:
        return False
    return t1 < t0 * (1 + min_gain) and f1 >= f0 * ttft_growth
