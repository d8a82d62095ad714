"""The store tests run against both backends: ``store_url`` is a fresh SQLite file or PostgreSQL database
(``tests/pgserver.py``: a throwaway cluster per session; the PostgreSQL cases skip, saying why, without one)."""

from __future__ import annotations

import pytest

from tests.pgserver import pg_server, store_url

__all__ = ["pg_server", "store_url"]


@pytest.fixture(autouse=True)
def _no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's INFX_STORE_URL must not send the tests' rows into their team store."""
    monkeypatch.delenv("INFX_STORE_URL", raising=False)
