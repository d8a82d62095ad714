"""Capacity at an SLO tier per arm (issue 21): the searches ``infx run --search max-concurrency``
wrote to ``RUN/search/<launch>.json``, as lines for ``infx compare`` and the report."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError


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
