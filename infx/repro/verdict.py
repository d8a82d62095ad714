"""The verdict of a rerun against its original point, read with the shared noise-aware machinery.

Both points' headline figures come with their 95 % intervals from ``result.json``'s ``stats`` (Student-t across
the point's trials, or a within-run bootstrap for one trial; a result written before
``stats`` existed gets the within-run bootstrap from its records here). Each figure (output throughput,
median TTFT, TPOT and end-to-end latency) is judged by :func:`infx.analysis.compare.decide`, the same
function ``infx compare`` uses: ``equivalent`` within +-margin (two one-sided tests), ``better``/``worse``
by x % with its interval, or ``inconclusive`` with the trials that would decide. That function names no
winner unless both sides have at least two trials (a within-run interval says nothing of run-to-run
noise), so a one-trial rerun of a one-trial point can read equivalent or inconclusive, never better or
worse. The overall verdict is ``equivalent`` when every figure is, ``better``/``worse`` when some figure is
and none points the other way, else ``inconclusive``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from infx.analysis.compare import DEFAULT_MARGIN, MIN_TRIALS_FOR_WINNER, decide
from infx.analysis.frontier import Direction
from infx.metrics.result import BenchResult
from infx.metrics.uncertainty import Estimate
from infx.results.layout import RECORDS_FILE, RESULT_FILE

Verdict = Literal["equivalent", "better", "worse", "inconclusive"]

# headline figure (a key of result.json's stats) -> (label, which way is better)
FIGURES: dict[str, tuple[str, Direction]] = {
    "output_tok_per_s": ("output tok/s", Direction.MAX),
    "ttft_median": ("median TTFT", Direction.MIN),
    "tpot_median": ("median TPOT", Direction.MIN),
    "e2el_median": ("median e2e latency", Direction.MIN),
}
_DECISION: dict[str, Verdict] = {"a": "better", "b": "worse", "equivalent": "equivalent",
                                 "inconclusive": "inconclusive"}


class MetricVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str  # a headline key of result.json's stats
    label: str
    original: float | None  # the point's figure (mean across its trials)
    rerun: float | None
    ratio: float | None = None  # rerun / original
    ratio_lo: float | None = None  # 95 % interval of the ratio
    ratio_hi: float | None = None
    trials_original: int = 0
    trials_rerun: int = 0
    method_original: str | None = None  # trials | within-run
    method_rerun: str | None = None
    verdict: Verdict
    trials_needed: int | None = None  # inconclusive: more trials per side that would decide
    text: str = ""


class _Sides(TypedDict):
    """The fields of a :class:`MetricVerdict` that describe both sides, whatever the verdict."""

    metric: str
    label: str
    original: float | None
    rerun: float | None
    trials_original: int
    trials_rerun: int
    method_original: str | None
    method_rerun: str | None


class ReproVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    text: str
    margin: float
    trials_original: int
    trials_rerun: int
    trials_needed: int | None = None
    metrics: list[MetricVerdict] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def point_stats(point_dir: Path) -> tuple[dict[str, Estimate], int]:
    """The point's headline estimates and its number of trials (0: no result)."""
    try:
        result = BenchResult.model_validate_json((point_dir / RESULT_FILE).read_text())
    except (OSError, ValueError):
        return {}, 0
    trials = max(len(result.trials), 1)
    if result.stats:
        return dict(result.stats), trials
    return _within_run(point_dir), trials


def _within_run(point_dir: Path) -> dict[str, Estimate]:
    """A result without ``stats`` (written before trials were recorded): the within-run bootstrap from its records,
    centred on the figures recomputed from those same records."""
    from infx.metrics.compute import compute_metrics, measurement_window
    from infx.metrics.trialstats import headline_values, within_run
    from infx.records import iter_records

    path = point_dir / RECORDS_FILE
    if not path.is_file():
        return {}
    records = list(iter_records(path))
    window = measurement_window(r for r in records if not r.warmup)
    if window is None:
        return {}
    return within_run(records, headline_values(compute_metrics(records, window_ns=window)), window)


def _one(e: Estimate) -> tuple[float, float, float, float]:
    """An :class:`Estimate` as :func:`decide` reads it: (y, relative se (NaN: none), df, trials)."""
    rel = e.se / abs(e.mean) if e.se is not None and e.mean else math.nan
    return e.mean, rel, e.df if e.df else math.inf, float(e.n)


def compare_point(original: Path, rerun: Path, *, margin: float = DEFAULT_MARGIN) -> ReproVerdict:
    """The rerun's point directory (all its trials) against the original's."""
    sa, na = point_stats(original)
    sb, nb = point_stats(rerun)
    out: list[MetricVerdict] = []
    for key, (label, better) in FIGURES.items():
        eo, er = sa.get(key), sb.get(key)
        base = _Sides(metric=key, label=label, original=eo.mean if eo else None, rerun=er.mean if er else None,
                      trials_original=eo.n if eo else 0, trials_rerun=er.n if er else 0,
                      method_original=eo.method if eo else None, method_rerun=er.method if er else None)
        if eo is None or er is None:
            side = "either side" if eo is None and er is None else "the original" if eo is None else "the rerun"
            out.append(MetricVerdict(**base, verdict="inconclusive", text=f"inconclusive: {side} has no {label}"))
            continue
        tv = decide(0.0, _one(er), _one(eo), better, margin, "rerun", "original", label)
        out.append(MetricVerdict(**base, ratio=tv.ratio, ratio_lo=tv.ratio_lo, ratio_hi=tv.ratio_hi,
                                 verdict=_DECISION[tv.decision], trials_needed=tv.trials_needed, text=tv.text))
    verdicts = {m.verdict for m in out}
    overall: Verdict
    if verdicts == {"equivalent"}:
        overall = "equivalent"
    elif verdicts & {"better", "worse"} and not {"better", "worse"} <= verdicts:
        overall = "better" if "better" in verdicts else "worse"
    else:
        overall = "inconclusive"
    needed = [m.trials_needed for m in out if m.verdict == "inconclusive" and m.trials_needed is not None]
    more = max(needed) if needed else None
    notes: list[str] = []
    if min(na, nb) < MIN_TRIALS_FOR_WINNER:
        notes.append(f"{'the original' if na < nb else 'the rerun' if nb < na else 'each side'} has one trial: its "
                     "interval is within-run only and cannot name a winner; rerun with `infx repro --trials N`")
    if overall == "equivalent":
        text = f"equivalent within ±{margin:.0%} on {', '.join(lbl for lbl, _ in FIGURES.values())}"
    elif overall in ("better", "worse"):
        text = "; ".join(m.text for m in out if m.verdict == overall)
    elif {"better", "worse"} <= verdicts:
        text = "inconclusive: some figures read better and others worse"
    else:
        text = "inconclusive: " + (f"{more} more trial(s) would decide" if more is not None
                                   else "more trials cannot decide it")
    return ReproVerdict(verdict=overall, text=text, margin=margin, trials_original=na, trials_rerun=nb,
                        trials_needed=more, metrics=out, notes=notes)
