"""Eval selection per topology arm (spec section 4, with the arm-grouping fix).

The reference groups single-node rows without ``tp`` (fixed: without tp/ep; agentic: only by
model/runner/framework/precision), so whole arms lose their eval and vanish under
``--evals-only``. Here an *arm* is every field that distinguishes two rows of one catalog entry
except the concurrency (and the derived exp-name and eval flags): tp, pp, dcp, pcp, ep, dp-attn,
spec-decoding, kv-offloading and backend, router, image, prefill/decode workers, runner, isl/osl.
Eligibility is the reference's: fixed rows at 8k1k with conc >= 16; single-node agentic rows
(when agentic evals are on) at the arm's max conc; multinode agentic rows, like fixed multinode
ones, at the arm's highest conc >= 16. An arm with no eligible concurrency is reported, never
given an eval. Every arm with an eligible point gets at least one eval.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

MIN_EVAL_CONC = 16
EVAL_SEQ = (8192, 1024)
Kind = Literal["fixed-sn", "fixed-mn", "agentic-sn", "agentic-mn"]

#: Fields that never distinguish an arm.
NON_ARM_FIELDS = frozenset({"conc", "exp-name", "run-eval", "eval-only", "eval-conc", "eval-all-concs", "point-id"})


@dataclass
class Gen:
    """One generated row and where it came from (the config key is not part of the row)."""

    key: str
    kind: Kind
    row: dict[str, Any]


def arm_key(g: Gen) -> tuple[str, str]:
    arm = dict(g.row)
    for k in _NON_ARM:
        arm.pop(k, None)
    return g.key, _ARM_ENCODE(arm)


_NON_ARM = tuple(sorted(NON_ARM_FIELDS))
#: ``json.dumps(obj, sort_keys=True)`` without building an encoder per call.
_ARM_ENCODE = json.JSONEncoder(sort_keys=True).encode


def arm_label(g: Gen) -> str:
    r = g.row
    if "prefill" in r:
        p, d = r["prefill"], r["decode"]
        topo = f"p{p['num-worker']}x{p['tp']} d{d['num-worker']}x{d['tp']}"
    else:
        ep = f" ep{r['ep']}" if r.get("ep", 1) != 1 else ""
        topo = f"tp{r['tp']}{ep}" + (" dp-attn" if r.get("dp-attn") else "")
    extra = []
    if "isl" in r:
        extra.append(f"{r['isl']}/{r['osl']}")
    if r.get("spec-decoding", "none") != "none":
        extra.append(f"spec {r['spec-decoding']}")
    if r.get("kv-offloading") not in (None, "none"):
        extra.append(f"kv {r['kv-offloading']}")
    if "prefill" in r and r.get("scenario-type") == "agentic-coding":
        extra.append(f"conc {_max_conc(r)}")  # multinode agentic arms are often one concurrency each
    return f"{g.key}[{', '.join([topo] + extra)} @ {r['runner']}]"


def _is_8k1k(row: dict[str, Any]) -> bool:
    return (row.get("isl"), row.get("osl")) == EVAL_SEQ


def _groups(gens: list[Gen], kind: Kind) -> dict[tuple[str, str], list[Gen]]:
    out: dict[tuple[str, str], list[Gen]] = {}
    for g in gens:
        if g.kind == kind:
            out.setdefault(arm_key(g), []).append(g)
    return out


def mark_evals(gens: list[Gen], include_agentic: bool) -> list[str]:
    """Set ``run-eval`` (and ``eval-conc`` on multinode rows). Returns labels of arms left without an eval."""
    orphans: list[str] = []
    # Fixed single-node: per arm, the max and the upper median of its eligible concs.
    for rows in _groups(gens, "fixed-sn").values():
        eligible = sorted({g.row["conc"] for g in rows if _is_8k1k(g.row) and g.row["conc"] >= MIN_EVAL_CONC})
        if not eligible:
            orphans.append(arm_label(rows[0]))
            continue
        targets = {eligible[-1], eligible[len(eligible) // 2]}
        for g in rows:
            g.row["run-eval"] = g.row["conc"] in targets and g.row["conc"] >= MIN_EVAL_CONC
    # Fixed multinode: the row with the highest eligible conc per arm, eval-conc = that conc.
    for rows in _groups(gens, "fixed-mn").values():
        best: tuple[int, Gen] | None = None
        for g in rows:
            cs = [c for c in g.row["conc"] if c >= MIN_EVAL_CONC] if _is_8k1k(g.row) else []
            if cs and (best is None or max(cs) > best[0]):
                best = (max(cs), g)
        if best is None:
            orphans.append(arm_label(rows[0]))
            continue
        best[1].row["run-eval"] = True
        best[1].row["eval-conc"] = best[0]
    for g in gens:
        if g.kind.startswith("agentic"):
            g.row["run-eval"] = False
    if include_agentic:
        for rows in _groups(gens, "agentic-sn").values():
            top = max(rows, key=lambda g: _max_conc(g.row))  # max() keeps the first on ties
            top.row["run-eval"] = True
        # Multinode agentic: as fixed multinode, the highest eligible (>= 16) conc per arm; an arm whose
        # concurrencies are all below 16 gets no eval and is reported.
        for rows in _groups(gens, "agentic-mn").values():
            best_mn: tuple[int, Gen] | None = None
            for g in rows:
                cs = [c for c in _concs(g.row) if c >= MIN_EVAL_CONC]
                if cs and (best_mn is None or max(cs) > best_mn[0]):
                    best_mn = (max(cs), g)
            if best_mn is None:
                orphans.append(arm_label(rows[0]))
                continue
            best_mn[1].row["run-eval"] = True
            best_mn[1].row["eval-conc"] = best_mn[0]
    return orphans


def _concs(row: dict[str, Any]) -> list[int]:
    c: int | list[int] = row["conc"]
    return list(c) if isinstance(c, list) else [c]


def _max_conc(row: dict[str, Any]) -> int:
    c: int | list[int] = row["conc"]  # a list on multinode rows
    return max(c) if isinstance(c, list) else c


def mark_all_evals(gens: list[Gen]) -> list[Gen]:
    """``--all-evals``: every single-node 8k1k / agentic row is an eval; multinode arms merge into one row."""
    out: list[Gen] = []
    merged: dict[tuple[str, str], Gen] = {}
    for g in gens:
        if g.kind == "agentic-sn" or (g.kind == "fixed-sn" and _is_8k1k(g.row)):
            g.row["run-eval"] = True
            out.append(g)
        elif g.kind in ("agentic-mn", "fixed-mn") and (g.kind == "agentic-mn" or _is_8k1k(g.row)):
            k = arm_key(g)
            head = merged.get(k)
            if head is None:
                head = Gen(g.key, g.kind, dict(g.row))
                merged[k] = head
                out.append(head)
            else:
                head.row["conc"] = sorted(set(head.row["conc"]) | set(g.row["conc"]))
                continue
            head.row["conc"] = sorted(set(head.row["conc"]))
        else:
            out.append(g)
    for head in merged.values():
        head.row["run-eval"] = True
        if head.kind == "fixed-mn":
            head.row.pop("eval-conc", None)
            head.row["eval-all-concs"] = True
        else:
            head.row["eval-conc"] = max(head.row["conc"])
    return out
