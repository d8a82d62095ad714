"""Output paths checked before work starts: ``--out``, ``-o`` and ``--results`` that point at a file
where a directory belongs (or the reverse), or at a place that cannot be written, fail up front with
one line naming the path, so a measurement is never made and then lost at the write."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from infx.diagnostics import Diagnostic, InfxError


def _writable_parent(p: Path, what: str) -> None:
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
    p = Path(path)
    if p.is_dir():
        raise InfxError(Diagnostic(f"{what} '{p}' is a directory", str(p)))
    if p.parent.is_dir():
        check_output_dir(p.parent, f"directory of {what}")
    else:
        _writable_parent(p, what)
