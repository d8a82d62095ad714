"""Uncertainty of the headline figures: Student-t intervals across trials, a within-run bootstrap
for single trials, and the sample counts that certify a tail percentile.

Definitions are in ``docs/metrics.md`` ("Trials and confidence intervals"). Everything here is
numpy and the standard library: the Student-t quantile is inverted from the regularised incomplete
beta function (Lentz's continued fraction), so scipy is not needed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

CONFIDENCE = 0.95
BOOTSTRAP_ITERATIONS = 1000
BOOTSTRAP_CELLS = 1_000_000  # resampled values per metric at most (iterations shrink for large samples)
THROUGHPUT_BLOCKS = 10
# MLPerf LoadGen early-stopping minimums (c = 0.99): below these a tail percentile is not certified
TAIL_MINIMUM: dict[str, int] = {"p90": 64, "p95": 130, "p99": 662, "p999": 6636}

Method = Literal["trials", "within-run"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Estimate(_Model):
    """One headline figure: its point value, 95 % interval and where the interval comes from.

    ``method``: ``trials`` (Student-t across trials; ``values`` holds each trial's figure) or
    ``within-run`` (bootstrap inside one trial: it underestimates run-to-run spread). ``samples``
    and ``certified`` are set for percentiles: the per-trial sample count behind them, and whether
    it reaches :data:`TAIL_MINIMUM`."""

    mean: float
    lo: float
    hi: float
    n: int  # trials behind the figure
    method: Method
    se: float | None = None  # standard error of the mean (trials) or bootstrap standard deviation
    df: float | None = None  # degrees of freedom of ``se`` (None: normal)
    values: list[float] = Field(default_factory=list)
    samples: int | None = None
    certified: bool | None = None

    @property
    def half_width_rel(self) -> float:
        return (self.hi - self.lo) / 2 / abs(self.mean) if self.mean else math.inf


# --------------------------------------------------------------------------- Student t


def _betacf(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbeta) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbeta) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2, 0.5, x)
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``df=inf``: normal)."""
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    if math.isinf(df) or df > 1e7:
        return _norm_quantile(p)
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


def _norm_quantile(p: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


def t_critical(df: float, confidence: float = CONFIDENCE) -> float:
    return t_quantile(1 - (1 - confidence) / 2, df)


def welch_df(se_a: float, df_a: float | None, se_b: float, df_b: float | None) -> float:
    """Welch-Satterthwaite degrees of freedom of ``se_a**2 + se_b**2`` (None: normal, infinite)."""
    va, vb = se_a * se_a, se_b * se_b
    num = (va + vb) ** 2
    den = (va * va / df_a if df_a else 0.0) + (vb * vb / df_b if df_b else 0.0)
    return num / den if den > 0 else math.inf


# --------------------------------------------------------------------------- across trials


def across_trials(values: Sequence[float | None], *, samples: int | None = None, tail: str | None = None,
                  confidence: float = CONFIDENCE) -> Estimate | None:
    """Mean and Student-t interval of per-trial figures (non-finite and missing values skipped).
    One value: its interval is the value itself (``se`` None); callers replace it with a
    within-run bootstrap where one exists."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return None
    mean = float(v.mean())
    cert = None if tail is None or samples is None else samples >= TAIL_MINIMUM.get(tail, 0)
    if v.size == 1:
        return Estimate(mean=mean, lo=mean, hi=mean, n=1, method="trials", values=v.tolist(), samples=samples,
                        certified=cert)
    se = float(v.std(ddof=1) / math.sqrt(v.size))
    half = t_critical(v.size - 1, confidence) * se
    return Estimate(mean=mean, lo=mean - half, hi=mean + half, n=int(v.size), method="trials", se=se,
                    df=float(v.size - 1), values=v.tolist(), samples=samples, certified=cert)


# --------------------------------------------------------------------------- within one run


def bootstrap_percentiles(samples: np.ndarray, qs: Sequence[float], *, seed: int = 0,
                          iterations: int = BOOTSTRAP_ITERATIONS,
                          confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile bootstrap of the ``qs`` percentiles of ``samples`` (vectorised: one
    ``(iterations, n)`` index matrix, one ``np.percentile`` over it). Returns (lo, hi, sd) per q."""
    a = np.asarray(samples, dtype=float)
    n = a.size
    q = np.asarray(qs, dtype=float)
    if n < 2:
        nan = np.full(q.shape, np.nan)
        return nan, nan, nan
    b = int(max(100, min(iterations, BOOTSTRAP_CELLS // n)))
    rng = np.random.default_rng(seed)
    draws = np.percentile(a[rng.integers(0, n, size=(b, n))], q, axis=1)  # (len(qs), b)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha], axis=1)
    return lo, hi, draws.std(axis=1, ddof=1)


def block_rates(times_ns: np.ndarray, weights: np.ndarray, window_ns: tuple[int, int],
                blocks: int = THROUGHPUT_BLOCKS) -> np.ndarray:
    """Rates (weight per second) in ``blocks`` equal time blocks of the window."""
    start, end = window_ns
    if end <= start or times_ns.size == 0:
        return np.empty(0)
    counts, _ = np.histogram(times_ns, bins=blocks, range=(start, end), weights=weights)
    return counts / ((end - start) / blocks / 1e9)


def bootstrap_mean(values: np.ndarray, *, seed: int = 0, iterations: int = BOOTSTRAP_ITERATIONS,
                   confidence: float = CONFIDENCE) -> tuple[float, float, float] | None:
    """(lo, hi, sd) of the bootstrap distribution of the mean of ``values`` (the time blocks)."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return None
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(iterations, v.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi), float(means.std(ddof=1))
