"""Reading an engine's log file while it grows (a single engine's, or one role's of a deployment)."""

from __future__ import annotations

from pathlib import Path


def log_size(path: Path) -> int:
    """Bytes written so far (0 before the file exists)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def log_excerpt(path: Path, start: int, end: int | None = None) -> str:
    """The text between two byte offsets (to the end when ``end`` is None); undecodable bytes replaced."""
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read() if end is None else fh.read(max(0, end - start))
    except FileNotFoundError:
        return ""
    return data.decode("utf-8", errors="replace")
