"""Deployment topologies checked against the runner fleet (issue 15), reported at the entry's FILE:LINE.

A worker of a multinode row (``tp x pp x pcp`` GPUs) on a single-node runner (the local CPU runner) must fit
that node's ``gpus-per-node``; a larger worker can never start. Fleets of several nodes are judged by
preflight's capacity check (runners.yaml often lists only a sample of a fleet's nodes), runners without
hardware facts are not checked. Entry-local rules (both worker pools empty) are in
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
        nodes = runners.labels.get(entry.runner)
        if facts is None or not nodes or len(nodes) != 1:
            continue  # runners.yaml files list a sample of a big fleet's nodes: preflight's capacity check judges those
        capacity = facts.gpus_per_node * len(nodes)
        seen: set[str] = set()
        for ss in _search_spaces(entry):
            for role in ("prefill", "decode"):
                w = getattr(ss, role, None)
                if w is None or w.num_worker == 0:
                    continue
                gpus = w.tp * w.pp * w.pcp_size
                if gpus > capacity:
                    msg = (f"GPUs per node exceeded: a {role} worker needs {gpus} GPU(s) (tp {w.tp} x pp {w.pp} x "
                           f"pcp {w.pcp_size}) but runner '{entry.runner}' has {len(nodes)} node(s) x "
                           f"{facts.gpus_per_node} GPU(s)")
                    if msg not in seen:
                        seen.add(msg)
                        out.append(catalog.diag(key, msg))
    return out
