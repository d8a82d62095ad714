"""Rules that span a whole master entry (spec 1.5), each reported at the offending YAML node.

Returned as ``(path-inside-the-entry, message)`` pairs so every violation of an entry is
reported at once, not only the first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from infx.catalog.schema import (
    CLUSTER_LABEL_PREFIX,
    MasterEntry,
    MultiNodeFixedSeqLen,
    MultiNodeMasterEntry,
    SingleNodeFixedSeqLen,
)
from infx.diagnostics import PathElem

Problem = tuple[tuple[PathElem, ...], str]

#: KV transfer backends the deployment renderers know (an unknown one would render as another silently).
KNOWN_KV_TRANSFERS = ("example-connector", "mooncake", "mori", "nixl", "ucx")


def _search_space_entries(entry: MasterEntry) -> Iterator[tuple[tuple[PathElem, ...], object]]:
    fixed: Sequence[SingleNodeFixedSeqLen | MultiNodeFixedSeqLen] = entry.scenarios.fixed_seq_len
    for i, item in enumerate(fixed):
        for j, ss in enumerate(item.search_space):
            yield ("scenarios", "fixed-seq-len", i, "search-space", j), ss
    for i, ag in enumerate(entry.scenarios.agentic_coding):
        for j, ss in enumerate(ag.search_space):
            yield ("scenarios", "agentic-coding", i, "search-space", j), ss


def entry_problems(entry: MasterEntry) -> list[Problem]:
    out: list[Problem] = []
    if entry.scenarios.agentic_coding and not entry.runner.startswith(CLUSTER_LABEL_PREFIX):
        out.append((("runner",), "Agentic master configs must use a 'cluster:<name>' runner so every point "
                    "runs on one exact hardware fleet."))
    top_p2p = entry.kv_p2p_transfer if isinstance(entry, MultiNodeMasterEntry) else None
    entries = list(_search_space_entries(entry))
    for field, top in (("router", entry.router), ("kv-p2p-transfer", top_p2p)):
        if top is None:
            continue
        attr = field.replace("-", "_")
        for path, ss in entries:
            if getattr(ss, attr, None) is not None:
                out.append((path + (field,), f"{field} must be declared either at the top level or in "
                            "search-space entries, not both"))
    for path, obj in [((), entry), *entries]:
        kv = getattr(obj, "kv_p2p_transfer", None)
        if kv is not None and kv not in KNOWN_KV_TRANSFERS:
            out.append((path + ("kv-p2p-transfer",), f"unknown kv-p2p-transfer {kv!r} (known: "
                        f"{', '.join(KNOWN_KV_TRANSFERS)})"))
    for path, ss in entries:
        if getattr(ss, "kv_p2p_transfer", None) is not None and not entry.multinode:
            out.append((path + ("kv-p2p-transfer",), "a search-space 'kv-p2p-transfer' requires multinode=true"))
    for path, ss in entries:  # a deployment needs a worker pool that serves
        pre, dec = getattr(ss, "prefill", None), getattr(ss, "decode", None)
        if pre is not None and dec is not None and pre.num_worker == 0 and dec.num_worker == 0:
            out.append((path + ("decode", "num-worker"), "decode workers = 0 and prefill workers = 0: the deployment "
                        "has no worker (a row with an empty pool is aggregated on the other pool)"))
    if isinstance(entry, MultiNodeMasterEntry) and entry.disagg and top_p2p is None:
        missing = [path for path, ss in entries if getattr(ss, "kv_p2p_transfer", None) is None]
        if missing:
            out.append((("disagg",), "disagg=true requires kv-p2p-transfer at the top level or in every "
                        f"search-space entry ({len(missing)} entries lack it)"))
    return out
