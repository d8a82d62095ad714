"""Fixtures for the review tests: the ``seed-pr`` git repository (base, head, head-fixed) built from this
repository's files, and the real local OCI registry of the preflight tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from .seedrepo import build_seed

_PREFLIGHT = Path(__file__).resolve().parents[1] / "preflight"
if str(_PREFLIGHT) not in sys.path:
    sys.path.insert(0, str(_PREFLIGHT))
_spec = importlib.util.spec_from_file_location("infx_preflight_fixtures", _PREFLIGHT / "conftest.py")
assert _spec is not None and _spec.loader is not None
_pf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_pf)
registry = _pf.registry  # the same real docker-registry fixture (session scope)


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("seed-pr") / "repo"
    return root, build_seed(root)
