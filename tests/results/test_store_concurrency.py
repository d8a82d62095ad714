"""Many writers (issue 23 acceptance): 8 processes x 5,000 points ingest into one PostgreSQL and one SQLite store
at the same moment, each also writing 500 of its neighbour's points at the same time as the neighbour; every one
of the 40,000 points is present exactly once, with all its rows, and ingesting everything again changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from infx.results.store import Store
from infx.results.store.url import parse
from tests.pgserver import PgServer

REPO = Path(__file__).resolve().parents[2]
WORKERS, POINTS, OVERLAP = 8, 5000, 500


def _writers(stores: list[str]) -> list[dict[str, list[int]]]:
    start = time.time() + 25.0  # every writer has built its bundles and opened its stores by then
    env = os.environ | {"PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-m", "tests.results.concurrent_ingest", "--worker", str(w),
                               "--workers", str(WORKERS), "--points", str(POINTS), "--overlap", str(OVERLAP),
                               "--start", str(start), *stores], cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for w in range(WORKERS)]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr[-3000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def _census(url: str) -> tuple[int, int, int, str]:
    """(point rows, distinct points, result rows, a checksum of every points row's key and digest)."""
    engine = sa.create_engine(parse(url).sqlalchemy_url)
    try:
        with engine.connect() as conn:
            n = conn.execute(sa.text("SELECT COUNT(*) FROM points")).scalar_one()
            distinct = conn.execute(sa.text("SELECT COUNT(*) FROM (SELECT DISTINCT run_id, point_id FROM points) d")
                                    ).scalar_one()
            results = conn.execute(sa.text("SELECT COUNT(*) FROM results")).scalar_one()
            rows = conn.execute(sa.text("SELECT point_id, digest FROM points ORDER BY point_id")).all()
    finally:
        engine.dispose()
    import hashlib

    return n, distinct, results, hashlib.sha256(repr(rows).encode()).hexdigest()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_eight_writers_at_once_lose_and_duplicate_nothing(pg_server: PgServer, tmp_path: Path) -> None:
    stores = [pg_server.url(pg_server.create_database()), str(tmp_path / "infx.db")]
    for url in stores:
        with Store(url):  # created once, before the race (the race on creating a store is tested on its own)
            pass
    first = _writers(stores)
    total = WORKERS * POINTS
    for url in stores:
        written = sum(f[url][0] for f in first)
        unchanged = sum(f[url][1] for f in first)
        assert written == total and unchanged == WORKERS * OVERLAP, (url, written, unchanged)
        n, distinct, results, _ = _census(url)
        assert (n, distinct, results) == (total, total, total), url
    before = {url: _census(url) for url in stores}
    again = _writers(stores)
    for url in stores:
        assert sum(f[url][0] for f in again) == 0
        assert sum(f[url][1] for f in again) == total + WORKERS * OVERLAP
        assert _census(url) == before[url]
