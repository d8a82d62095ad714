"""Pareto frontiers with an explicit objective per axis, read as step functions.

Every axis says whether more is better (``MAX``: throughput, interactivity) or less is better
(``MIN``: latency, cost). Point ``a`` *dominates* ``b`` when ``a`` is at least as good on both axes
and strictly better on one. The frontier is the set of points no other point dominates; points
that tie exactly (same x and same y) are all kept, since neither dominates the other.

Between measured points the frontier is a step function, never a smoothed curve: the value at a
target ``x = t`` is the best ``y`` of any frontier point whose ``x`` is at least as good as ``t``
(what the deployment is known to achieve at that target), and there is no value outside the
measured range of ``x`` (no extrapolation).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


class Direction(enum.StrEnum):
    MAX = "max"  # more is better
    MIN = "min"  # less is better

    @property
    def sign(self) -> float:
        return 1.0 if self is Direction.MAX else -1.0


@dataclass(frozen=True)
class Axis:
    """One chart axis: the metric it shows and which way is better."""

    key: str
    label: str
    unit: str
    direction: Direction


def pareto_mask(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                x_dir: Direction, y_dir: Direction) -> np.ndarray:
    """Boolean mask of the frontier points. NaN / None coordinates are never on the frontier.
    O(n log n): sort by x (best first), then a running best of y over strictly better x."""
    xs = np.asarray(x, dtype=float) * x_dir.sign
    ys = np.asarray(y, dtype=float) * y_dir.sign
    n = xs.shape[0]
    mask = np.zeros(n, dtype=bool)
    valid = ~(np.isnan(xs) | np.isnan(ys))
    idx = np.nonzero(valid)[0]
    if idx.size == 0:
        return mask
    vx, vy = xs[idx], ys[idx]
    order = np.lexsort((-vy, -vx))  # x descending, then y descending (both now "more is better")
    sx, sy = vx[order], vy[order]
    starts = np.ones(sx.size, dtype=bool)
    starts[1:] = sx[1:] != sx[:-1]
    group = np.cumsum(starts) - 1
    group_best = sy[starts]  # best y of each x group (first after the sort)
    best_before = np.concatenate(([-np.inf], np.maximum.accumulate(group_best)[:-1]))
    keep = (sy == group_best[group]) & (group_best[group] > best_before[group])
    mask[idx[order[keep]]] = True
    return mask


def dominates(a: tuple[float, float], b: tuple[float, float], x_dir: Direction, y_dir: Direction) -> bool:
    ax, ay = a[0] * x_dir.sign, a[1] * y_dir.sign
    bx, by = b[0] * x_dir.sign, b[1] * y_dir.sign
    return ax >= bx and ay >= by and (ax > bx or ay > by)


@dataclass(frozen=True)
class StepFrontier:
    """The frontier of one arm as a step function of x.

    ``xs``/``ys``: frontier points sorted by x ascending (unique x). ``lo``/``hi``: the measured
    x range of *all* the arm's points: outside it the frontier has no value."""

    xs: np.ndarray
    ys: np.ndarray
    x_dir: Direction
    y_dir: Direction
    lo: float
    hi: float
    members: np.ndarray  # indices into the input of the frontier points (ties included)
    # per frontier point, the relative standard error of y (NaN: no interval), its
    # degrees of freedom (inf: normal / within-run) and the trials behind it
    rel_se: np.ndarray | None = None
    df: np.ndarray | None = None
    trials: np.ndarray | None = None
    x_rel_se: np.ndarray | None = None  # relative standard error of x (interactivity) per frontier point

    @classmethod
    def build(cls, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
              x_dir: Direction = Direction.MAX, y_dir: Direction = Direction.MAX, *,
              rel_se: Sequence[float] | np.ndarray | None = None, df: Sequence[float] | np.ndarray | None = None,
              trials: Sequence[int] | np.ndarray | None = None,
              x_rel_se: Sequence[float] | np.ndarray | None = None) -> StepFrontier:
        xa = np.asarray(x, dtype=float)
        ya = np.asarray(y, dtype=float)
        mask = pareto_mask(xa, ya, x_dir, y_dir)
        members = np.nonzero(mask)[0]
        fx, fy = xa[mask], ya[mask]
        order = np.argsort(fx, kind="stable")
        fx, fy = fx[order], fy[order]
        extra = [None if v is None else np.asarray(v, dtype=float)[mask][order] for v in (rel_se, df, trials, x_rel_se)]
        if fx.size:
            uniq = np.concatenate(([True], fx[1:] != fx[:-1]))
            fx, fy = fx[uniq], fy[uniq]
            extra = [None if v is None else v[uniq] for v in extra]
        valid = ~(np.isnan(xa) | np.isnan(ya))
        lo = float(xa[valid].min()) if valid.any() else math.nan
        hi = float(xa[valid].max()) if valid.any() else math.nan
        return cls(fx, fy, x_dir, y_dir, lo, hi, members, *extra)

    def interpolate(self, t: float) -> tuple[float, float, float, float] | None:
        """(y, relative se, df, trials) at ``t`` by linear interpolation between the frontier points
        that bracket it (continuous in ``t``, unlike the step; monotone, since frontier y never rises
        with better x). Between the measured edge and the first frontier point the step's value holds.
        None outside the measured range; se NaN where a point has no interval."""
        if self.empty or not self.covers(t):
            return None
        xs, ys = self.xs, self.ys
        rs = self.rel_se if self.rel_se is not None else np.full(xs.size, np.nan)
        ds = self.df if self.df is not None else np.full(xs.size, np.inf)
        ns = self.trials if self.trials is not None else np.ones(xs.size)
        if xs.size == 1 or t <= xs[0] or t >= xs[-1]:
            i = 0 if t <= xs[0] else xs.size - 1
            if self.x_dir is Direction.MAX and t > xs[-1] or self.x_dir is Direction.MIN and t < xs[0]:
                return None  # beyond the last frontier point no deployment reaches t
            return float(ys[i]), float(rs[i]), float(ds[i]), float(ns[i])
        j = int(np.searchsorted(xs, t, side="left"))
        if xs[j] == t:
            return float(ys[j]), float(rs[j]), float(ds[j]), float(ns[j])
        i = j - 1
        w = (t - xs[i]) / (xs[j] - xs[i])
        y = (1 - w) * ys[i] + w * ys[j]
        va = ((1 - w) * ys[i] * rs[i]) ** 2
        vb = (w * ys[j] * rs[j]) ** 2
        if self.x_rel_se is not None:  # x is measured too: its error moves y along the segment's slope
            slope = (ys[j] - ys[i]) / (xs[j] - xs[i])
            xr = np.nan_to_num(self.x_rel_se, nan=0.0)
            va += (slope * (1 - w) * xs[i] * xr[i]) ** 2
            vb += (slope * w * xs[j] * xr[j]) ** 2
        se = math.sqrt(va + vb) / y if y else math.nan
        den = (va * va / ds[i] if math.isfinite(ds[i]) else 0.0) + (vb * vb / ds[j] if math.isfinite(ds[j]) else 0.0)
        df = (va + vb) ** 2 / den if den > 0 else math.inf
        return float(y), float(se), float(df), float(min(ns[i], ns[j]))

    @property
    def empty(self) -> bool:
        return self.xs.size == 0

    def covers(self, t: float) -> bool:
        return not self.empty and self.lo <= t <= self.hi

    def values_at(self, ts: Sequence[float] | np.ndarray) -> np.ndarray:
        """y at each target x (NaN outside the measured range)."""
        t = np.asarray(ts, dtype=float)
        out = np.full(t.shape, np.nan)
        if self.empty:
            return out
        inside = (t >= self.lo) & (t <= self.hi)
        if self.x_dir is Direction.MAX:
            # frontier y is non-increasing in x: first frontier point with x >= t
            pos = np.searchsorted(self.xs, t, side="left")
            ok = inside & (pos < self.xs.size)
            out[ok] = self.ys[pos[ok]]
        else:
            # x less is better: last frontier point with x <= t
            pos = np.searchsorted(self.xs, t, side="right") - 1
            ok = inside & (pos >= 0)
            out[ok] = self.ys[pos[ok]]
        return out

    def value_at(self, t: float) -> float | None:
        v = float(self.values_at([t])[0])
        return None if math.isnan(v) else v

    def breakpoints(self) -> np.ndarray:
        """x values where the step function can change value (the frontier points' x)."""
        return self.xs.copy()

    def step_polyline(self) -> tuple[list[float], list[float]]:
        """Coordinates of the staircase for plotting (straight segments, no smoothing)."""
        if self.empty:
            return [], []
        px: list[float] = []
        py: list[float] = []
        if self.x_dir is Direction.MAX:
            # from lo to x0 at y0, then down at each frontier x
            prev = self.lo
            for x, y in zip(self.xs.tolist(), self.ys.tolist(), strict=True):
                px += [prev, x]
                py += [y, y]
                prev = x
        else:
            xs = self.xs.tolist() + [self.hi]
            for i, y in enumerate(self.ys.tolist()):
                px += [xs[i], xs[i + 1]]
                py += [y, y]
        return px, py


def grouped_pareto_mask(groups: Sequence[int] | np.ndarray, x: Sequence[float] | np.ndarray,
                        y: Sequence[float] | np.ndarray, x_dir: Direction, y_dir: Direction) -> np.ndarray:
    """:func:`pareto_mask` of every group at once (one frontier per group id), vectorised: the
    whole results table in one sort. Same semantics: ties kept, NaN never a member."""
    g_all = np.asarray(groups, dtype=np.int64)
    xs = np.asarray(x, dtype=float) * x_dir.sign
    ys = np.asarray(y, dtype=float) * y_dir.sign
    mask = np.zeros(xs.shape[0], dtype=bool)
    idx = np.nonzero(~(np.isnan(xs) | np.isnan(ys)))[0]
    if idx.size == 0:
        return mask
    g, vx, vy = g_all[idx], xs[idx], ys[idx]
    order = np.lexsort((-vy, -vx, g))  # by group, then x best first, then y best first
    sg, sx, sy = g[order], vx[order], vy[order]
    starts = np.ones(sx.size, dtype=bool)
    starts[1:] = (sg[1:] != sg[:-1]) | (sx[1:] != sx[:-1])
    xgroup = np.cumsum(starts) - 1
    best = sy[starts]  # best y of each (group, x)
    owner = sg[starts]
    _, rank = np.unique(best, return_inverse=True)  # order-preserving integers for the y values
    span = int(rank.max()) + 1
    _, gidx = np.unique(owner, return_inverse=True)
    key = gidx.astype(np.int64) * span + rank  # later groups always larger: a segmented running max
    running = np.maximum.accumulate(key)
    same = np.concatenate(([False], owner[1:] == owner[:-1]))
    before = np.where(same, np.concatenate(([-1], running[:-1])) - gidx * span, -1)
    keep = (sy == best[xgroup]) & (rank > before)[xgroup]
    mask[idx[order[keep]]] = True
    return mask
