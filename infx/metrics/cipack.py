"""The packed interval summary of a result's ``stats``: what the store keeps per result row
and the analysis reads back, so that verdicts need no ``stats`` JSON.

Layout: method (0 across trials, 1 within-run), df (NaN: normal), then for each of :data:`CI_KEYS`
(lo, hi) relative to the figure's mean, as single floats (NaN: none): 45 bytes. Rows packed before
energy had an interval hold the first four keys only (37 bytes) and are read by their length. The exact
bounds stay in result.json ``stats``.

``BenchResult.ci`` carries the same bytes (base64) in result.json, rewritten from ``stats`` whenever a
result is serialised: ingest then decodes one short string per row instead of reading five estimate
objects (``benchmarks/analysis_speed.py``).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infx.metrics.uncertainty import Estimate

CI_KEYS = ("output_tok_per_s", "total_tok_per_s", "interactivity_median", "interactivity_p90",
           "joules_per_output_token")
CI_FORMAT = struct.Struct("<Bf10f")
CI_FORMAT_4 = struct.Struct("<Bf8f")
_NO_BOUNDS = (math.nan, math.nan)


def pack_stats(stats: Mapping[str, Estimate]) -> bytes | None:
    """:data:`CI_KEYS`' intervals packed (None: no ``stats``, a result from before trials were recorded). Reads the
    estimates' fields straight from ``__dict__``, without pydantic's attribute machinery."""
    if not stats:
        return None
    get = stats.get
    vals: list[float] = []
    head = None
    for key in CI_KEYS:
        e = get(key)
        if e is None:
            vals += _NO_BOUNDS
            continue
        d = e.__dict__
        if head is None:
            head = d
        mean = d["mean"]
        vals += (d["lo"] / mean, d["hi"] / mean) if mean else _NO_BOUNDS
    if head is None:
        head = next(iter(stats.values())).__dict__
    df = head["df"]
    return CI_FORMAT.pack(head["method"] != "trials", math.nan if df is None else df, *vals)


def unpack(blob: bytes) -> tuple[str, float | None, list[tuple[float, float] | None]]:
    """(method, df, bounds relative to the mean per :data:`CI_KEYS`) of :func:`pack_stats`."""
    v = (CI_FORMAT_4 if len(blob) == CI_FORMAT_4.size else CI_FORMAT).unpack(blob)
    bounds: list[tuple[float, float] | None] = [None if math.isnan(v[i]) else (v[i], v[i + 1])
                                                for i in range(2, len(v), 2)]
    bounds += [None] * (len(CI_KEYS) - len(bounds))
    return ("trials" if v[0] == 0 else "within-run"), (None if math.isnan(v[1]) else v[1]), bounds


def encode(blob: bytes | None) -> str | None:
    return None if blob is None else base64.b64encode(blob).decode("ascii")


def decode(text: str) -> bytes:
    """The bytes of a result.json ``ci`` string; ValueError unless it is base64 of a packed summary."""
    try:
        blob = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("ci: not base64") from None
    if len(blob) not in (CI_FORMAT.size, CI_FORMAT_4.size):
        raise ValueError(f"ci: {len(blob)} bytes, not a packed interval summary ({CI_FORMAT.size})")
    return blob
