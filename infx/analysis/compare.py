"""Comparisons read off step frontiers: arm A vs arm B at the same interactivity.

Both frontiers are step functions, so the ratio A/B is constant between consecutive breakpoints
(the frontier points' x values). The comparison walks those intervals over the range both arms
measured, merges neighbours with the same winner into *ranges* (with a verdict sentence each) and
reports a *crossover* wherever the winner changes. Outside an arm's measured range nothing is
said about it (no extrapolation); the ladder entries there say why they have no ratio.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from infx.analysis.accuracy import AccuracyComparison

from infx.analysis.frontier import Direction, StepFrontier

if TYPE_CHECKING:
    from infx.analysis.dataset import ArmSeries, Measured

Winner = Literal["a", "b", "tie"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LadderEntry(_Model):
    x: float
    a: float | None
    b: float | None
    ratio: float | None  # a / b
    note: str = ""


class VerdictRange(_Model):
    lo: float
    hi: float
    winner: Winner
    ratio_min: float  # winner / loser (>= 1), over the range
    ratio_max: float
    text: str


class Crossover(_Model):
    lo: float  # the winner changes somewhere in [lo, hi] (lo == hi: exactly there)
    hi: float
    before: Winner
    after: Winner
    text: str


class Comparison(_Model):
    workload: str
    a_label: str
    b_label: str
    x_label: str
    x_unit: str
    y_label: str
    a_range: tuple[float, float] | None
    b_range: tuple[float, float] | None
    overlap: tuple[float, float] | None
    ladder: list[LadderEntry]
    ranges: list[VerdictRange]
    crossovers: list[Crossover]
    verdict: list[str]


def _fmt(v: float) -> str:
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    digits = max(0, 2 - int(math.floor(math.log10(abs(v)))))
    return f"{v:.{min(digits, 3)}f}"


def default_ladder(a: StepFrontier, b: StepFrontier, n: int = 10) -> list[float]:
    """``n`` evenly spaced targets across the union of both measured ranges."""
    ranges = [(f.lo, f.hi) for f in (a, b) if not f.empty]
    if not ranges:
        return []
    lo = min(r[0] for r in ranges)
    hi = max(r[1] for r in ranges)
    if hi <= lo:
        return [lo]
    return [float(v) for v in np.linspace(lo, hi, n)]


def compare_frontiers(
    a: StepFrontier,
    b: StepFrontier,
    *,
    a_label: str,
    b_label: str,
    x_label: str = "interactivity",
    x_unit: str = "tok/s/user",
    y_label: str = "tok/s per GPU",
    workload: str = "",
    at: Sequence[float] | None = None,
    ladder_points: int = 10,
    tie_tolerance: float = 0.02,
) -> Comparison:
    """Compare two frontiers with the same axes. ``ratio = a / b``; within ``tie_tolerance``
    (2 %) of 1 the range is a tie."""
    if a.x_dir is not b.x_dir or a.y_dir is not b.y_dir:
        raise ValueError("frontiers with different axis directions cannot be compared")
    better_y = a.y_dir  # MAX: larger y wins
    targets = list(at) if at is not None else default_ladder(a, b, ladder_points)
    va, vb = a.values_at(targets), b.values_at(targets)
    ladder: list[LadderEntry] = []
    for t, ya, yb in zip(targets, va.tolist(), vb.tolist()):
        notes = []
        for f, y, label in ((a, ya, a_label), (b, yb, b_label)):
            if math.isnan(y):
                notes.append(f"no value for {label}: outside its measured range"
                             + (f" {_fmt(f.lo)}-{_fmt(f.hi)} {x_unit}" if not f.empty else " (no points)"))
        ratio = None if (math.isnan(ya) or math.isnan(yb) or yb == 0) else ya / yb
        if yb == 0 and not math.isnan(ya):
            notes.append("no ratio: both are 0" if ya == 0 else f"ratio unbounded: {b_label} is 0")
        ladder.append(LadderEntry(x=t, a=None if math.isnan(ya) else ya, b=None if math.isnan(yb) else yb,
                                  ratio=ratio, note="; ".join(notes)))

    a_range = None if a.empty else (a.lo, a.hi)
    b_range = None if b.empty else (b.lo, b.hi)
    overlap = None
    ranges: list[VerdictRange] = []
    crossovers: list[Crossover] = []
    verdict: list[str] = []
    if a_range and b_range and max(a.lo, b.lo) <= min(a.hi, b.hi):
        lo, hi = max(a.lo, b.lo), min(a.hi, b.hi)
        overlap = (lo, hi)
        cuts = np.unique(np.concatenate(([lo, hi], a.breakpoints(), b.breakpoints())))
        cuts = cuts[(cuts >= lo) & (cuts <= hi)]
        if cuts.size == 1:
            probes, spans = np.array([lo]), [(lo, hi)]
        else:
            probes = (cuts[:-1] + cuts[1:]) / 2
            spans = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
        pa, pb = a.values_at(probes), b.values_at(probes)
        segs: list[tuple[float, float, Winner, float]] = []
        for (s_lo, s_hi), ya, yb in zip(spans, pa.tolist(), pb.tolist()):
            segs.append((s_lo, s_hi, *_segment_winner(ya, yb, better_y, tie_tolerance)))
        for s_lo, s_hi, w, r in segs:
            if ranges and ranges[-1].winner == w:
                prev = ranges[-1]
                ranges[-1] = prev.model_copy(update={"hi": s_hi, "ratio_min": min(prev.ratio_min, r),
                                                     "ratio_max": max(prev.ratio_max, r)})
            else:
                ranges.append(VerdictRange(lo=s_lo, hi=s_hi, winner=w, ratio_min=r, ratio_max=r, text=""))
        ranges = [rg.model_copy(update={"text": _range_text(rg, a_label, b_label, y_label, x_unit, overlap,
                                                            tie_tolerance)})
                  for rg in ranges]
        decided = [rg for rg in ranges if rg.winner != "tie"]
        for r1, r2 in zip(decided, decided[1:]):
            if r1.winner != r2.winner:
                c_lo, c_hi = r1.hi, r2.lo
                where = (f"at {_fmt(c_lo)} {x_unit}" if c_lo == c_hi
                         else f"between {_fmt(c_lo)} and {_fmt(c_hi)} {x_unit}")
                names = {"a": a_label, "b": b_label}
                crossovers.append(Crossover(lo=c_lo, hi=c_hi, before=r1.winner, after=r2.winner,
                                            text=f"crossover {where}: {names[r1.winner]} below, "
                                                 f"{names[r2.winner]} above"))
        verdict = [rg.text for rg in ranges] + [c.text for c in crossovers]
    else:
        verdict = [f"no comparison: {a_label} and {b_label} have no measured {x_label} range in common"]
    for f, label, other in ((a, a_label, b), (b, b_label, a)):
        if f.empty or other.empty:
            continue
        if f.hi > other.hi:
            verdict.append(f"only {label} was measured above {_fmt(other.hi)} {x_unit} (up to {_fmt(f.hi)}); "
                           "no comparison there")
        if f.lo < other.lo:
            verdict.append(f"only {label} was measured below {_fmt(other.lo)} {x_unit} (down to {_fmt(f.lo)}); "
                           "no comparison there")
    for f, label in ((a, a_label), (b, b_label)):
        if f.empty:
            verdict.append(f"{label} has no measured points")
    return Comparison(workload=workload, a_label=a_label, b_label=b_label, x_label=x_label, x_unit=x_unit,
                      y_label=y_label, a_range=a_range, b_range=b_range, overlap=overlap, ladder=ladder,
                      ranges=ranges, crossovers=crossovers, verdict=verdict)


def _segment_winner(ya: float, yb: float, better_y: Direction, tie_tolerance: float) -> tuple[Winner, float]:
    """Winner of one interval and its winner/loser ratio (>= 1). A zero on one side makes the
    ratio unbounded (``math.inf``): the other side wins outright; zero on both sides is a tie."""
    if ya == 0 and yb == 0:
        return "tie", 1.0
    if ya == 0 or yb == 0:
        a_larger = yb == 0
        a_wins = a_larger if better_y is Direction.MAX else not a_larger
        return ("a" if a_wins else "b"), math.inf
    ratio = ya / yb if better_y is Direction.MAX else yb / ya
    if abs(ratio - 1) <= tie_tolerance:
        return "tie", ratio
    return ("a", ratio) if ratio > 1 else ("b", 1 / ratio)


def _range_text(rg: VerdictRange, a_label: str, b_label: str, y_label: str, x_unit: str,
                overlap: tuple[float, float], tie_tolerance: float) -> str:
    lo, hi = overlap
    if rg.lo <= lo and rg.hi >= hi:
        where = f"across {_fmt(lo)}-{_fmt(hi)} {x_unit}"
    elif rg.lo <= lo:
        where = f"below {_fmt(rg.hi)} {x_unit}"
    elif rg.hi >= hi:
        where = f"above {_fmt(rg.lo)} {x_unit}"
    else:
        where = f"between {_fmt(rg.lo)} and {_fmt(rg.hi)} {x_unit}"
    if rg.winner == "tie":
        return f"{a_label} and {b_label} are within {tie_tolerance:.0%} of each other {where}"
    name = a_label if rg.winner == "a" else b_label
    other = b_label if rg.winner == "a" else a_label
    if math.isinf(rg.ratio_min):
        return f"{name} wins outright over {other} {where} (ratio unbounded: a {y_label} of 0)"
    if math.isinf(rg.ratio_max):
        return (f"{name} gives {rg.ratio_min:.2f}x or more the {y_label} of {other} {where} "
                f"(ratio unbounded where one side is 0)")
    if abs(rg.ratio_max - rg.ratio_min) < 0.05:
        factor = f"{rg.ratio_min:.2f}x"
    else:
        factor = f"{rg.ratio_min:.2f}x-{rg.ratio_max:.2f}x"
    return f"{name} gives {factor} the {y_label} of {other} {where}"


# --------------------------------------------------------------------------- arms and runs


class ComparisonSet(_Model):
    """Every comparison one ``infx compare`` asked for, plus what could not be compared."""

    title: str
    norm: str
    comparisons: list[Comparison]
    notes: list[str]
    accuracy: list[AccuracyComparison] = Field(default_factory=list)  # paired evals of the same arms


def _frontier_pair(sa: ArmSeries, sb: ArmSeries, **kw: object) -> Comparison:
    from infx.analysis.dataset import X_AXES, y_axis

    xa = X_AXES[sa.x_metric]
    return compare_frontiers(sa.frontier(), sb.frontier(), a_label=sa.label, b_label=sb.label,
                             x_label=xa.label.lower(), x_unit=xa.unit,
                             y_label=y_axis(sa.y_metric, sa.norm).label.lower(),
                             workload=sa.workload.label, **kw)  # type: ignore[arg-type]


def _envelope(arms: Sequence["ArmSeries"], run_id: str) -> "ArmSeries":
    """All arms of one run and workload as one series: its frontier is the best deployment
    among them at each interactivity (what a run offers overall)."""
    from infx.analysis.dataset import ArmKey, ArmSeries

    first = arms[0]
    names = sorted({a.arm.label for a in arms})
    return ArmSeries(run_id, first.workload, ArmKey("best of " + ", ".join(names), "", ""),
                     [m for a in arms for m in a.points], first.x_metric, first.y_metric, first.norm,
                     label=f"best of {', '.join(a.label.split(' (')[0] for a in arms)} ({run_id})")


def compare_arms(measured: Sequence[Measured], run_id: str, a: str | None = None, b: str | None = None, *,
                 x_metric: str = "interactivity", y_metric: str = "total", norm: str = "node",
                 at: Sequence[float] | None = None, ladder_points: int = 10) -> ComparisonSet:
    """Arms of one run against each other (``a``/``b`` select arms, e.g. ``tp=2``; without them
    every pair of arms of each workload is compared, fewer GPUs per server first)."""
    from infx.analysis.dataset import match_arm, require_nodes, series

    pts = [m for m in measured if m.run_id == run_id]
    if norm == "node" and y_metric != "energy":  # energy per token is whole-deployment: no node count
        require_nodes(pts)
    notes: list[str] = []
    out: list[Comparison] = []
    for workload, arms in series(pts, x_metric=x_metric, y_metric=y_metric, norm=norm).items():  # type: ignore[arg-type]
        arms.sort(key=lambda s: (s.points[0].gpus_per_server, s.label))
        if a or b:
            left = [s for s in arms if a and match_arm(a, s.arm)]
            right = [s for s in arms if b and match_arm(b, s.arm)]
            if not left or not right:
                missing = [sel for sel, got in ((a, left), (b, right)) if not got]
                notes.append(f"{workload.label}: no arm matches {', '.join(repr(m) for m in missing)} "
                             f"(arms: {', '.join(s.label for s in arms)})")
                continue
            pairs = [(x, y) for x in left for y in right if x is not y]
        else:
            pairs = [(arms[i], arms[j]) for i in range(len(arms)) for j in range(i + 1, len(arms))]
            if len(arms) < 2:
                notes.append(f"{workload.label}: only one arm ({arms[0].label}) in run {run_id}; nothing to compare")
        for sa, sb in pairs:
            out.append(_frontier_pair(sa, sb, at=at, ladder_points=ladder_points))
    from infx.analysis.dataset import NORM_UNITS

    return ComparisonSet(title=f"arms of run {run_id} ({NORM_UNITS[norm]})", norm=norm,
                         comparisons=out, notes=notes)


def compare_runs(measured: Sequence[Measured], run_id: str, baseline: str, *, arm: str | None = None,
                 x_metric: str = "interactivity", y_metric: str = "total", norm: str = "node",
                 at: Sequence[float] | None = None, ladder_points: int = 10) -> ComparisonSet:
    """Each arm of ``run_id`` against the same arm (same workload and topology) of ``baseline``."""
    from infx.analysis.dataset import NORM_UNITS, match_arm, require_nodes, series

    pts = [m for m in measured if m.run_id in (run_id, baseline)]
    if norm == "node" and y_metric != "energy":  # energy per token is whole-deployment: no node count
        require_nodes(pts)
    notes: list[str] = []
    out: list[Comparison] = []
    for workload, arms in series(pts, x_metric=x_metric, y_metric=y_metric, norm=norm).items():  # type: ignore[arg-type]
        mine = {s.arm: s for s in arms if s.run_id == run_id and (arm is None or match_arm(arm, s.arm))}
        base = {s.arm: s for s in arms if s.run_id == baseline and (arm is None or match_arm(arm, s.arm))}
        for key in sorted(set(mine) | set(base), key=lambda k: k.label):
            if key in mine and key in base:
                sa, sb = mine[key], base[key]
                sa.label, sb.label = f"{sa.label} ({run_id})", f"{sb.label} ({baseline})"
                out.append(_frontier_pair(sa, sb, at=at, ladder_points=ladder_points))
            elif key in mine:
                notes.append(f"{workload.label}: {mine[key].label} is new in {run_id} (absent from {baseline})")
            else:
                notes.append(f"{workload.label}: {base[key].label} is in baseline {baseline} but not in {run_id}")
        if mine and base and (len(mine) > 1 or len(base) > 1 or set(mine) != set(base)):
            out.append(_frontier_pair(_envelope(list(mine.values()), run_id), _envelope(list(base.values()), baseline),
                                      at=at, ladder_points=ladder_points))
    if not out and not notes:
        notes.append(f"runs {run_id} and {baseline} have no measured points in common workloads")
    return ComparisonSet(title=f"run {run_id} vs baseline {baseline} ({NORM_UNITS[norm]})", norm=norm,
                         comparisons=out, notes=notes)
