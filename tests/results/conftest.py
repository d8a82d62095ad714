"""Synthetic results directories (infx.results.synthetic: a closed-form model, not measurements)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from infx.results.layout import ResultsDir
from infx.results.synthetic import write_seed_scenario


@pytest.fixture(scope="session")
def _seed_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_seed_scenario(tmp_path_factory.mktemp("seed") / "results").root


@pytest.fixture
def seed_results(_seed_template: Path, tmp_path: Path) -> ResultsDir:
    """A fresh copy of: an official TP=4 baseline run and an unofficial PR run with TP=2 and TP=4
    arms (plus one start-up OOM and one skipped point)."""
    dest = tmp_path / "results"
    shutil.copytree(_seed_template, dest)
    return ResultsDir(dest)
