"""Concurrency expansion and the full-sweep min/max filters (spec 1.6, 3.2-3.4)."""

from __future__ import annotations


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


def fixed_concs(
    start: int | None,
    end: int | None,
    conc_list: list[int] | None,
    *,
    step: int = 2,
    min_conc: int | None = None,
    max_conc: int | None = None,
) -> list[int]:
    """Single-node fixed-seq-len concurrencies with the full-sweep min/max semantics.

    ``--min-conc`` skips a range that ends below it and otherwise raises its start; ``--max-conc``
    clamps the end, and a range (or list) with nothing <= max becomes ``[max]``, exactly like the
    reference (which can therefore create a point the catalog never configured).
    """
    if conc_list:
        concs = list(conc_list)
        if min_conc is not None:
            concs = [c for c in concs if c >= min_conc]
            if not concs:
                return []
        if max_conc is not None:
            concs = [c for c in concs if c <= max_conc] or [max_conc]
        return concs
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


def list_concs(
    start: int | None,
    end: int | None,
    conc_list: list[int] | None,
    *,
    step: int = 2,
    min_conc: int | None = None,
    max_conc: int | None = None,
    fabricate: bool = True,
) -> list[int]:
    """Expanded list (multinode fixed rows, agentic) filtered by min/max.

    Multinode fixed rows fall back to ``[max_conc]`` when nothing is <= max (``fabricate``);
    agentic filters never add a point.
    """
    concs = list(conc_list) if conc_list else expand_range(start or 1, end or 1, step)
    if min_conc is not None:
        concs = [c for c in concs if c >= min_conc]
    if max_conc is not None:
        kept = [c for c in concs if c <= max_conc]
        concs = kept or ([max_conc] if fabricate and concs else [])
    return concs
