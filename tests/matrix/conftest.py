from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    return Path(os.environ.get("INFX_SHARED", REPO / ".." / "shared")).resolve()


@pytest.fixture(autouse=True)
def _private_catalog_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the validated-catalog cache out of the user's home during tests."""
    monkeypatch.setenv("INFX_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "infx-cache"))


@pytest.fixture(scope="session")
def compat() -> Path:
    d = shared_dir() / "compat" / "inferencex"
    if not (d / "amd-master.yaml").exists():
        pytest.fail(f"compat corpus not found at {d} (set INFX_SHARED)")
    return d
