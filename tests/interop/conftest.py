from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def oracle_dir() -> Path:
    """InferenceX's own result processing (``../shared/compat/inferencex/oracle``), run, never copied."""
    d = Path(os.environ.get("INFX_SHARED", REPO / ".." / "shared")).resolve() / "compat" / "inferencex" / "oracle"
    if not (d / "process_result.py").is_file():
        pytest.skip(f"InferenceX oracle not found at {d} (set INFX_SHARED to the shared folder)")
    return d
