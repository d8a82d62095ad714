"""The run manifest: infx version, git commit, catalog and recipe hashes, images, engine version,
host facts, start and end (model: :class:`infx.results.layout.RunManifest`)."""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from infx import __version__
from infx.results.layout import HostFacts, ImageRef, RunManifest


def sha256_files(paths: Iterable[str | Path]) -> str | None:
    """One hash over several files (name and content of each, sorted by path); ``None`` for no files."""
    files = sorted({Path(p) for p in paths if Path(p).is_file()})
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def recipe_files(recipes: str | Path | Sequence[str | Path] | None) -> list[Path]:
    if recipes is None:
        return []
    items = [recipes] if isinstance(recipes, (str, Path)) else list(recipes)
    out: list[Path] = []
    for item in items:
        p = Path(item)
        out.extend(sorted(p.glob("*.y*ml")) if p.is_dir() else [p])
    return out


def git_commit(repo: str | Path | None = None) -> str | None:
    """HEAD of the workspace's git checkout (``+dirty`` when tracked files changed), or ``None`` outside
    git (default: the current workspace)."""
    if repo is None:
        from infx.workspace import current

        repo = current().root
    cwd = Path(repo)
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def host_facts() -> HostFacts:
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    accel = []
    if os.environ.get("CUDA_VISIBLE_DEVICES"):
        accel.append(f"CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']}")
    return HostFacts(hostname=socket.gethostname(), os=platform.platform(), python=platform.python_version(),
                     cpu_count=os.cpu_count(), memory_gib=mem, accelerators=accel)


def new_manifest(
    run_id: str,
    *,
    config_files: Sequence[str | Path],
    recipes: str | Path | Sequence[str | Path] | None,
    config_keys: Sequence[str],
    images: Iterable[str],
    gpus_per_node: dict[str, int] | None = None,
    previous: RunManifest | None = None,
    repo: str | Path | None = None,
) -> RunManifest:
    """The manifest at the start of an invocation. Resuming keeps the first start time and the engine
    version already recorded; the end time is set by :func:`finish_manifest`."""
    return RunManifest(
        run_id=run_id,
        infx_version=__version__,
        git_commit=git_commit(repo),
        catalog_hash=sha256_files(config_files),
        recipe_hash=sha256_files(recipe_files(recipes)),
        config_keys=list(config_keys),
        images=[ImageRef(image=i) for i in sorted(set(images))],
        engine_version=previous.engine_version if previous else None,
        host=host_facts(),
        gpus_per_node=dict(gpus_per_node or {}),
        started_at=previous.started_at if previous else time.time(),
        ended_at=None,
        description=previous.description if previous else "",
    )


def merge_engine_versions(current: str | None, versions: Iterable[str | None]) -> str | None:
    """The manifest has one engine-version field: several distinct versions are joined with ``, ``."""
    seen: list[str] = [v for v in (current or "").split(", ") if v]
    for v in versions:
        if v and v not in seen:
            seen.append(v)
    return ", ".join(seen) or None
