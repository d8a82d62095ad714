"""Curve scopes and their snapshots: which run's points draw a curve, so a frontier never stitches runs together.

A **curve scope** is what one curve is about: model, hardware, framework, precision, scenario, ISL/OSL,
speculative decoding, disaggregation and the recipe fingerprint (:func:`recipe_fingerprint`: the point's matrix
row without its concurrency, names, ids, image and eval flags; so each topology arm is its own scope, and a
new image's sweep supersedes the curve instead of adding a second one). Each point row carries its scope's key
(``points.scope``, written at ingest).

A **normal run is an immutable full snapshot** of every scope it measured: a partial re-sweep (3 of 5
concurrencies) is the whole curve as that run saw it, never topped up with another run's points
("frankenlines", InferenceX-app #491). A run declared **append-only** (``infx run --append-only``,
``RunManifest.append_only``) adds points to the curve: it chains back through the append-only runs before it to
the nearest full snapshot, but only when every run of the chain measured the scope with exactly one image and
it is the root's image (by digest when the manifest resolved one; InferenceX-app migration 011). A chain that
breaks that rule is not followed: the newest run alone is the curve, and :attr:`Snapshot.note` says why. In a
chain the newest run's point at a concurrency wins.

**Latest** is, per scope, the newest *complete* snapshot: runs ordered by start time then id (InferenceX-app's
``latest_benchmarks`` ranks by date, start, id), measured by infx (imported runs are never the default), whose
sweep finished (``ended_at`` recorded: a run still in progress, or one that died, is not published) and that
has at least one successful point in the scope ("eligible by its successful rows"). **As of** a date or a run,
only runs that had finished by then count, so the curve reads as it stood then (``--as-of DATE|RUN``).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infx.diagnostics import Diagnostic, InfxError
from infx.matrix.buckets import EVAL_FIELDS, NON_RECIPE_FIELDS, canonical_json

#: Point-row keys that do not change which curve a point is on.
NOT_IN_SCOPE = NON_RECIPE_FIELDS | EVAL_FIELDS | {"image"}


def recipe_fingerprint(row: Mapping[str, Any]) -> str:
    """16 hex of the sha256 of the point's matrix row without :data:`NOT_IN_SCOPE` (concurrency, names, ids,
    image, eval flags): every launch setting of the curve, topology included."""
    kept = {k: v for k, v in row.items() if k not in NOT_IN_SCOPE}
    return hashlib.sha256(canonical_json(kept).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=4096)
def scope_key(model: str, hardware: str, framework: str, precision: str, scenario: str, isl: int | None,
              osl: int | None, spec_decoding: str | None, disagg: int, recipe: str | None) -> str:
    """The key of a curve scope (16 hex), as ``points.scope`` holds it."""
    ident = [model, hardware, framework, precision, scenario, isl, osl, spec_decoding or "none", int(disagg), recipe]
    return hashlib.sha256(canonical_json(ident).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------- as of


@dataclass(frozen=True)
class AsOf:
    """When the curves are read: ``at`` (unix seconds; None: now) and how it was asked for."""

    at: float | None = None
    label: str = "latest"
    run: str | None = None  # --as-of RUN: the run whose end is the moment

    @property
    def view_id(self) -> str:
        """The name the view goes by where a run id would be (``:`` is never in a run id, so they cannot meet)."""
        return "latest" if self.at is None else f"as-of:{self.label}"


LATEST = AsOf()


def parse_date(text: str) -> float | None:
    """``2026-11-30`` (the end of that day, UTC), ``2026-11-30T12:00`` / ``...Z`` / ``...+02:00`` (no zone: UTC);
    None when ``text`` is not a date."""
    value = text.strip()
    try:
        if len(value) == 10:
            day = dt.date.fromisoformat(value)
            end = dt.datetime.combine(day, dt.time.max, tzinfo=dt.UTC)
            return end.timestamp()
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


@dataclass(frozen=True)
class RunFacts:
    """What the snapshot rules need of a run."""

    run_id: str
    started_at: float | None
    ended_at: float | None
    append_only: bool
    origin: str
    images: Mapping[str, str | None]  # image reference -> digest, from the manifest

    @property
    def rank(self) -> tuple[float, str]:
        return (self.started_at if self.started_at is not None else float("-inf"), self.run_id)

    def image_id(self, image: str) -> str:
        """An image's identity: its digest when the run resolved one (or the reference pins one), else the reference."""
        digest = self.images.get(image)
        if digest:
            return digest
        return image.split("@", 1)[1] if "@sha256:" in image else image


def resolve_as_of(text: str | None, runs: Mapping[str, RunFacts]) -> AsOf:
    """``--as-of DATE|RUN``: a date, else a run of the store (the moment it finished). None: latest."""
    if text is None or text.strip() in ("", "latest", "now"):
        return LATEST
    at = parse_date(text)
    if at is not None:
        return AsOf(at=at, label=text.strip())
    name = text.strip()
    run = runs.get(name)
    if run is None:
        raise InfxError(Diagnostic(f"--as-of: {name!r} is neither a date (YYYY-MM-DD, or an ISO 8601 time) nor a "
                                   f"run of the store (runs: {', '.join(sorted(runs)) or 'none'})",
                                   path=("--as-of",)))
    if run.ended_at is None:
        raise InfxError(Diagnostic(f"--as-of: run {name!r} has not finished (no end time in its manifest): "
                                   "its curves were never published", path=("--as-of",)))
    return AsOf(at=run.ended_at, label=name, run=name)


# ---------------------------------------------------------------------------------------------- snapshots


@dataclass(frozen=True)
class ScopeRun:
    """One run's successful points in one scope (what the snapshot rules read)."""

    scope: str
    run_id: str
    images: frozenset[str]  # image references of its done points in the scope


@dataclass(frozen=True)
class Snapshot:
    """The curve of one scope: ``runs`` newest first (one run, or an append-only chain down to its root)."""

    scope: str
    runs: tuple[str, ...]
    note: str | None = None  # why a declared chain was not followed

    @property
    def head(self) -> str:
        return self.runs[0]


@dataclass(frozen=True)
class ScopePoint:
    scope: str
    run_id: str
    point_id: str
    conc: int


@dataclass
class View:
    """Every scope's snapshot as of a moment, and the points that draw them."""

    as_of: AsOf
    snapshots: list[Snapshot]
    points: list[ScopePoint] = field(default_factory=list)  # each point once

    @property
    def runs(self) -> list[str]:
        return sorted({r for s in self.snapshots for r in s.runs})


def complete(run: RunFacts, as_of: AsOf) -> bool:
    """Whether ``run``'s snapshots count at ``as_of``: measured, finished, and finished by then."""
    if run.origin != "measured" or run.ended_at is None:
        return False
    return as_of.at is None or run.ended_at <= as_of.at


def choose(scope_runs: Iterable[ScopeRun], runs: Mapping[str, RunFacts], as_of: AsOf = LATEST) -> list[Snapshot]:
    """The snapshot of every scope that has one at ``as_of`` (see the module docstring)."""
    by_scope: dict[str, list[ScopeRun]] = defaultdict(list)
    for sr in scope_runs:
        facts = runs.get(sr.run_id)
        if facts is not None and complete(facts, as_of):
            by_scope[sr.scope].append(sr)
    out = []
    for scope, members in by_scope.items():
        members.sort(key=lambda m: runs[m.run_id].rank, reverse=True)
        out.append(_snapshot(scope, members, runs))
    out.sort(key=lambda s: s.scope)
    return out


def _snapshot(scope: str, members: Sequence[ScopeRun], runs: Mapping[str, RunFacts]) -> Snapshot:
    head = members[0]
    if not runs[head.run_id].append_only:
        return Snapshot(scope, (head.run_id,))
    chain = [head]
    for m in members[1:]:
        chain.append(m)
        if not runs[m.run_id].append_only:
            break
    else:
        return Snapshot(scope, (head.run_id,), f"append-only run {head.run_id} has no full snapshot to chain to")
    ids = []
    for m in chain:
        facts = runs[m.run_id]
        ids.append({facts.image_id(i) for i in m.images})
    root = chain[-1]
    if any(len(i) != 1 for i in ids) or len({next(iter(i)) for i in ids}) != 1:
        detail = ", ".join(f"{m.run_id}: {' + '.join(sorted(i)) or 'none'}" for m, i in zip(chain, ids, strict=True))
        return Snapshot(scope, (head.run_id,), f"append-only run {head.run_id} not chained to {root.run_id}: every run "
                                               f"of a chain must have exactly one image, the root's ({detail})")
    return Snapshot(scope, tuple(m.run_id for m in chain))


def view_points(snapshots: Sequence[Snapshot], points: Iterable[ScopePoint]) -> list[ScopePoint]:
    """The points that draw the snapshots: the head run's, then each older chain run's at concurrencies no newer
    run of the chain measured."""
    wanted = {(s.scope, r): (k, s) for s in snapshots for k, r in enumerate(s.runs)}
    by_scope: dict[str, list[tuple[int, ScopePoint]]] = defaultdict(list)
    for p in points:
        hit = wanted.get((p.scope, p.run_id))
        if hit is not None:
            by_scope[p.scope].append((hit[0], p))
    out: list[ScopePoint] = []
    for members in by_scope.values():
        members.sort(key=lambda kp: (kp[0], kp[1].conc, kp[1].point_id))
        taken: dict[int, int] = {}  # conc -> the chain position that measured it
        for k, p in members:
            if taken.setdefault(p.conc, k) == k:
                out.append(p)
    return out
