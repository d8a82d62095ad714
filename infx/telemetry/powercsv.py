"""Reading GPU power CSVs as InferenceX does (``utils/aggregate_power.py``), so the same file gives the
same samples: nvidia-smi (``power.draw [W]`` header units, ``412.34 W`` cells, local-time
``YYYY/MM/DD HH:MM:SS.fff`` stamps) and amd-smi (``socket_power``, ``gpu``, ISO or epoch stamps).

Column detection: header cells trimmed; timestamp = first containing ``time``; power = first containing
``power`` but none of limit/cap/max/min; GPU id = one of index/gpu/gpu_id/gpu_index/card/device
(case-insensitive)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_POWER_EXCLUDED = re.compile(r"limit|cap|max|min", re.IGNORECASE)
_ID_NAMES = frozenset({"index", "gpu", "gpu_id", "gpu_index", "card", "device"})
_NA = frozenset({"[n/a]", "n/a", "na"})
_SMI_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S")


@dataclass(frozen=True)
class Columns:
    timestamp: str | None
    power: str | None
    gpu: str | None


def detect_columns(header: list[str]) -> Columns:
    names = [h.strip() for h in header]
    ts = next((n for n in names if "time" in n.lower()), None)
    pw = next((n for n in names if "power" in n.lower() and not _POWER_EXCLUDED.search(n)), None)
    gid = next((n for n in names if n.lower() in _ID_NAMES), None)
    return Columns(ts, pw, gid)


def parse_timestamp(cell: str) -> float | None:
    """Unix seconds: a bare number is epoch seconds (milliseconds above 1e12); else nvidia-smi's format,
    else ISO-8601. Naive times are local time (nvidia-smi stamps local wall time)."""
    text = cell.strip()
    if not text:
        return None
    if _NUMBER.fullmatch(text):
        value = float(text)
        return value / 1000.0 if value > 1e12 else value
    for fmt in _SMI_FORMATS:
        try:
            return datetime.strptime(text, fmt).timestamp()
        except ValueError:
            continue
    iso = text.replace(" ", "T", 1) if (" " in text and "T" not in text) else text
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        return None
    return dt.timestamp() if dt.tzinfo is None else dt.astimezone(UTC).timestamp()


def parse_power(cell: str) -> float | None:
    """Watts: the first number in the cell (``412.34 W``); ``[N/A]``/``N/A``/``NA`` are unparseable."""
    text = cell.strip()
    if not text or text.lower() in _NA:
        return None
    m = _NUMBER.search(text)
    return float(m.group(0)) if m else None


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def gpu_sort_key(gpu_id: str) -> tuple[int, int | str]:
    """Numeric ids first, in numeric order; then the others as strings."""
    return (0, int(gpu_id)) if gpu_id.isdigit() else (1, gpu_id)
