"""Atomic file writes: temp file in the same directory, fsync, rename. Nothing half-written."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# mkstemp creates 0600 files; results and reports are meant to be read by others (umask applies).
_UMASK = os.umask(0)
os.umask(_UMASK)


def write_bytes(path: str | Path, data: bytes) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        os.fchmod(fd, 0o644 & ~_UMASK)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, obj: Any, indent: int | None = 2) -> None:
    write_text(path, json.dumps(obj, indent=indent, sort_keys=False) + "\n")


def write_jsonl_gz(path: str | Path, rows: Iterable[Any]) -> None:
    lines = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
    write_bytes(path, gzip.compress(lines.encode("utf-8"), compresslevel=6, mtime=0))
