"""Atomic file writes: temp file in the same directory, fsync, rename. Nothing half-written."""

from __future__ import annotations

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
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, obj: Any, indent: int | None = 2) -> None:
    write_text(path, json.dumps(obj, indent=indent, sort_keys=False) + "\n")


def write_jsonl_gz(path: str | Path, rows: Iterable[Any]) -> None:
    lines = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
    write_bytes(path, gzip.compress(lines.encode("utf-8"), compresslevel=6, mtime=0))


def _writable_parent(p: Path, what: str) -> None:
    from infx.diagnostics import Diagnostic, InfxError

    anc = p.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise InfxError(Diagnostic(f"{what} '{p}' cannot be created: '{anc}' is a file, not a directory", str(p)))
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InfxError(Diagnostic(f"{what} '{p}' cannot be created: '{anc}' is not writable", str(p)))


def check_output_dir(path: str | Path, what: str = "output directory") -> None:
    """Fail up front (InfxError naming the path) when ``path`` cannot hold outputs: it is a file, or
    it (or its nearest existing parent) is not a writable directory. Called before the work whose
    results would go there, so nothing is measured and then lost at the write."""
    from infx.diagnostics import Diagnostic, InfxError

    p = Path(path)
    if p.exists() or p.is_symlink():
        if not p.is_dir():
            raise InfxError(Diagnostic(f"{what} '{p}' exists and is not a directory", str(p)))
        try:  # writable for real (a read-only mount passes os.access for root)
            fd, tmp = tempfile.mkstemp(prefix=".infx-probe.", suffix=".tmp", dir=p)
            os.close(fd)
            os.unlink(tmp)
        except OSError as exc:
            raise InfxError(Diagnostic(f"{what} '{p}' is not writable: {exc.strerror or exc}", str(p))) from None
        return
    _writable_parent(p, what)


def check_output_file(path: str | Path, what: str = "output file") -> None:
    """Fail up front when the file ``path`` cannot be written: it is a directory, or its
    directory cannot be created or written."""
    from infx.diagnostics import Diagnostic, InfxError

    p = Path(path)
    if p.is_dir():
        raise InfxError(Diagnostic(f"{what} '{p}' is a directory", str(p)))
    if p.parent.is_dir():
        check_output_dir(p.parent, f"directory of {what}")
    else:
        _writable_parent(p, what)
