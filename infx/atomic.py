"""Atomic file writes: temp file in the same directory, fsync, rename. Nothing half-written.

A write the file system refuses (no space, a read-only volume, a quota, no permission) is a
:class:`WriteFault`: one line naming the file, the temp file removed, exit 2 at the command line. It
is the environment's fault, not the run's, so a sweep stops on it rather than failing every point.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from infx.diagnostics import Diagnostic, InfxError

# mkstemp creates 0600 files; results and reports are meant to be read by others (umask applies).
_UMASK = os.umask(0)
os.umask(_UMASK)


class WriteFault(InfxError):
    """The file system refused a write: the path, and what it said."""

    def __init__(self, path: Path, exc: OSError) -> None:
        reason = exc.strerror or str(exc)
        hint = "; free space and run the same command again to resume" if exc.errno in _NO_SPACE else ""
        super().__init__(Diagnostic(f"cannot write {path}: {reason}{hint}", str(path)))
        self.errno = exc.errno


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def write_bytes(path: str | Path, data: bytes) -> None:
    p = Path(path)
    try:
        _write(p, data)
    except WriteFault:
        raise
    except OSError as exc:
        raise WriteFault(p, exc) from None


def _write(p: Path, data: bytes) -> None:
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise WriteFault(p, NotADirectoryError(errno.ENOTDIR, f"{p.parent} is not a directory")) from None
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
