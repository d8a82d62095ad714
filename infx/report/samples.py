"""Per-request latency samples for the report's distribution charts, from ``records.jsonl.gz``.

Reads the load generator's raw records (``infx.records``), drops warmup and failed
requests, and keeps each distribution as a quantile grid (at most 201 values), which preserves its
shape while keeping the self-contained report small. A point whose records are missing or
unreadable simply has no samples; the report then falls back to the summary percentiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from infx.diagnostics import InfxError

GRID = np.linspace(0.0, 1.0, 201)


@dataclass(frozen=True)
class LatencySamples:
    requests: int
    ttft_ms: np.ndarray
    e2el_ms: np.ndarray
    itl_ms: np.ndarray


def _grid(values: list[float]) -> np.ndarray:
    if not values:
        return np.empty(0)
    arr = np.asarray(values, dtype=float)
    return arr if arr.size <= GRID.size else np.quantile(arr, GRID)


def read_samples(path: str | Path, *, max_lines: int = 200_000) -> LatencySamples | None:
    """Latency samples of one point, or None when the records cannot be read."""
    try:
        from infx.records import RequestRecord
    except ImportError:  # the load generator is not installed: no raw distributions
        return None
    ttft: list[float] = []
    e2el: list[float] = []
    itl: list[float] = []
    n = 0
    try:
        from infx import jsonio

        for i, data in jsonio.iter_jsonl(path, what="records file"):
            if i > max_lines:
                break
            r = RequestRecord.model_validate(data)
            if r.warmup or not r.ok:
                continue
            n += 1
            if r.first_token_ns is not None:
                ttft.append((r.first_token_ns - r.send_ns) / 1e6)
            e2el.append((r.end_ns - r.send_ns) / 1e6)
            if len(r.chunk_ns) > 1:
                itl.extend((np.diff(np.asarray(r.chunk_ns, dtype=np.int64)) / 1e6).tolist())
    except (OSError, EOFError, ValueError, InfxError):  # missing, truncated gzip, bad JSON or bad record
        return None
    if n == 0:
        return None
    return LatencySamples(n, _grid(ttft), _grid(e2el), _grid(itl))
