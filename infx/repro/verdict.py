"""The verdict of a rerun against its original point: ``within-noise``, ``better``, ``worse`` or
``inconclusive``.

:func:`compare_point` is the one function ``infx repro`` calls, so the statistics issue's noise-aware
comparison (trials, CIs, TOST) can replace it without touching the rerun. Until then it compares the two
points' request-level distributions: for each latency metric (per-request TTFT, TPOT, end-to-end latency,
computed by :mod:`infx.metrics.compute` from ``records.jsonl.gz``) a percentile-bootstrap 95% interval of the
ratio of medians (rerun / original), judged against a practical margin (default 3%, as the peer methods'
TOST default): the interval inside ``[1 - m, 1 + m]`` is ``within-noise``, wholly beyond the margin is
``better``/``worse``, anything else ``inconclusive``. Requests inside one run are not independent of that
run's conditions, so with one trial on a side between-run noise is unknown and a ``better``/``worse`` reading
is reported as ``inconclusive`` (with the reason): only more trials can make such a claim.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from infx.metrics.compute import e2el_ms, tpot_ms, ttft_ms
from infx.records import RequestRecord, iter_records
from infx.results.layout import RECORDS_FILE, RESULT_FILE
from infx.metrics.result import BenchResult

Verdict = Literal["within-noise", "better", "worse", "inconclusive"]
DEFAULT_MARGIN = 0.03
_RESAMPLES = 2000

_METRICS: dict[str, Callable[[RequestRecord], float | None]] = {
    "ttft_ms": ttft_ms, "tpot_ms": tpot_ms, "e2el_ms": e2el_ms}


class MetricVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str
    original: float | None  # median
    rerun: float | None
    ratio: float | None  # rerun / original (lower is better for every metric here)
    ci_low: float | None = None
    ci_high: float | None = None
    n_original: int = 0
    n_rerun: int = 0
    verdict: Verdict
    note: str = ""


class ReproVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    margin: float
    trials_original: int
    trials_rerun: int
    metrics: list[MetricVerdict] = Field(default_factory=list)
    throughput: list[float | None] = Field(default_factory=list)  # rerun output tok/s per trial / original's
    notes: list[str] = Field(default_factory=list)


def _samples(point_dirs: Sequence[Path]) -> dict[str, np.ndarray]:
    """Per metric, the values of every measured (not warmup), successful request of the point directories."""
    vals: dict[str, list[float]] = {name: [] for name in _METRICS}
    for d in point_dirs:
        path = d / RECORDS_FILE
        if not path.is_file():
            continue
        for r in iter_records(path):
            if r.warmup or not r.ok:
                continue
            for name, fn in _METRICS.items():
                v = fn(r)
                if v is not None and np.isfinite(v):
                    vals[name].append(float(v))
    return {name: np.asarray(v, dtype=float) for name, v in vals.items()}


def _bootstrap_ratio(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """95% percentile interval of median(b*) / median(a*) over resamples of each side."""
    ia = rng.integers(0, len(a), size=(_RESAMPLES, len(a)))
    ib = rng.integers(0, len(b), size=(_RESAMPLES, len(b)))
    ma = np.median(a[ia], axis=1)
    mb = np.median(b[ib], axis=1)
    ok = ma > 0
    ratios = mb[ok] / ma[ok]
    if ratios.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


def _judge(lo: float, hi: float, margin: float) -> Verdict:
    if 1 - margin <= lo and hi <= 1 + margin:
        return "within-noise"
    if lo > 1 + margin:
        return "worse"
    if hi < 1 - margin:
        return "better"
    return "inconclusive"


def _throughput(d: Path) -> float | None:
    try:
        return BenchResult.model_validate_json((d / RESULT_FILE).read_text()).metrics.throughput.output_tok_per_s
    except (OSError, ValueError):
        return None


def compare_point(original: Sequence[Path], rerun: Sequence[Path], *, margin: float = DEFAULT_MARGIN,
                  seed: int = 0) -> ReproVerdict:
    """The rerun's point directories (one per trial) against the original's (one per trial)."""
    rng = np.random.default_rng(seed)
    one_trial = len(original) < 2 or len(rerun) < 2
    out: list[MetricVerdict] = []
    sa, sb = _samples(original), _samples(rerun)
    for name in _METRICS:
        a, b = sa[name], sb[name]
        if len(a) < 2 or len(b) < 2:
            out.append(MetricVerdict(metric=name, original=float(np.median(a)) if len(a) else None,
                                     rerun=float(np.median(b)) if len(b) else None, ratio=None, n_original=len(a),
                                     n_rerun=len(b), verdict="inconclusive", note="fewer than 2 requests"))
            continue
        ma, mb = float(np.median(a)), float(np.median(b))
        lo, hi = _bootstrap_ratio(a, b, rng)
        v: Verdict = _judge(lo, hi, margin) if np.isfinite(lo) else "inconclusive"
        note = ""
        if v in ("better", "worse") and one_trial:
            note = f"reads {v}, but one trial per side cannot separate it from between-run noise"
            v = "inconclusive"
        out.append(MetricVerdict(metric=name, original=ma, rerun=mb, ratio=mb / ma if ma else None, ci_low=lo,
                                 ci_high=hi, n_original=len(a), n_rerun=len(b), verdict=v, note=note))
    verdicts = {m.verdict for m in out}
    overall: Verdict = (verdicts.pop() if len(verdicts) == 1 else
                        "inconclusive" if "inconclusive" in verdicts or {"better", "worse"} <= verdicts else
                        ("worse" if "worse" in verdicts else "better"))
    base = [_throughput(d) for d in original]
    base_tp = next((t for t in base if t), None)
    tp = [(t / base_tp) if (t and base_tp) else None for t in (_throughput(d) for d in rerun)]
    notes = []
    if one_trial:
        notes.append("one trial on a side: the interval covers request-to-request noise only; run "
                     "`infx repro --trials N` for more trials")
    return ReproVerdict(verdict=overall, margin=margin, trials_original=len(original), trials_rerun=len(rerun),
                        metrics=out, throughput=tp, notes=notes)
