"""Both sides of a review read from git objects: refs resolved to commits, a side's workspace files
unpacked from ``git archive`` into a private temporary directory. The workspace's working tree is never
checked out or touched, and nothing is fetched."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from infx.diagnostics import Diagnostic, InfxError

#: What a side needs of the workspace (anything else in the tree is never unpacked).
WORKSPACE_PARTS = ("configs", "recipes", "cards", "benchmarks", "perf-changelog.yaml", "infx.toml",
                   "recipe-links.yaml", "runners.yaml", "amd-master.yaml", "nvidia-master.yaml")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, check=False)
    except FileNotFoundError:
        raise InfxError("git is not installed (infx review reads both sides from git objects)") from None


def repository(workspace_root: Path) -> tuple[Path, str]:
    """The git top-level holding the workspace, and the workspace's path inside it ('' at the top)."""
    proc = _git(workspace_root, "rev-parse", "--show-toplevel")
    if proc.returncode != 0:
        raise InfxError(Diagnostic(f"workspace {workspace_root} is not a git repository (infx review compares "
                                   "two commits of it)", str(workspace_root)))
    top = Path(proc.stdout.decode().strip()).resolve()
    rel = workspace_root.resolve().relative_to(top).as_posix()
    return top, "" if rel == "." else rel


def resolve_commit(top: Path, ref: str, option: str) -> str:
    """The full commit id of ``ref``; anything that is not a commit is one line naming the option."""
    if ref.startswith("-"):
        raise InfxError(Diagnostic(f"{option} '{ref}' is not a commit in {top}", f"({option})"))
    proc = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if proc.returncode != 0:
        raise InfxError(Diagnostic(f"{option} '{ref}' is not a commit in {top}", f"({option})"))
    return proc.stdout.decode().strip()


def read_blob(top: Path, sha: str, path: str) -> bytes | None:
    proc = _git(top, "cat-file", "blob", f"{sha}:{path}")
    return proc.stdout if proc.returncode == 0 else None


def _relocated(top: Path, tree: str) -> set[str]:
    """Top-level names the commit's ``infx.toml`` moves a workspace location to (``[paths] configs =
    "catalog"``); a marker that does not parse is left to the workspace loader to report."""
    import tomllib

    data = _git(top, "cat-file", "blob", f"{tree}:infx.toml")
    if data.returncode != 0:
        return set()
    try:
        paths = tomllib.loads(data.stdout.decode("utf-8")).get("paths", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return set()
    return {v.split("/", 1)[0] for v in paths.values() if isinstance(v, str) and v and not v.startswith(("/", ".."))}


def unpack(top: Path, sha: str, rel: str, dest: Path) -> Path:
    """The workspace files of commit ``sha`` under ``dest`` (``git archive``, extracted with tarfile's
    'data' filter: no links out, no devices). Returns ``dest``."""
    tree = f"{sha}:{rel}" if rel else sha
    names = _git(top, "ls-tree", "--name-only", tree)
    if names.returncode != 0:
        raise InfxError(Diagnostic(f"the workspace directory '{rel}' does not exist at {sha[:12]}", rel or "."))
    wanted = set(WORKSPACE_PARTS) | _relocated(top, tree)
    present = [n for n in names.stdout.decode().splitlines() if n in wanted]
    dest.mkdir(parents=True, exist_ok=True)
    if not present:
        return dest
    proc = _git(top, "archive", "--format=tar", tree, "--", *present)
    if proc.returncode != 0:
        raise InfxError(Diagnostic(f"git archive failed at {sha[:12]}: {proc.stderr.decode().strip()}"))
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest
