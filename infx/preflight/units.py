"""Byte quantities as people write them (``511 GB``, ``188.8 GiB``) and as reports print them.

Cards hold sizes in the unit of their source: vendor datasheets use decimal GB, the engines log
GiB. Both parse to exact integer bytes; reports print decimal GB (the unit of the budgets that
vendors and the seed scenario quote) and GiB where the engines use it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator

_UNITS = {
    "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_SIZE = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]+)?\s*$")

GB = 10**9
GIB = 2**30
MIB = 2**20


def parse_bytes(value: Any) -> int:
    """``511e9`` / ``"511 GB"`` / ``"188.8 GiB"`` -> integer bytes (rounded to the nearest byte)."""
    if isinstance(value, bool):
        raise ValueError("a byte size must be a number or '<number> <unit>', not a boolean")
    if isinstance(value, (int, float)):
        return _checked_bytes(value, value)
    if isinstance(value, str) and len(value) <= 64:
        m = _SIZE.match(value)
        if m:
            unit = (m.group(2) or "B").lower()
            if unit in _UNITS:
                return _checked_bytes(float(m.group(1).replace("_", "")) * _UNITS[unit], value)
    raise ValueError(
        f"invalid byte size {value!r}: write a number of bytes or '<number> <unit>' "
        f"with unit one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB"
    )


#: Largest byte size accepted (an exabyte): beyond any device, and within SQLite's 64-bit integers.
MAX_BYTES = 10**18


def _checked_bytes(n: float, value: Any) -> int:
    if n != n or n in (float("inf"), float("-inf")):
        raise ValueError(f"invalid byte size {value!r}: not a finite number")
    if n < 0:
        raise ValueError("a byte size cannot be negative")
    if n > MAX_BYTES:
        raise ValueError(f"byte size {str(value)[:40]} is larger than {MAX_BYTES:.0e} bytes")
    return int(round(n))


ByteSize = Annotated[int, BeforeValidator(parse_bytes)]


def gb(n: float) -> str:
    """Decimal gigabytes with one decimal: ``289.9 GB`` (MB below 0.1 GB, so small models show)."""
    if abs(n) < 0.1 * GB:
        return f"{n / 10**6:.1f} MB"
    return f"{n / GB:.1f} GB"


def gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"
