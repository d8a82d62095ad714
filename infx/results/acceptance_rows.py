"""The ``acceptance`` table (revision 0010): one row per role of a speculative-decoding point, or of any point
whose engine reported spec-decode counters. ``state`` is ``measured``, ``gauge``, ``not_reported`` (the engine
has no such series: the figures are NULL, never 0) or ``invalid`` (``reason`` says why); ``acceptance`` is
``synthetic`` when the launch forced the length (``synthetic_al``, ``via``), else ``measured``."""

from __future__ import annotations

import json
from typing import Any

from infx.metrics.result import BenchResult
from infx.metrics.sections import RoleAcceptance

#: The order of :func:`acceptance_rows`' values: the ``acceptance`` table's columns (a test keeps them equal).
COLUMNS = (
    "run_id", "point_id", "role", "method", "acceptance", "synthetic_al", "via", "state", "reason", "drafts",
    "draft_tokens", "accepted", "acceptance_length", "acceptance_length_lo", "acceptance_length_hi",
    "acceptance_rate", "acceptance_rate_lo", "acceptance_rate_hi", "per_position_json", "trials_json",
)


def roles_of(r: BenchResult) -> list[RoleAcceptance]:
    """The result's per-role acceptance; a spec-decoding point measured without ``/metrics`` has one
    ``not_reported`` role (so the store says so rather than holding nothing)."""
    tel = r.extra.telemetry
    roles = list(tel.acceptance) if tel is not None else []
    spec = r.extra.spec_decode
    if spec is None:
        return [a for a in roles if a.state in ("measured", "gauge", "invalid")]
    return roles or [RoleAcceptance(state="not_reported", reason="no /metrics scraped (telemetry off)")]


def acceptance_rows(run_id: str, point_id: str, r: BenchResult) -> list[tuple[Any, ...]]:
    spec = r.extra.spec_decode
    out = []
    for a in roles_of(r):
        w = a.window
        al = a.acceptance_length_mean if a.state != "gauge" else a.gauge_acceptance_length
        out.append((run_id, point_id, a.role, spec.method if spec else None, spec.acceptance if spec else None,
                    spec.synthetic_al if spec else None, spec.via if spec else None, a.state, a.reason,
                    w.drafts if w else None, w.draft_tokens if w else None, w.accepted if w else None,
                    al, a.acceptance_length_lo, a.acceptance_length_hi, a.acceptance_rate_mean,
                    a.acceptance_rate_lo, a.acceptance_rate_hi, json.dumps(w.per_position if w else []),
                    json.dumps([t.model_dump() if t is not None else None for t in a.trials])))
    return out
