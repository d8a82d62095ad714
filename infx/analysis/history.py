"""Historical and reliability views of the store.

**Historical**: one curve of the main view (a model, scenario and precision on one hardware, framework, spec method
and agg/disagg) read at a chosen x (an interactivity), as of each date: the curves as they stood then (the store's
as-of snapshots), the newest run's envelope of that curve, interpolated between its two bracketing envelope points
(:meth:`StepFrontier.interpolate`, no extrapolation) with a 95 % interval. A date whose image or launch recipe
differs from the date before is marked as a step.

**Reliability**: done / failed / skipped points per hardware and runner in each run, with the failure classes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from infx.analysis.mainview import MainView, group_frontier, load_main_view

if TYPE_CHECKING:
    from infx.analysis.costmodel import CostModel
    from infx.results.store import Store

Z95 = 1.959963984540054


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CurveSel(_M):
    """Which curve: the chart (model, scenario, ISL/OSL, precision) and the group (hardware, framework, spec,
    agg/disagg); the run is whichever measured it last as of each date."""

    model: str
    scenario: str
    isl: int | None = None
    osl: int | None = None
    precision: str
    hardware: str
    framework: str
    spec: str = "none"
    disagg: bool = False


class HistoryPoint(_M):
    date: str
    at: float | None
    run_id: str | None = None
    value: float | None = None  # None: no curve then, or the target outside its measured range
    lo: float | None = None
    hi: float | None = None
    images: list[str] = []
    launches: list[str] = []
    step: bool = False  # a new image or launch recipe since the date before
    note: str = ""


class History(_M):
    curve: CurveSel
    x: str
    y: str
    target: float
    points: list[HistoryPoint]


def _group_of(view: MainView, sel: CurveSel) -> int | None:
    """The selected curve's group in ``view``: of the newest run when several runs measured parts of it."""
    ended = {r.run_id: (r.ended_at or -math.inf, r.run_id) for r in view.runs}
    best: tuple[tuple[float, str], int] | None = None
    for g in view.groups:
        c = view.charts[g.chart]
        if (c.model, c.scenario, c.isl, c.osl, c.precision, g.hardware, g.framework, g.spec, g.disagg) != (
                sel.model, sel.scenario, sel.isl, sel.osl, sel.precision, sel.hardware, sel.framework, sel.spec,
                sel.disagg):
            continue
        rank = ended.get(g.run_id, (-math.inf, g.run_id))
        if best is None or rank > best[0]:
            best = (rank, g.id)
    return None if best is None else best[1]


def history_dates(store: Store) -> list[str]:
    """Every moment a measured run finished (the dates the curves changed), oldest first, as run ids."""
    facts = store.run_facts()
    done = sorted((f.ended_at, f.run_id) for f in facts.values() if f.origin == "measured" and f.ended_at is not None)
    return [r for _, r in done]


def history(store: Store, sel: CurveSel, target: float, *, x: str = "interactivity", y: str = "tput_gpu_total",
            dates: Sequence[str] | None = None, model: CostModel | None = None,
            gpus_per_node: int | None = None) -> History:
    """``sel``'s ``y`` at ``x = target`` as of each of ``dates`` (dates or run ids; default: each run's end)."""
    from infx.analysis.costmodel import load_cost_model
    from infx.diagnostics import InfxError

    model = model or load_cost_model()
    out: list[HistoryPoint] = []
    prev: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    for date in (list(dates) if dates is not None else history_dates(store)):
        try:
            view = load_main_view(store, as_of=date, model=model, gpus_per_node=gpus_per_node)
        except InfxError as exc:  # nothing had finished by then
            out.append(HistoryPoint(date=date, at=None, note=str(exc).splitlines()[0]))
            continue
        when = store.as_of(date)
        gid = _group_of(view, sel)
        if gid is None:
            out.append(HistoryPoint(date=date, at=when.at, note="no such curve then"))
            continue
        idx = [i for i, g in enumerate(view.points.group) if g == gid]
        images = sorted({view.points.image[i] for i in idx})
        launches = sorted({fp for i in idx if (fp := view.points.launch[i]) is not None})
        key = (tuple(images), tuple(launches))
        step = prev is not None and key != prev
        prev = key
        f = group_frontier(view, gid, x, y)
        got = f.interpolate(target)
        hp = HistoryPoint(date=date, at=when.at, run_id=view.groups[gid].run_id, images=images, launches=launches,
                          step=step)
        if got is None:
            hp.note = f"{target:g} is outside the curve's measured range then"
        else:
            v, rel_se, _df, _n = got
            hp.value = v
            if math.isfinite(rel_se):
                hp.lo, hp.hi = v * (1 - Z95 * rel_se), v * (1 + Z95 * rel_se)
        out.append(hp)
    return History(curve=sel, x=x, y=y, target=target, points=out)


class ReliabilityRow(_M):
    run_id: str
    started_at: float | None
    hardware: str
    runner: str
    done: int = 0
    failed: int = 0
    skipped: int = 0
    other: int = 0
    failure_classes: dict[str, int] = {}

    @property
    def success_rate(self) -> float | None:
        tried = self.done + self.failed
        return self.done / tried if tried else None


def reliability(store: Store) -> list[ReliabilityRow]:
    """Done / failed / skipped per (run, hardware, runner), with the failure classes of the failed and skipped."""
    rows: dict[tuple[str, str, str], ReliabilityRow] = {}
    classes: dict[tuple[str, str, str], dict[str, int]] = defaultdict(dict)
    for c in store.outcome_counts():
        key = (c.run_id, c.hardware, c.runner)
        row = rows.setdefault(key, ReliabilityRow(run_id=c.run_id, started_at=c.started_at, hardware=c.hardware,
                                                  runner=c.runner))
        if c.state in ("done", "failed", "skipped"):
            setattr(row, c.state, getattr(row, c.state) + c.n)
        else:
            row.other += c.n
        if c.state != "done":
            name = c.failure_class or "unclassified"
            classes[key][name] = classes[key].get(name, 0) + c.n
    for key, row in rows.items():
        row.failure_classes = dict(sorted(classes[key].items()))
    return list(rows.values())
