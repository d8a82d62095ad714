"""Capacity at an SLO tier per arm: the searches ``infx run --search max-concurrency``
wrote to ``RUN/search/<launch>.json``, as lines for ``infx compare`` and the report."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

if TYPE_CHECKING:
    from infx.analysis.dataset import Measured


def capacity_lines(results_root: str | Path, run_ids: Sequence[str]) -> list[str]:
    """One line per search: run, template point, the maximum concurrency at the tier and the
    bracket the probes left (the maximum met, the first concurrency that missed)."""
    from infx.loadgen.search import SearchResult

    out: list[str] = []
    for run in run_ids:
        for f in sorted((Path(results_root) / run / "search").glob("*.json")):
            try:
                data = json.loads(f.read_text())
                template = str(data.pop("template_point", "?"))
                res = SearchResult.model_validate(data)
            except (OSError, ValueError, ValidationError) as exc:
                out.append(f"{run}: {f.name}: unreadable search result ({exc})")
                continue
            if res.max_conc is None:
                out.append(f"{run} {template}: max users at tier {res.tier!r}: none ({len(res.probes)} probe(s))")
                continue
            bracket = f"[{res.max_conc}, {res.first_miss})" if res.first_miss else f">= {res.max_conc}"
            out.append(f"{run} {template}: max users at tier {res.tier!r}: {res.max_conc} (probes bracket "
                       f"{bracket}, {len(res.probes)} probe(s))")
    return out


@dataclass(frozen=True)
class AtCapacity:
    """One capacity search as :func:`infx.analysis.cost.cost_at_slo` prices it: the tier, and the
    measured point of the searched launch that stands for the capacity (the launch's measured point at
    the largest concurrency not above the search's maximum; ``conc`` is that point's, ``max_conc``
    the search's)."""

    slo: str
    run_id: str
    point_id: str
    max_conc: int
    conc: int


def capacity_results(results_root: str | Path, run_ids: Sequence[str],
                     measured: Sequence[Measured]) -> list[AtCapacity]:
    """The capacity searches of ``run_ids`` (``RUN/search/<launch>.json``) matched to measured points:
    a search stands on the measured points of its launch (the file's fingerprint, else the template
    point's workload and arm); none at or below its maximum (or a tier nothing met): left out, since
    there is no measured load to price. Unreadable files are left out too (``capacity_lines`` names them)."""
    from infx.loadgen.search import SearchResult

    out: list[AtCapacity] = []
    for run in run_ids:
        mine = [m for m in measured if m.run_id == run]
        by_id = {m.point_id: m for m in mine}
        for f in sorted((Path(results_root) / run / "search").glob("*.json")):
            try:
                data = json.loads(f.read_text())
                template = str(data.pop("template_point", ""))
                res = SearchResult.model_validate(data)
            except (OSError, ValueError, ValidationError):
                continue
            if res.max_conc is None:
                continue
            launch = [m for m in mine if m.launch_fingerprint == f.stem]
            if not launch and template in by_id:
                t = by_id[template]
                launch = [m for m in mine if m.workload == t.workload and m.arm == t.arm]
            below = [m for m in launch if m.conc <= res.max_conc]
            if not below:
                continue
            best = max(below, key=lambda m: (m.conc, m.point_id))
            out.append(AtCapacity(slo=res.tier, run_id=run, point_id=best.point_id, max_conc=res.max_conc,
                                  conc=best.conc))
    return out
