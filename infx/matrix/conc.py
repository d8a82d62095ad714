"""Concurrency expansion and the full-sweep min/max filters (spec 1.6, 3.2-3.4)."""

from __future__ import annotations

from functools import partial


def expand_range(start: int, end: int, step: int = 2) -> list[int]:
    """Geometric expansion that always ends on ``end``: 4..48 -> 4,8,16,32,48; 1..6 -> 1,2,4,6."""
    if step <= 1:
        raise ValueError("step must be > 1")
    out: list[int] = []
    c = start
    while c < end:
        out.append(c)
        c *= step
    out.append(end)
    return out


def concurrencies(
    start: int | None,
    end: int | None,
    conc_list: list[int] | None,
    *,
    step: int = 2,
    min_conc: int | None = None,
    max_conc: int | None = None,
    fabricate: bool = True,
    clamp_range: bool = False,
) -> list[int]:
    """A search-space entry's concurrencies (its list, else its range expanded) under the full-sweep
    ``--min-conc``/``--max-conc`` filters: values below min or above max are dropped, and where nothing
    is <= max the result is ``[max]`` (``fabricate``, exactly like the reference, which can therefore
    create a point the catalog never configured) or empty.

    ``clamp_range`` (single-node fixed-seq-len rows): a range is clamped before it is expanded instead:
    one that ends below min is skipped, otherwise its start is raised to min; max clamps its end.
    """
    if clamp_range and not conc_list:
        assert start is not None and end is not None
        if min_conc is not None:
            if end < min_conc:
                return []
            start = max(start, min_conc)
        if max_conc is not None:
            if start > max_conc:
                return [max_conc]
            end = min(end, max_conc)
        return expand_range(start, end, step)
    concs = list(conc_list) if conc_list else expand_range(start or 1, end or 1, step)
    if min_conc is not None:
        concs = [c for c in concs if c >= min_conc]
    if max_conc is not None:
        kept = [c for c in concs if c <= max_conc]
        concs = kept or ([max_conc] if fabricate and concs else [])
    return concs


#: Single-node fixed-seq-len rows: a range is clamped to min/max, then expanded.
fixed_concs = partial(concurrencies, clamp_range=True)
#: Multinode fixed rows (``[max]`` when nothing is <= max) and agentic rows (``fabricate=False``:
#: their filters never add a point): the expanded list, filtered.
list_concs = concurrencies
