"""A team store (PostgreSQL) that goes away mid-sweep and comes back: the sweep loses no point. Each point the
store misses stays on disk with its receipt and is said in one line (``not ingested: store unreachable``); the
points after the store is back are ingested as they finish; ``infx ingest`` later stores the missed ones, every
point exactly once however often it runs. The cluster is the test's own (stopping it touches no other test); the
sweep's engine and load are the fakes (what is under test is the point-final hook into the real store)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infx.results.receipt import has_receipt
from infx.sweep.execute import Wiring, ingest_final, run_sweep
from infx.sweep.prepare import RunRequest, prepare
from tests.pgserver import PgServer, halt, resume
from tests.sweep.fakes import FakeMeasurer, FakeStarter, make_point

REPO = Path(__file__).resolve().parents[2]
CONCS = (1, 2, 4, 8)


def _render(p):  # type: ignore[no-untyped-def]
    class L:
        fingerprint = f"fp-{p.model_prefix}"
        engine, image, argv = "vllm", "img", ["serve"]

    return L()


class OutageMeasurer(FakeMeasurer):
    """Stops the store before the conc-2 point is measured and starts it again before the conc-8 one."""

    def __init__(self, server: PgServer) -> None:
        super().__init__()
        self.server = server

    def measure(self, point, engine, point_dir, progress=None):  # type: ignore[no-untyped-def]
        if point.conc == 2:
            halt(self.server)
        if point.conc == 8:
            resume(self.server)
        return super().measure(point, engine, point_dir, progress)


def _rows(server: PgServer, database: str) -> dict[str, int]:
    with server.admin() as admin:
        admin.execute("SELECT 1")  # the cluster answers
    import psycopg

    with psycopg.connect(host=server.host, port=server.port, user=server.user, dbname=database) as conn:
        return {pid: n for pid, n in conn.execute(
            "SELECT point_id, count(*) FROM points WHERE run_id = 'r' GROUP BY point_id").fetchall()}


def test_postgres_stopped_mid_sweep_then_started_ingest_stores_each_point_once(
        tmp_path: Path, monkeypatch, capsys, own_pg_server: PgServer) -> None:  # type: ignore[no-untyped-def]
    server = own_pg_server
    database = server.create_database()
    url = server.url(database)
    monkeypatch.setenv("INFX_STORE_URL", url)
    results = tmp_path / "results"
    req = RunRequest(config_files=[], runner_config="", config_keys=["k"], results=str(results), run_id="r",
                     preflight=False)
    prep = prepare(req, points=[make_point("a", 1, c) for c in CONCS], render=_render)
    rd = prep.run_dir

    summary = run_sweep(prep, Wiring(FakeStarter(), OutageMeasurer(server)), on_final=ingest_final(rd))

    # the sweep went on: every point measured once, final on disk with its receipt
    ids = [f"a-tp1-c{c}" for c in CONCS]
    assert sorted(summary.done) == sorted(ids) and not summary.failed
    for pid in ids:
        st = rd.read_status(pid)
        assert st is not None and st.state == "done" and has_receipt(rd.point_dir(pid)), pid
    # one line per point the store missed, naming the point; the reason once; the store's return said
    err = capsys.readouterr().err
    missed = [ln for ln in err.splitlines() if "not ingested: store unreachable" in ln]
    assert [ln.split()[1].rstrip(":") for ln in missed] == ["a-tp1-c2", "a-tp1-c4"], err
    assert "PostgreSQL server running" in missed[0] and "(results store" not in missed[1]
    assert all(f"infx ingest {results}" in ln for ln in missed)
    assert "the store answers again; 2 point(s)" in err
    assert "Traceback" not in err
    # the store holds what was ingested while it answered
    assert _rows(server, database) == {"a-tp1-c1": 1, "a-tp1-c8": 1}

    env = {**os.environ, "PYTHONPATH": str(REPO), "INFX_STORE_URL": url}
    for _ in range(2):  # later, and once more: the same rows
        got = subprocess.run([sys.executable, "-m", "infx", "ingest", str(results)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
        assert got.returncode == 0, got.stdout + got.stderr
        assert _rows(server, database) == dict.fromkeys(ids, 1)
    assert [p for p in results.rglob("*") if p.name.endswith(".tmp")] == []
    # the same sweep again measures nothing: every point was final on disk all along
    again = FakeMeasurer()
    rerun = run_sweep(prepare(req, points=[make_point("a", 1, c) for c in CONCS], render=_render),
                      Wiring(FakeStarter(), again), on_final=ingest_final(rd))
    assert again.measured == [] and sorted(rerun.reused) == sorted(ids) and rerun.launches == 0
    assert _rows(server, database) == dict.fromkeys(ids, 1)


def test_only_a_server_that_is_not_there_is_unreachable(own_pg_server: PgServer) -> None:
    """A refused connection is ``StoreUnreachable`` (``infx run`` keeps the point for a later ingest); a server
    that answers and refuses (a wrong password, no such database) is the ordinary one-line store error."""
    from infx.diagnostics import InfxError
    from infx.results.store import Store, StoreUnreachable
    from tests.pgserver import SECRET_ROLE

    server = own_pg_server
    database = server.create_database()
    for url in (server.url("no_such_database"), f"postgresql://{SECRET_ROLE}:wrong@{server.host}:{server.port}/x"):
        with pytest.raises(InfxError) as got:
            Store(url)
        assert not isinstance(got.value, StoreUnreachable), got.value
    Store(server.url(database)).close()
    halt(server)
    with pytest.raises(StoreUnreachable, match="Connection refused"):
        Store(server.url(database))
