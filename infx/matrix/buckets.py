"""The change-driven matrix: rows sorted into the buckets the sweep workflow fans out.

``single_node`` / ``multi_node`` map a sequence family (``1k1k``, ``8k1k``, ``<isl>_<osl>``) or
``agentic`` to throughput rows; eval rows go to ``evals`` (single-node fixed), ``agentic_evals``,
``multinode_evals`` and ``multinode_agentic_evals``; ``changelog_metadata`` records the refs and
the raw entries that selected them. Rows stay in the matrix stage's JSON row format (hyphenated
keys, generator key order) and are typed as :class:`~infx.matrix.point.Point` on the way out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from infx.matrix.point import Point

Row = dict[str, Any]
#: ``(old row, new row) -> point-id of the new row`` (for rows whose conc list is shrunk)
Repoint = Callable[[Row, Row], str]

#: fields that do not change what an engine launch is (the recipe of a curve)
NON_RECIPE_FIELDS = frozenset({"conc", "exp-name", "recipe-fingerprint", "point-id"})
EVAL_FIELDS = frozenset({"run-eval", "eval-only", "eval-conc", "eval-all-concs"})
#: (isl, osl) -> the named sequence families; any other pair is ``<isl>_<osl>``
SEQ_FAMILIES: dict[tuple[int | None, int | None], str] = {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def recipe_fingerprint(row: Row) -> str:
    """sha256 of the canonical JSON of the row minus conc, exp-name, recipe-fingerprint (and point-id)."""
    recipe = {k: v for k, v in row.items() if k not in NON_RECIPE_FIELDS}
    return hashlib.sha256(canonical_json(recipe).encode()).hexdigest()


def with_fingerprint(row: Row) -> Row:
    out = dict(row)
    out["recipe-fingerprint"] = recipe_fingerprint(row)
    return out


def seq_family(row: Row) -> str:
    if row.get("scenario-type") == "agentic-coding":
        return "agentic"
    isl, osl = row.get("isl"), row.get("osl")
    return SEQ_FAMILIES.get((isl, osl), f"{isl}_{osl}")


def is_multinode(row: Row) -> bool:
    return "prefill" in row


def is_agentic(row: Row) -> bool:
    return row.get("scenario-type") == "agentic-coding"


def concs(row: Row) -> list[int]:
    c = row["conc"]
    return list(c) if isinstance(c, list) else [c]


def trim_conc(rows: list[Row], repoint: Repoint | None = None) -> list[Row]:
    """Keep the lowest concurrency: single-node rows that differ only in conc/exp-name collapse to
    the lowest-conc row; a multinode row's conc list becomes ``[min(conc)]``."""
    best: dict[str, Row] = {}
    order: list[str] = []
    out: list[Row | str] = []
    for row in rows:
        if is_multinode(row):
            new = dict(row)
            new["conc"] = [min(concs(row))]
            if new["conc"] != row["conc"] and repoint is not None and "point-id" in row:
                new["point-id"] = repoint(row, new)
            out.append(new)
            continue
        key = canonical_json({k: v for k, v in row.items() if k not in ("conc", "exp-name", "point-id")})
        if key not in best:
            best[key] = row
            order.append(key)
            out.append(key)
        elif row["conc"] < best[key]["conc"]:
            best[key] = row
    return [best[r] if isinstance(r, str) else r for r in out]


class ChangelogMetadata(BaseModel):
    model_config = ConfigDict(frozen=True)
    base_ref: str
    head_ref: str
    entries: list[dict[str, Any]]
    #: with ``--changed-launches``: per selected row, its bench script and the sha256 of the script and
    #: of benchmark_lib.sh at the head revision (the hashes its rendered launch's fingerprint carries)
    launches: list[dict[str, str]] | None = None


class MatrixBuckets(BaseModel):
    """Matrix rows in the GitHub workflow's buckets: throughput rows by sequence-length family,
    eval rows by kind. Shared by the changelog output and the sweep's GitHub matrix."""

    single_node: dict[str, list[Row]] = Field(default_factory=dict)
    multi_node: dict[str, list[Row]] = Field(default_factory=dict)
    evals: list[Row] = Field(default_factory=list)
    agentic_evals: list[Row] = Field(default_factory=list)
    multinode_evals: list[Row] = Field(default_factory=list)
    multinode_agentic_evals: list[Row] = Field(default_factory=list)


class ChangelogMatrix(MatrixBuckets):
    """The bucketed output (reference: ``ChangelogMatrixEntry``)."""

    model_config = ConfigDict(frozen=True)
    changelog_metadata: ChangelogMetadata

    def throughput_rows(self) -> list[Row]:
        return [r for group in (self.single_node, self.multi_node) for rows in group.values() for r in rows]

    def eval_rows(self) -> list[Row]:
        return [*self.evals, *self.agentic_evals, *self.multinode_evals, *self.multinode_agentic_evals]

    def all_rows(self) -> list[Row]:
        return [*self.throughput_rows(), *self.eval_rows()]

    def points(self) -> list[Point]:
        return [Point.from_row(r) for r in self.all_rows()]

    def counts(self) -> dict[str, int]:
        out = {f"single_node.{k}": len(v) for k, v in self.single_node.items()}
        out.update({f"multi_node.{k}": len(v) for k, v in self.multi_node.items()})
        for name in ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals"):
            out[name] = len(getattr(self, name))
        return out


class BucketBuilder:
    """Collects rows into buckets, dropping a row whose ``point-id`` (or, without one, whose
    canonical JSON) is already in the same bucket family, so overlapping entries select a point once."""

    def __init__(self) -> None:
        self.single: dict[str, list[Row]] = {}
        self.multi: dict[str, list[Row]] = {}
        self.evals: dict[str, list[Row]] = {
            k: [] for k in ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals")}
        self._seen: set[tuple[str, str]] = set()

    def _new(self, family: str, row: Row) -> bool:
        ident = row.get("point-id") or canonical_json(row)
        key = (family, str(ident))
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def add_throughput(self, row: Row) -> None:
        if not self._new("throughput", row):
            return
        target = self.multi if is_multinode(row) else self.single
        target.setdefault(seq_family(row), []).append(row)

    def add_eval(self, row: Row) -> None:
        if not self._new("eval", row):
            return
        name = ("multinode_" if is_multinode(row) else "") + ("agentic_evals" if is_agentic(row) else "evals")
        self.evals[name].append(row)

    def build(self, metadata: ChangelogMetadata) -> ChangelogMatrix:
        return ChangelogMatrix(single_node=self.single, multi_node=self.multi, changelog_metadata=metadata,
                               **self.evals)
