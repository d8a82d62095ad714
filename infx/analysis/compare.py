"""Comparisons read off step frontiers: arm A vs arm B at the same interactivity.

The verdicts are noise-aware (``docs/metrics.md``): at each interactivity target both
arms' throughput is interpolated linearly between the frontier points around it, with its standard
error, and the ratio A/B gets a 95 % interval (log scale, Welch). The verdict is "A better by x%"
(the interval beyond +m, and still so when interactivity shifts by +-m), "B better", "equivalent
within +-m%" (two one-sided tests at margin ``m``, 90 % interval inside +-m) or "inconclusive: N
more trials would decide". Arms measured at the same concurrencies are
also compared point by point (``by_conc``). A winner is only named from intervals across trials.

The step-frontier shape (``ranges``, ``crossovers``) is kept as a description of the point
estimates. Both frontiers are step functions, so the ratio A/B is constant between consecutive breakpoints
(the frontier points' x values). The comparison walks those intervals over the range both arms
measured, merges neighbours with the same higher side into *ranges* (with a verdict sentence each) and
reports a *crossover* wherever the higher side changes: descriptive data marked ``point_estimates_only``
that names no winner. Outside an arm's measured range nothing is
said about it (no extrapolation); the ladder entries there say why they have no ratio.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from infx.analysis.accuracy import AccuracyComparison
from infx.analysis.frontier import Direction, StepFrontier

if TYPE_CHECKING:
    from infx.analysis.dataset import ArmSeries, Measured, WorkloadKey

Winner = Literal["a", "b", "tie"]
Decision = Literal["a", "b", "equivalent", "inconclusive"]
DEFAULT_MARGIN = 0.05
MIN_TRIALS_FOR_WINNER = 2


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LadderEntry(_Model):
    x: float
    a: float | None
    b: float | None
    ratio: float | None  # a / b
    note: str = ""


class TargetVerdict(_Model):
    """The noise-aware verdict at one interactivity target (or one concurrency, ``by_conc``)."""

    x: float
    a: float | None
    b: float | None
    ratio: float | None  # a / b (point estimates)
    ratio_lo: float | None = None  # 95 % interval of the ratio
    ratio_hi: float | None = None
    decision: Decision = "inconclusive"
    trials_needed: int | None = None  # inconclusive: more trials per point that would decide
    text: str = ""


class VerdictRange(_Model):
    """Descriptive data only: where one arm's point estimate lies above the other's. It weighs no noise and
    names no winner (``point_estimates_only``); the verdict is ``targets`` / ``by_conc``."""

    point_estimates_only: Literal[True] = True
    lo: float
    hi: float
    higher: Winner  # whose point estimate is better over the range ("tie": equal)
    ratio_min: float  # higher / lower (>= 1), over the range
    ratio_max: float
    text: str


class Crossover(_Model):
    """Descriptive data only: where the higher point estimate changes sides (no interval weighed)."""

    point_estimates_only: Literal[True] = True
    lo: float  # the higher side changes somewhere in [lo, hi] (lo == hi: exactly there)
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
    targets: list[TargetVerdict] = Field(default_factory=list)
    by_conc: list[TargetVerdict] = Field(default_factory=list)
    margin: float = DEFAULT_MARGIN
    # e.g. one arm's speculative decoding ran with a forced (synthetic) acceptance length and the other's was
    # measured: every verdict above carries the caveat in its text too
    caveats: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)  # left out when none

    def with_caveat(self, caveat: str) -> Comparison:
        """This comparison with ``caveat`` in ``caveats``, first in ``verdict`` and on every decided verdict."""
        def mark(vs: list[TargetVerdict]) -> list[TargetVerdict]:
            return [v.model_copy(update={"text": f"{v.text} [caveat: {caveat}]"}) if v.decision in ("a", "b") else v
                    for v in vs]
        return self.model_copy(update={"caveats": [*self.caveats, caveat], "verdict": [f"caveat: {caveat}",
                                                                                       *self.verdict],
                                       "targets": mark(self.targets), "by_conc": mark(self.by_conc)})

    def evidence(self) -> tuple[str, list[TargetVerdict]]:
        """What a table of this comparison shows: the noise-aware verdicts with their intervals, by
        concurrency when the same arm is matched across runs, else at the interactivity targets
        (interpolated). Empty when neither exists (no common range): then only the ladder's point
        estimates can be shown, and they must be labelled as such."""
        if self.by_conc:
            return "concurrency", list(self.by_conc)
        return f"{self.x_label} ({self.x_unit})", list(self.targets)


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
    margin: float = DEFAULT_MARGIN,
    by_conc: Sequence[tuple[float, Estimate1, Estimate1]] = (),
    drift: bool = False,
) -> Comparison:
    """Compare two frontiers with the same axes. ``ratio = a / b``. The verdicts (``targets``,
    ``verdict``) weigh each ratio against its interval and the equivalence ``margin`` (default 5 %);
    ``by_conc``: (concurrency, A's, B's (y, rel se, df, trials)) of points measured at both."""
    if margin <= 0 or margin >= 1:
        raise ValueError(f"equivalence margin must be in (0, 1), not {margin}")
    tau2 = drift_variance(by_conc) if drift else 0.0
    if a.x_dir is not b.x_dir or a.y_dir is not b.y_dir:
        raise ValueError("frontiers with different axis directions cannot be compared")
    better_y = a.y_dir  # MAX: larger y wins
    xs = list(at) if at is not None else default_ladder(a, b, ladder_points)
    ladder = _ladder(a, b, xs, a_label, b_label, x_unit)

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
            spans = list(itertools.pairwise(cuts.tolist()))
        pa, pb = a.values_at(probes), b.values_at(probes)
        segs: list[tuple[float, float, Winner, float]] = []
        for (s_lo, s_hi), ya, yb in zip(spans, pa.tolist(), pb.tolist(), strict=True):
            segs.append((s_lo, s_hi, *_segment_winner(ya, yb, better_y)))
        for s_lo, s_hi, w, r in segs:
            if ranges and ranges[-1].higher == w:
                prev = ranges[-1]
                ranges[-1] = prev.model_copy(update={"hi": s_hi, "ratio_min": min(prev.ratio_min, r),
                                                     "ratio_max": max(prev.ratio_max, r)})
            else:
                ranges.append(VerdictRange(lo=s_lo, hi=s_hi, higher=w, ratio_min=r, ratio_max=r, text=""))
        ranges = [rg.model_copy(update={"text": _range_text(rg, a_label, b_label, y_label, x_unit, overlap)})
                  for rg in ranges]
        decided = [rg for rg in ranges if rg.higher != "tie"]
        for r1, r2 in itertools.pairwise(decided):
            if r1.higher != r2.higher:
                c_lo, c_hi = r1.hi, r2.lo
                where = (f"at {_fmt(c_lo)} {x_unit}" if c_lo == c_hi
                         else f"between {_fmt(c_lo)} and {_fmt(c_hi)} {x_unit}")
                names = {"a": a_label, "b": b_label}
                crossovers.append(Crossover(lo=c_lo, hi=c_hi, before=r1.higher, after=r2.higher,
                                            text=f"point estimates cross {where}: {names[r1.higher]} higher "
                                                 f"below, {names[r2.higher]} above (no interval weighed)"))
        verdict = []
    else:
        verdict = [f"no comparison: {a_label} and {b_label} have no measured {x_label} range in common"]
    targets: list[TargetVerdict] = []
    # the same arm in two runs is matched by concurrency (``by_conc``): each point against its twin,
    # which no shift of interactivity between the runs can move; other pairs at interactivity targets
    if overlap is not None and not by_conc:
        for t in targets_in(ladder, overlap):
            ia, ib = a.interpolate(t), b.interpolate(t)
            if ia is None or ib is None:
                continue
            targets.append(_robust(decide(t, ia, ib, better_y, margin, a_label, b_label, y_label, tau2), a, b, t,
                                   better_y, margin, a_label, b_label, y_label, tau2))
        verdict = _group_targets(targets, a_label, b_label, x_unit, margin) + verdict
    conc_verdicts = [decide(c, ea, eb, better_y, margin, a_label, b_label, y_label, tau2) for c, ea, eb in by_conc]
    if tau2 > 0:
        verdict.append(f"run-to-run drift: the matched concurrencies disagree beyond their trial noise; a drift "
                       f"of ±{(math.exp(math.sqrt(tau2)) - 1) * 100:.1f}% (1 sd) is added to every interval")
    if conc_verdicts:
        verdict += [f"at concurrency {_fmt(v.x)}: {v.text}" for v in conc_verdicts]
    verdict += _coverage_notes(a, b, a_label, b_label, x_unit)
    return Comparison(workload=workload, a_label=a_label, b_label=b_label, x_label=x_label, x_unit=x_unit,
                      y_label=y_label, a_range=a_range, b_range=b_range, overlap=overlap, ladder=ladder,
                      ranges=ranges, crossovers=crossovers, verdict=verdict, targets=targets,
                      by_conc=conc_verdicts, margin=margin)


def _ladder(a: StepFrontier, b: StepFrontier, xs: Sequence[float], a_label: str, b_label: str,
            x_unit: str) -> list[LadderEntry]:
    """Both frontiers' values and their ratio at each x of the ladder, with why one is missing."""
    va, vb = a.values_at(xs), b.values_at(xs)
    ladder: list[LadderEntry] = []
    for t, ya, yb in zip(xs, va.tolist(), vb.tolist(), strict=True):
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
    return ladder


def _coverage_notes(a: StepFrontier, b: StepFrontier, a_label: str, b_label: str, x_unit: str) -> list[str]:
    """Where only one side was measured (no comparison there), and a side with no points at all."""
    out = []
    for f, label, other in ((a, a_label, b), (b, b_label, a)):
        if f.empty or other.empty:
            continue
        if f.hi > other.hi:
            out.append(f"only {label} was measured above {_fmt(other.hi)} {x_unit} (up to {_fmt(f.hi)}); "
                       "no comparison there")
        if f.lo < other.lo:
            out.append(f"only {label} was measured below {_fmt(other.lo)} {x_unit} (down to {_fmt(f.lo)}); "
                       "no comparison there")
    for f, label in ((a, a_label), (b, b_label)):
        if f.empty:
            out.append(f"{label} has no measured points")
    return out


Estimate1 = tuple[float, float, float, float]  # (y, relative se (NaN: none), df, trials)


def drift_variance(pairs: Sequence[tuple[float, Estimate1, Estimate1]]) -> float:
    """Run-to-run drift between two runs of the same arm, as a variance of the log ratio: the
    DerSimonian-Laird between-point variance of the matched-concurrency log ratios (their spread
    beyond what each one's trial noise explains). Trials measure noise inside a run; a machine
    that got busier between the runs moves every point, unevenly, and only this spread shows it.
    A uniform real change (every concurrency 25 % faster) leaves it near 0. Needs 3 matched points
    with intervals."""
    d, w = [], []
    for _, (ya, ra, _da, _na), (yb, rb, _db, _nb) in pairs:
        if ya > 0 and yb > 0 and not (math.isnan(ra) or math.isnan(rb)):
            v = ra * ra + rb * rb
            if v > 0:
                d.append(math.log(ya / yb))
                w.append(1 / v)
    if len(d) < 3:
        return 0.0
    sw = sum(w)
    mean = sum(wi * di for wi, di in zip(w, d, strict=True)) / sw
    q = sum(wi * (di - mean) ** 2 for wi, di in zip(w, d, strict=True))
    denom = sw - sum(wi * wi for wi in w) / sw
    return max(0.0, (q - (len(d) - 1)) / denom) if denom > 0 else 0.0


def targets_in(ladder: Sequence[LadderEntry], overlap: tuple[float, float]) -> list[float]:
    """The ladder's targets inside the common range (at least its two ends)."""
    lo, hi = overlap
    ts = [e.x for e in ladder if lo <= e.x <= hi]
    return ts or ([lo] if lo == hi else [lo, hi])


def decide(x: float, ea: Estimate1, eb: Estimate1, better_y: Direction, margin: float, a_label: str,
           b_label: str, y_label: str, drift_var: float = 0.0) -> TargetVerdict:
    """The verdict on A vs B from two estimates: the log ratio's 95 % Welch interval names a
    winner when it lies entirely beyond the margin (+-log(1+margin); and both sides have trials);
    two one-sided tests (90 % interval inside +-log(1+margin)) say equivalent; otherwise
    inconclusive, with the trials per point that would shrink the interval enough (the standard
    error falls as 1/sqrt(trials)). A difference smaller than the margin is never a win."""
    from infx.metrics.uncertainty import t_critical, welch_df

    ya, ra, da, na = ea
    yb, rb, db, nb = eb
    ratio = ya / yb if yb else None
    base = TargetVerdict(x=x, a=ya, b=yb, ratio=ratio)
    if (ya <= 0) != (yb <= 0):  # one side served nothing: the other wins outright, whatever the noise
        a_wins = (yb <= 0) == (better_y is Direction.MAX)
        win, lose = (a_label, b_label) if a_wins else (b_label, a_label)
        return base.model_copy(update={"decision": "a" if a_wins else "b",
                                       "text": f"{win} wins outright over {lose} (ratio unbounded: a {y_label} of 0)"})
    if ya <= 0 and yb <= 0:
        return base.model_copy(update={"decision": "equivalent", "text": "equivalent: both are 0"})
    if math.isnan(ra) or math.isnan(rb):
        return base.model_copy(update={
            "trials_needed": 3,
            "text": f"inconclusive: no interval (measured without --trials or records); "
                    f"{a_label} / {b_label} = {ya / yb:.2f}x; 3 trials per point would decide"})
    d = math.log(ya / yb) * (1 if better_y is Direction.MAX else -1)
    se = math.sqrt(ra * ra + rb * rb + drift_var)
    df = welch_df(ra, da if math.isfinite(da) else None, rb, db if math.isfinite(db) else None)
    t95, t90 = t_critical(df, 0.95), t_critical(df, 0.90)
    lo, hi = d - t95 * se, d + t95 * se
    sign = 1 if better_y is Direction.MAX else -1
    r_lo, r_hi = sorted((math.exp(sign * lo), math.exp(sign * hi)))
    upd: dict[str, object] = {"ratio_lo": r_lo, "ratio_hi": r_hi}
    bound = math.log1p(margin)
    n = min(na, nb)
    within = n < MIN_TRIALS_FOR_WINNER
    def pct(v: float) -> str:
        return f"{(math.exp(v) - 1) * 100:+.1f}%"

    if not within and (lo > bound or hi < -bound):
        win, lose = (a_label, b_label) if lo > 0 else (b_label, a_label)
        dd, l2, h2 = (d, lo, hi) if lo > 0 else (-d, -hi, -lo)
        upd.update(decision="a" if lo > 0 else "b",
                   text=f"{win} better by {(math.exp(dd) - 1) * 100:.1f}% [{pct(l2)}, {pct(h2)}] in {y_label} "
                        f"than {lose} (95% CI, {int(n)} trials)")
    elif abs(d) + t90 * se <= bound:
        upd.update(decision="equivalent",
                   text=f"equivalent within ±{margin:.0%} ({a_label} / {b_label} {pct(d)}, "
                        f"90% CI [{pct(d - t90 * se)}, {pct(d + t90 * se)}], {int(n)} trial(s))")
    else:
        # trials shrink the trial noise (1/sqrt(n)), never the run-to-run drift: the factor by which
        # the trials' variance must fall so that t * sqrt(v_trials / f + drift) fits the room left
        v_trials = ra * ra + rb * rb
        need = []
        for t_c, room in ((t95, abs(d) - bound), (t90, bound - abs(d))):
            if room > 0 and (t_c * t_c * drift_var) < room * room and v_trials > 0:
                need.append(v_trials / (room * room / (t_c * t_c) - drift_var))
        factor = min(need) if need else math.inf
        total = (max(math.ceil(max(n, 1) * factor), MIN_TRIALS_FOR_WINNER if within else int(n) + 1)
                 if math.isfinite(factor) else 10**9)
        more = total - int(n)
        label = " (within-run interval only: it underestimates run-to-run spread)" if within else ""
        upd.update(decision="inconclusive", trials_needed=more if math.isfinite(factor) and more <= 1000 else None,
                   text=(f"inconclusive: {a_label} / {b_label} {pct(d)} [{pct(lo)}, {pct(hi)}]{label}; "
                         + (f"{more} more trial(s) per point would decide" if math.isfinite(factor) and more <= 1000
                            else "more trials cannot decide: the run-to-run drift alone is wider than the room "
                                 "to the margin (rerun both runs, or measure them interleaved)" if drift_var > 0
                            else "the difference is too close to the margin to decide")))
    return base.model_copy(update=upd)


def _robust(v: TargetVerdict, a: StepFrontier, b: StepFrontier, t: float, better_y: Direction, margin: float,
            a_label: str, b_label: str, y_label: str, drift_var: float = 0.0) -> TargetVerdict:
    """A winner at target ``t`` must survive a shift of ``margin`` in interactivity: the winner read
    at the harder x (``t * (1 + m)``) against the loser at the easier one (``t / (1 + m)``). On a steep
    frontier a few percent of interactivity moves throughput a lot, and interactivity drifts between
    runs too; such a target is inconclusive rather than a win."""
    if v.decision not in ("a", "b"):
        return v
    harder, easier = (t * (1 + margin), t / (1 + margin)) if a.x_dir is Direction.MAX else \
        (t / (1 + margin), t * (1 + margin))
    win, lose = (a, b) if v.decision == "a" else (b, a)
    ew, el = win.interpolate(harder), lose.interpolate(easier)
    if ew is None or el is None:
        shifted = None
    else:
        ea, eb = (ew, el) if v.decision == "a" else (el, ew)
        shifted = decide(t, ea, eb, better_y, margin, a_label, b_label, y_label, drift_var)
    if shifted is not None and shifted.decision == v.decision:
        return v
    name = a_label if v.decision == "a" else b_label
    return v.model_copy(update={
        "decision": "inconclusive", "trials_needed": None,
        "text": f"inconclusive: {name} leads ({a_label} / {b_label} = "
                + ("unbounded" if not v.ratio else f"{v.ratio:.2f}x") + f") but not once interactivity shifts by "
                f"±{margin:.0%} (steep frontier or edge of the measured range; compare by concurrency instead)"})


def _group_targets(targets: Sequence[TargetVerdict], a_label: str, b_label: str, x_unit: str,
                   margin: float) -> list[str]:
    """One sentence per run of consecutive targets with the same decision."""
    out: list[str] = []
    i = 0
    while i < len(targets):
        j = i
        while j + 1 < len(targets) and targets[j + 1].decision == targets[i].decision:
            j += 1
        t0, t1 = targets[i], targets[j]
        where = f"at {_fmt(t0.x)} {x_unit}" if i == j else f"at {_fmt(t0.x)}-{_fmt(t1.x)} {x_unit}"
        if i == j:
            out.append(f"{where}: {t0.text}")
        else:
            worst = max(targets[i:j + 1], key=lambda v: (v.trials_needed or 0))
            out.append(f"{where} ({j - i + 1} targets): {worst.text}")
        i = j + 1
    return out


def _segment_winner(ya: float, yb: float, better_y: Direction) -> tuple[Winner, float]:
    """Point-estimate leader of one interval and its leader/other ratio (>= 1); equal values
    (or zero on both sides) are a tie. A zero on one side makes the ratio unbounded."""
    if ya == 0 and yb == 0:
        return "tie", 1.0
    if ya == 0 or yb == 0:
        a_larger = yb == 0
        a_wins = a_larger if better_y is Direction.MAX else not a_larger
        return ("a" if a_wins else "b"), math.inf
    ratio = ya / yb if better_y is Direction.MAX else yb / ya
    if ratio == 1:
        return "tie", ratio
    return ("a", ratio) if ratio > 1 else ("b", 1 / ratio)


def _range_text(rg: VerdictRange, a_label: str, b_label: str, y_label: str, x_unit: str,
                overlap: tuple[float, float]) -> str:
    lo, hi = overlap
    if rg.lo <= lo and rg.hi >= hi:
        where = f"across {_fmt(lo)}-{_fmt(hi)} {x_unit}"
    elif rg.lo <= lo:
        where = f"below {_fmt(rg.hi)} {x_unit}"
    elif rg.hi >= hi:
        where = f"above {_fmt(rg.lo)} {x_unit}"
    else:
        where = f"between {_fmt(rg.lo)} and {_fmt(rg.hi)} {x_unit}"
    if rg.higher == "tie":
        return f"point estimates only: {a_label} and {b_label} are equal {where}"
    name = a_label if rg.higher == "a" else b_label
    other = b_label if rg.higher == "a" else a_label
    if math.isinf(rg.ratio_min):
        return f"point estimates only: {other} has a {y_label} of 0 {where}, {name} does not"
    if math.isinf(rg.ratio_max):
        return (f"point estimates only: {name}'s {y_label} is {rg.ratio_min:.2f}x or more {other}'s {where} "
                f"(unbounded where one side is 0)")
    if abs(rg.ratio_max - rg.ratio_min) < 0.05:
        factor = f"{rg.ratio_min:.2f}x"
    else:
        factor = f"{rg.ratio_min:.2f}x-{rg.ratio_max:.2f}x"
    return f"point estimates only: {name}'s {y_label} is {factor} {other}'s {where} (no interval; see the verdicts)"


# --------------------------------------------------------------------------- arms and runs


class ComparisonSet(_Model):
    """Every comparison one ``infx compare`` asked for, plus what could not be compared."""

    title: str
    norm: str
    comparisons: list[Comparison]
    notes: list[str]
    accuracy: list[AccuracyComparison] = Field(default_factory=list)  # paired evals of the same arms


def _frontier_pair(sa: ArmSeries, sb: ArmSeries, *, at: Sequence[float] | None, ladder_points: int, margin: float,
                   match_conc: bool = False, drift: bool | None = None) -> Comparison:
    from infx.analysis.dataset import X_AXES, y_axis

    xa = X_AXES[sa.x_metric]
    ca, cb = sa.by_conc(), sb.by_conc()
    pairs = [(float(c), ca[c], cb[c]) for c in sorted(set(ca) & set(cb))] if match_conc else []
    c = compare_frontiers(sa.frontier(), sb.frontier(), a_label=sa.label, b_label=sb.label, by_conc=pairs,
                          drift=match_conc if drift is None else drift,
                          x_label=xa.label.lower(), x_unit=xa.unit,
                          y_label=y_axis(sa.y_metric, sa.norm).label.lower(),
                          workload=sa.workload.label, at=at, ladder_points=ladder_points, margin=margin)
    caveat = acceptance_caveat(sa, sb)
    return c.with_caveat(caveat) if caveat else c


def spec_only(sa: ArmSeries, sb: ArmSeries) -> bool:
    """Two arms of one engine configuration that differ only in speculative decoding: compared point by point at
    the concurrencies both measured (the same offered load, with and without drafting), since drafting moves
    interactivity so far that their frontiers may share no interactivity range."""
    a, b = sa.arm, sb.arm
    return (a.topology == b.topology and a.kv_offloading == b.kv_offloading and a.spec_decoding != b.spec_decoding
            and bool(set(sa.by_conc()) & set(sb.by_conc())))


def _acceptance_of(s: ArmSeries) -> str:
    """``synthetic (AL 3.51)``, ``measured`` or ``none`` (no speculative decoding) for an arm's points."""
    labels = set()
    for m in s.points:
        if m.acceptance == "synthetic":
            labels.add(f"synthetic (AL {m.synthetic_al:g})" if m.synthetic_al is not None else "synthetic")
        else:
            labels.add("measured" if m.acceptance == "measured" else "none")
    return ", ".join(sorted(labels))


def acceptance_caveat(sa: ArmSeries, sb: ArmSeries) -> str | None:
    """The caveat of a comparison whose arms' speculative decoding did not accept drafts the same way: one
    forced a synthetic acceptance length and the other did not (or forced another)."""
    la, lb = _acceptance_of(sa), _acceptance_of(sb)
    if la == lb or "synthetic" not in la + lb:
        return None
    def said(label: str) -> str:
        return "no speculative decoding" if label == "none" else f"{label} acceptance"
    return (f"{sa.label} ran with {said(la)} and {sb.label} with {said(lb)}: a forced acceptance length is not "
            "what real drafts achieve, so this throughput difference may not hold in service")


def _envelope(arms: Sequence[ArmSeries], run_id: str) -> ArmSeries:
    """All arms of one run and workload as one series: its frontier is the best deployment
    among them at each interactivity (what a run offers overall)."""
    from infx.analysis.dataset import ArmKey, ArmSeries

    first = arms[0]
    names = sorted({a.arm.label for a in arms})
    return ArmSeries(run_id, first.workload, ArmKey("best of " + ", ".join(names), "", ""),
                     [m for a in arms for m in a.points], first.x_metric, first.y_metric, first.norm,
                     label=f"best of {', '.join(a.label.split(' (')[0] for a in arms)} ({run_id})")


def _workload_series(pts: Sequence[Measured], x_metric: str, y_metric: str,
                     norm: str) -> Iterable[tuple[WorkloadKey, list[ArmSeries]]]:
    """The points' arm series, per workload (per-node figures need every point's node count first)."""
    from infx.analysis.dataset import norm_of, require_nodes, series, x_metric_of, y_metric_of

    if norm == "node" and y_metric != "energy":  # energy per token is whole-deployment: no node count
        require_nodes(pts)
    return series(pts, x_metric=x_metric_of(x_metric), y_metric=y_metric_of(y_metric), norm=norm_of(norm)).items()


def compare_arms(measured: Sequence[Measured], run_id: str, a: str | None = None, b: str | None = None, *,
                 x_metric: str = "interactivity", y_metric: str = "total", norm: str = "node",
                 at: Sequence[float] | None = None, ladder_points: int = 10,
                 margin: float = DEFAULT_MARGIN) -> ComparisonSet:
    """Arms of one run against each other (``a``/``b`` select arms, e.g. ``tp=2``; without them
    every pair of arms of each workload is compared, fewer GPUs per server first)."""
    from infx.analysis.dataset import match_arm

    notes: list[str] = []
    out: list[Comparison] = []
    for workload, arms in _workload_series([m for m in measured if m.run_id == run_id], x_metric, y_metric, norm):
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
            out.append(_frontier_pair(sa, sb, at=at, ladder_points=ladder_points, margin=margin,
                                      match_conc=spec_only(sa, sb), drift=False))
    from infx.analysis.dataset import NORM_UNITS

    return ComparisonSet(title=f"arms of run {run_id} ({NORM_UNITS[norm]})", norm=norm,
                         comparisons=out, notes=notes)


def compare_runs(measured: Sequence[Measured], run_id: str, baseline: str, *, arm: str | None = None,
                 x_metric: str = "interactivity", y_metric: str = "total", norm: str = "node",
                 at: Sequence[float] | None = None, ladder_points: int = 10,
                 margin: float = DEFAULT_MARGIN) -> ComparisonSet:
    """Each arm of ``run_id`` against the same arm (same workload and topology) of ``baseline``."""
    from infx.analysis.dataset import NORM_UNITS, match_arm

    pts = [m for m in measured if m.run_id in (run_id, baseline)]
    notes: list[str] = []
    out: list[Comparison] = []
    for workload, arms in _workload_series(pts, x_metric, y_metric, norm):
        mine = {s.arm: s for s in arms if s.run_id == run_id and (arm is None or match_arm(arm, s.arm))}
        base = {s.arm: s for s in arms if s.run_id == baseline and (arm is None or match_arm(arm, s.arm))}
        for key in sorted(set(mine) | set(base), key=lambda k: k.label):
            if key in mine and key in base:
                sa, sb = mine[key], base[key]
                sa.label, sb.label = f"{sa.label} ({run_id})", f"{sb.label} ({baseline})"
                out.append(_frontier_pair(sa, sb, at=at, ladder_points=ladder_points, margin=margin,
                                          match_conc=True))
            elif key in mine:
                notes.append(f"{workload.label}: {mine[key].label} is new in {run_id} (absent from {baseline})")
            else:
                notes.append(f"{workload.label}: {base[key].label} is in baseline {baseline} but not in {run_id}")
        if mine and base and (len(mine) > 1 or len(base) > 1 or set(mine) != set(base)):
            out.append(_frontier_pair(_envelope(list(mine.values()), run_id), _envelope(list(base.values()), baseline),
                                      at=at, ladder_points=ladder_points, margin=margin))
    if not out and not notes:
        notes.append(f"runs {run_id} and {baseline} have no measured points in common workloads")
    return ComparisonSet(title=f"run {run_id} vs baseline {baseline} ({NORM_UNITS[norm]})", norm=norm,
                         comparisons=out, notes=notes)
