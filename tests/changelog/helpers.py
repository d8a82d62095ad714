"""Helpers for the changelog tests: shared data paths, the seed catalog, real git repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
SEED_KEY = "dsv41flash-fp4-mi355x-vllm-agentic-dspark"


def shared_dir() -> Path:
    return Path(os.environ.get("INFX_SHARED", REPO_ROOT.parent / "shared")).resolve()


def compat_dir() -> Path:
    return shared_dir() / "compat" / "inferencex"


def real_changelog() -> bytes:
    path = compat_dir() / "perf-changelog.yaml"
    if not path.exists():
        pytest.skip(f"reference data not found at {path} (set INFX_SHARED)")
    return path.read_bytes()


def seed_entry() -> bytes:
    return (DATA / "seed-entry.yaml").read_bytes()


def seed_catalog() -> tuple[bytes, bytes]:
    """(master yaml, runners yaml): the repository's configs when they define the seed key, else the fallback copy."""
    master, runners = REPO_ROOT / "configs" / "amd-master.yaml", REPO_ROOT / "configs" / "runners.yaml"
    if master.exists() and runners.exists():
        data = yaml.safe_load(master.read_text()) or {}
        if SEED_KEY in data:
            return master.read_bytes(), runners.read_bytes()
    return (DATA / "seed-master.yaml").read_bytes(), (DATA / "seed-runners.yaml").read_bytes()


class GitRepo:
    """A throwaway repository; ``commit(files)`` writes files (bytes, or None to delete) and commits."""

    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        proc = subprocess.run(
            ["git", "-c", "user.name=infx test", "-c", "user.email=test@infx.invalid", "-c", "commit.gpgsign=false",
             "-C", str(self.path), *args],
            capture_output=True, check=True,
        )
        return proc.stdout.decode().strip()

    def commit(self, files: dict[str, bytes | None], message: str = "change") -> str:
        for rel, data in files.items():
            p = self.path / rel
            if data is None:
                p.unlink()
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")


