"""Deployment topologies checked against the runner fleet, reported at the entry's FILE:LINE.

A worker of a multinode row (``tp x pp x pcp`` GPUs) on a single-node runner (the local CPU runner) must fit
that node's ``gpus-per-node``; a larger worker can never start. A fleet is judged only when runners.yaml gives
its compute nodes (``hardware.<fleet>.nodes``): the names under a label are GitHub runners, not nodes. Runners
without hardware facts are not checked. Entry-local rules (both worker pools empty) are in
:mod:`infx.catalog.rules`.
"""

from __future__ import annotations

from typing import Any

from infx.diagnostics import Diagnostic


def _search_spaces(entry: Any) -> list[Any]:
    sc = entry.scenarios
    out = [ss for item in sc.fixed_seq_len for ss in item.search_space]
    out += [ss for item in sc.agentic_coding for ss in item.search_space]
    return out


def capacity_problems(catalog: Any, runners: Any) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for key, entry in catalog.entries.items():
        if not getattr(entry, "multinode", False):
            continue
        facts = runners.hardware.get(entry.runner)
        if facts is None:
            continue
        # Compute nodes come from the fleet's explicit 'nodes' fact; the runner names under a label are
        # GitHub runners / login nodes and are never counted. The local runner is this one host.
        count = getattr(facts, "nodes", None) or (1 if entry.runner in ("local", "cluster:local") else None)
        if count is None:
            continue  # capacity unknown: preflight's capacity check warns
        capacity = facts.gpus_per_node * count
        seen: set[str] = set()
        for ss in _search_spaces(entry):
            for role in ("prefill", "decode"):
                w = getattr(ss, role, None)
                if w is None or w.num_worker == 0:
                    continue
                gpus = w.tp * w.pp * w.pcp_size
                if gpus > capacity:
                    msg = (f"GPUs per node exceeded: a {role} worker needs {gpus} GPU(s) (tp {w.tp} x pp {w.pp} x "
                           f"pcp {w.pcp_size}) but runner '{entry.runner}' has {count} node(s) x "
                           f"{facts.gpus_per_node} GPU(s)")
                    if msg not in seen:
                        seen.add(msg)
                        out.append(catalog.diag(key, msg))
    return out
