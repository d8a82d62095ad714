"""``infx matrix ... --github-matrix``: matrix rows sorted into the buckets a GitHub Actions workflow fans
out over (one job per row through ``.github/workflows/infx-point.yml``).

Buckets (same names as the reference system's sweep workflow):

* ``single_node``: ``{"1k1k" | "8k1k" | "<isl>_<osl>" | "agentic": [rows]}``: throughput rows;
* ``multi_node``: the same keys, multinode (disaggregated) rows;
* ``evals`` (single-node fixed-seq-len), ``agentic_evals``, ``multinode_evals``, ``multinode_agentic_evals``:
  eval-only rows.

A throughput row that also carries ``run-eval: true`` stays a throughput row (its job runs the eval after
measuring). Each row keeps the matrix stage's exact JSON form (hyphenated keys, ``point-id``), so the job
passes it to ``infx run-point --row`` unchanged. Empty buckets are kept as ``[]``/``{}`` so a workflow can
test them (``if: ... != '[]'``): GitHub rejects a matrix with no entries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import ConfigDict

from infx.matrix.buckets import MatrixBuckets, is_agentic, is_multinode, seq_family

Row = dict[str, Any]

#: GitHub Actions runs at most this many jobs from one matrix.
MAX_JOBS_PER_MATRIX = 256


class GithubMatrix(MatrixBuckets):
    model_config = ConfigDict(extra="forbid")

    def buckets(self) -> dict[str, list[Row]]:
        """Flat ``bucket path -> rows`` (``single_node.1k1k``, ``evals``...)."""
        out = {f"single_node.{k}": v for k, v in self.single_node.items()}
        out.update({f"multi_node.{k}": v for k, v in self.multi_node.items()})
        for name in ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals"):
            out[name] = getattr(self, name)
        return out

    def oversized(self) -> list[str]:
        """Buckets with more rows than one GitHub matrix may run."""
        return [f"{k} ({len(v)} rows)" for k, v in self.buckets().items() if len(v) > MAX_JOBS_PER_MATRIX]

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.model_dump(), indent=indent, separators=(",", ":") if indent is None else None)


def github_matrix(rows: Iterable[Row]) -> GithubMatrix:
    """Sort rows (in their given order) into buckets; a row whose ``point-id`` repeats is kept once."""
    m = GithubMatrix()
    seen: set[tuple[bool, str]] = set()
    for row in rows:
        eval_only = bool(row.get("eval-only"))
        ident = row.get("point-id") or json.dumps(row, sort_keys=True)
        if (eval_only, ident) in seen:
            continue
        seen.add((eval_only, ident))
        if eval_only:
            name = ("multinode_" if is_multinode(row) else "") + ("agentic_evals" if is_agentic(row) else "evals")
            getattr(m, name).append(row)
        else:
            target = m.multi_node if is_multinode(row) else m.single_node
            target.setdefault(seq_family(row), []).append(row)
    return m


def add_flag(parser: Any) -> None:
    """Add ``--github-matrix`` to an argparse parser (the matrix CLI's ``full-sweep``/``test-config``)."""
    parser.add_argument("--github-matrix", action="store_true",
                        help="print the rows as GitHub Actions buckets (single_node/multi_node by sequence "
                             "family, evals, agentic_evals, multinode_evals, multinode_agentic_evals)")


def emit(rows: list[Row]) -> str:
    """The ``--github-matrix`` output: compact JSON on one line (fits a ``$GITHUB_OUTPUT`` value)."""
    return github_matrix(rows).to_json()
