"""Read files from git revisions (``git show REV:PATH``), argv lists only."""

from __future__ import annotations

import fnmatch
import subprocess
from pathlib import Path

from infx.diagnostics import Diagnostic, InfxError


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    except FileNotFoundError:
        raise InfxError("git is not installed (needed to read changelog revisions)") from None


def resolve_rev(repo: Path, rev: str) -> str:
    """Full commit id of ``rev``; an unknown revision is an InfxError."""
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if proc.returncode != 0:
        raise InfxError(f"unknown git revision '{rev}' in {repo}")
    return proc.stdout.decode().strip()


def show_file(repo: Path, rev: str, path: str) -> bytes | None:
    """Bytes of ``path`` at ``rev`` (``git cat-file blob REV:PATH``, i.e. ``git show`` without
    filters); None if the file does not exist there. A bad revision is an InfxError."""
    proc = _git(repo, "cat-file", "blob", f"{rev}:{path}")
    if proc.returncode == 0:
        return proc.stdout
    resolve_rev(repo, rev)  # raises for a bad revision
    if _git(repo, "cat-file", "-e", f"{rev}:{path}").returncode == 0:  # exists but is not a file
        raise InfxError(Diagnostic(f"'{path}' at revision '{rev}' is not a file", path))
    return None


def list_files(repo: Path, rev: str, directory: str, pattern: str) -> list[str]:
    """Paths (repo-relative, sorted) directly under ``directory`` at ``rev`` whose names match ``pattern``."""
    directory = directory.rstrip("/")
    proc = _git(repo, "ls-tree", "--name-only", rev, f"{directory}/")
    if proc.returncode != 0:
        resolve_rev(repo, rev)
        return []
    names = [line for line in proc.stdout.decode().splitlines() if line]
    return sorted(n for n in names if fnmatch.fnmatchcase(n.rsplit("/", 1)[-1], pattern))


def repo_root(start: Path) -> Path:
    proc = _git(start, "rev-parse", "--show-toplevel")
    if proc.returncode != 0:
        raise InfxError(f"{start} is not inside a git repository")
    return Path(proc.stdout.decode().strip())
