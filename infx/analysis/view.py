"""The latest curves (or the curves as they stood at a date or a run) as one analysable set: every curve scope
drawn from its one snapshot (``infx.results.store.snapshots``), so no frontier mixes two runs unless an
append-only chain under one image says so.

The view goes by one id where a run id would (``latest``, ``as-of:2026-11-30``, ``as-of:RUN``; never a run id,
which cannot hold ``:``), so frontiers, arm comparisons and run-vs-baseline comparisons work on it unchanged. Each
point keeps the run that measured it (``Measured.source_run``); two scopes that would share an arm label (the same
topology with different launch settings) get the scope's key appended, so they stay two curves.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel

from infx.analysis.dataset import ArmKey, GpusPerNode, Measured, gpus_per_node_resolver, measured_from_rows
from infx.diagnostics import Diagnostic, InfxError

if TYPE_CHECKING:
    from infx.analysis.pernode import Normalisation
    from infx.results.store import Store
    from infx.results.store.snapshots import AsOf, Snapshot


@dataclass
class ViewData:
    as_of: AsOf
    snapshots: list[Snapshot]
    measured: list[Measured]
    scope_of: dict[tuple[str, str], str] = field(default_factory=dict)  # (measuring run, point) -> curve scope
    notes: list[str] = field(default_factory=list)

    @property
    def view_id(self) -> str:
        return self.as_of.view_id

    @property
    def runs(self) -> list[str]:
        return sorted({r for s in self.snapshots for r in s.runs})

    def describe(self) -> str:
        when = "now" if self.as_of.at is None else self.as_of.label
        return (f"the newest complete snapshot of each curve as of {when}: {len(self.snapshots)} curve(s) from "
                f"run(s) {', '.join(self.runs) or 'none'}")


def load_view(store: Store, as_of: str | None = None, *, gpus_per_node: GpusPerNode | None = None) -> ViewData:
    """The view of ``store`` as of ``as_of`` (``--as-of DATE|RUN``; None: latest)."""
    when = store.as_of(as_of)
    view = store.view(when)
    if not view.snapshots:
        raise InfxError(Diagnostic(f"{store.name}: no complete snapshot of any curve "
                                   f"{'yet' if when.at is None else f'as of {when.label}'} (a run counts once its "
                                   "sweep has finished)", path=("--as-of",)))
    scope_of = {(p.run_id, p.point_id): p.scope for p in view.points}
    rows = [r for r in store.measured(view.runs) if (r.run_id, r.point_id) in scope_of]
    resolve = gpus_per_node or gpus_per_node_resolver(store)
    measured = measured_from_rows(rows, resolve, run_of=lambda _row: when.view_id)
    scopes: dict[tuple[object, ArmKey], set[str]] = defaultdict(set)
    for m in measured:
        scopes[(m.workload, m.arm)].add(scope_of[(m.measured_in, m.point_id)])
    out = []
    for m in measured:
        if len(scopes[(m.workload, m.arm)]) > 1:  # two curves would share a label: keep them apart
            scope = scope_of[(m.measured_in, m.point_id)]
            m = dataclasses.replace(m, arm=ArmKey(f"{m.arm.topology} [{scope[:8]}]", m.arm.spec_decoding,
                                                  m.arm.kv_offloading))
        out.append(m)
    data = ViewData(when, view.snapshots, out, scope_of)
    data.notes = [f"curve {s.scope[:8]}: {s.note}" for s in view.snapshots if s.note]
    return data


class CurvePoint(BaseModel):
    run_id: str  # the run that measured it
    point_id: str
    conc: int
    x: float | None
    y: float | None
    on_frontier: bool


class Curve(BaseModel):
    """One curve of a view: its snapshot (the runs, newest first) and its points."""

    scope: str
    workload: str
    arm: str
    runs: list[str]
    note: str | None = None
    points: list[CurvePoint]


def curves(data: ViewData, *, norm: Normalisation = "gpu") -> list[Curve]:
    """Every curve of the view with its points and frontier membership (``/api/frontiers``)."""
    from infx.analysis.dataset import frontier_membership

    measured = data.measured
    if norm == "node" and any(m.gpus_per_node is None for m in measured):
        norm = "gpu"
    mask = frontier_membership(measured, norm=norm)
    scope_of = data.scope_of
    snap = {s.scope: s for s in data.snapshots}
    groups: dict[str, list[tuple[Measured, bool]]] = defaultdict(list)
    for m, on in zip(measured, mask.tolist(), strict=True):
        groups[scope_of[(m.measured_in, m.point_id)]].append((m, bool(on)))
    out = []
    for scope, members in sorted(groups.items()):
        first = members[0][0]
        out.append(Curve(scope=scope, workload=first.workload.label, arm=first.arm.label, runs=list(snap[scope].runs),
                         note=snap[scope].note,
                         points=[CurvePoint(run_id=m.measured_in, point_id=m.point_id, conc=m.conc,
                                            x=m.x("interactivity"), y=m.throughput("total", norm),
                                            on_frontier=on) for m, on in sorted(members, key=lambda p: p[0].conc)]))
    return out
