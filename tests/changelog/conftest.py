"""Fixtures for the changelog gate tests: real git repositories in a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import GitRepo, real_changelog, seed_catalog


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def seeded_repo(git_repo: GitRepo) -> tuple[GitRepo, str]:
    """Base commit: the real 772-entry changelog plus the seed catalog. Returns (repo, base sha)."""
    master, runners = seed_catalog()
    base = git_repo.commit({
        "perf-changelog.yaml": real_changelog(),
        "configs/amd-master.yaml": master,
        "configs/runners.yaml": runners,
    }, "base")
    return git_repo, base


@pytest.fixture(autouse=True)
def _no_ci_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests describe a push, not a pull request: hide the CI's own GitHub event."""
    for name in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REF", "INFX_CHANGELOG_REPO"):
        monkeypatch.delenv(name, raising=False)
