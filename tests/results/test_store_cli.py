"""The store's commands and the --store / INFX_STORE_URL / infx.toml choice, on both backends, and bad stores as
one line naming the store (never its password), exit 2, nothing written."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from infx.cli import _register_all, app
from infx.results.layout import ResultsDir
from infx.results.store import SCHEMA_VERSION, Store
from infx.results.store.url import mask, parse
from tests.pgserver import SECRET_PASSWORD, SECRET_ROLE, PgServer
from tests.results.storecases import DAY, T0, write_run

_register_all()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "store"


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args), env=env)
    return r.exit_code, r.stdout, r.stderr


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_ingest_compare_and_report_on_the_chosen_store(store_url: str, seed_results: ResultsDir, tmp_path: Path
                                                       ) -> None:
    code, out, err = cli("ingest", str(seed_results.root), "--store", store_url)
    assert code == 0, err
    assert "24 point(s) ingested" in out
    code, out, err = cli("compare", str(seed_results.root), "--store", store_url, "--run", "pr-1234", "-a", "tp=2",
                         "-b", "tp=4", "--gpus-per-node", "8", "--json")
    assert code == 0, err
    assert json.loads(out)["comparisons"]
    report = tmp_path / "r.html"
    code, out, err = cli("report", str(seed_results.root), "--store", store_url, "--gpus-per-node", "8", "-o",
                         str(report))
    assert code == 0, err and report.is_file()
    if not store_url.startswith("postgresql"):
        assert Path(store_url).is_file() and not seed_results.db_path.exists()  # only the chosen store was written


def test_the_environment_and_infx_toml_choose_the_store(store_url: str, seed_results: ResultsDir, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = cli("ingest", str(seed_results.root), env={"INFX_STORE_URL": store_url})
    assert code == 0, err
    with Store(store_url) as st:
        assert st.counts()["points"] == 24
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "infx.toml").write_text(f'[store]\nurl = "{store_url}"\n')
    monkeypatch.chdir(ws)
    code, out, err = cli("store", "quarantine")
    assert code == 0, err
    assert "nothing quarantined" in out and parse(store_url).display in out
    code, out, err = cli("workspace", "--json")
    assert code == 0, err
    assert json.loads(out)["store"]["path"] == parse(store_url).display


def test_as_of_on_compare_and_report(store_url: str, tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, "full", (1, 2, 4, 8, 16), started=T0)
    write_run(root, "resweep", (4, 8, 16), started=T0 + DAY, scale=1.3, seed=1)
    write_run(root, "wide", (1, 2, 4, 8, 16), started=T0 + 2 * DAY, tp=8, ended=None, seed=2)  # still running
    code, out, err = cli("compare", str(root), "--store", store_url, "--run", "resweep", "--as-of", "full",
                         "--gpus-per-node", "8", "--per", "gpu", "--json")
    assert code == 0, err
    cs = json.loads(out)
    assert cs["comparisons"] and "as-of:full" in json.dumps(cs)
    html = tmp_path / "latest.html"
    code, out, err = cli("report", str(root), "--store", store_url, "--as-of", "latest", "--gpus-per-node", "8",
                         "-o", str(html))
    assert code == 0, err
    text = html.read_text()
    assert "resweep" in text and "newest complete snapshot" in text
    code, _, err = cli("compare", str(root), "--store", store_url, "--as-of", "wide")
    assert code == 2 and "has not finished" in one_line(err)


def test_store_migrate_upgrades_the_kept_store_and_copy_takes_it(store_url: str, tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema7.db", old)
    code, out, err = cli("store", "migrate", "--store", str(old))
    assert code == 0, err
    assert f"revision 0007 -> revision {SCHEMA_VERSION:04d}" in out
    code, out, _ = cli("store", "migrate", "--store", str(old))
    assert "nothing to do" in out
    code, out, err = cli("store", "copy", str(old), store_url)
    assert code == 0, err
    assert "25 point(s) copied, 0 unchanged" in out
    code, out, err = cli("store", "copy", str(old), store_url)
    assert code == 0 and "0 point(s) copied, 25 unchanged" in out, err
    code, _, err = cli("store", "copy", str(tmp_path / "missing.db"), store_url)
    assert code == 2 and "missing.db" in one_line(err)


def test_store_quarantine_lists_refusals_with_their_rule(seed_results: ResultsDir) -> None:
    path = seed_results.file("pr-1234", "dsv41flash_tp4_conc16_kvnone_spec-mtp", "result.json")
    path.write_text(path.read_text()[:200])
    code, _, _ = cli("ingest", str(seed_results.root))
    assert code == 0
    code, out, err = cli("store", "quarantine", "--results", str(seed_results.root))
    assert code == 0, err
    assert "1 quarantined row(s)" in out and "[unreadable]" in out and str(path) in out
    code, out, _ = cli("store", "quarantine", "--results", str(seed_results.root), "--json")
    assert json.loads(out)[0]["rule"] == "unreadable"


# ------------------------------------------------------------------------------------------- bad stores


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_server_is_one_line_without_the_password(seed_results: ResultsDir) -> None:
    url = f"postgresql://infx:hunter2@127.0.0.1:{_closed_port()}/results"
    code, _, err = cli("ingest", str(seed_results.root), "--store", url)
    line = one_line(err)
    assert code == 2 and mask(url) in line and "hunter2" not in err
    assert "is the PostgreSQL server running" in line
    assert not seed_results.db_path.exists()


def test_wrong_credentials_are_one_line_and_right_ones_come_from_the_environment(
        pg_server: PgServer, seed_results: ResultsDir, tmp_path: Path) -> None:
    db = pg_server.create_database(owner=SECRET_ROLE)
    url = pg_server.url(db, user=SECRET_ROLE)
    code, _, err = cli("ingest", str(seed_results.root), "--store", url, env={"PGPASSWORD": "wrong-one"})
    line = one_line(err)
    assert code == 2 and "password authentication failed" in line and url in line and "wrong-one" not in err
    with_pw = url.replace(f"{SECRET_ROLE}@", f"{SECRET_ROLE}:not-{SECRET_PASSWORD}@")
    code, _, err = cli("ingest", str(seed_results.root), "--store", with_pw)
    assert code == 2 and f"not-{SECRET_PASSWORD}" not in err and f"{SECRET_ROLE}:***@" in one_line(err)
    code, _, err = cli("ingest", str(seed_results.root), "--store", url, env={"PGPASSWORD": SECRET_PASSWORD})
    assert code == 0, err
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{pg_server.port}:{db}:{SECRET_ROLE}:{SECRET_PASSWORD}\n")
    pgpass.chmod(0o600)
    code, out, err = cli("ingest", str(seed_results.root), "--store", url, env={"PGPASSFILE": str(pgpass)})
    assert code == 0 and "24 unchanged" in out, err
    # the password is in no row of the store, and no manifest names the store
    engine = sa.create_engine(pg_server.url(db).replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as conn:
        dump = repr(conn.execute(sa.text("SELECT * FROM runs")).all()) + repr(
            conn.execute(sa.text("SELECT * FROM points")).all())
    engine.dispose()
    assert SECRET_PASSWORD not in dump and str(pg_server.port) not in dump


def test_a_newer_team_store_is_refused_and_left_as_it_was(pg_server: PgServer, seed_results: ResultsDir) -> None:
    url = pg_server.url(pg_server.create_database())
    with Store(url):
        pass
    engine = sa.create_engine(parse(url).sqlalchemy_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0099'"))
    code, _, err = cli("ingest", str(seed_results.root), "--store", url)
    line = one_line(err)
    assert code == 2 and "newer than this infx" in line and url in line
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT COUNT(*) FROM runs")).scalar_one() == 0
    engine.dispose()


def test_a_corrupt_sqlite_store_is_one_line(seed_results: ResultsDir, tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    code, _, err = cli("ingest", str(seed_results.root), "--store", str(bad))
    line = one_line(err)
    assert code == 2 and str(bad) in line and "not an infx results database, or damaged" in line
    assert bad.read_bytes().startswith(b"SQLite format 3\x00\xff")  # left as it was
    code, _, err = cli("store", "copy", str(bad), str(tmp_path / "dst.db"))
    assert code == 2 and str(bad) in one_line(err)
    assert not (tmp_path / "dst.db").exists()  # nothing made when the source cannot be read


def test_a_malformed_store_url_is_one_line() -> None:
    code, _, err = cli("store", "migrate", "--store", "mysql://u:pw@h/db")
    line = one_line(err)
    assert code == 2 and "unsupported store URL scheme" in line and "pw" not in line.split("scheme")[1]


def test_status_lists_the_quarantine(seed_results: ResultsDir) -> None:
    path = seed_results.file("pr-1234", "dsv41flash_tp4_conc16_kvnone_spec-mtp", "status.json")
    path.write_text("{not json")
    assert cli("ingest", str(seed_results.root))[0] == 0
    code, out, err = cli("status", str(seed_results.root))
    assert code == 0, err
    assert "quarantined by ingest: 1 row(s)" in out and "[unreadable]" in out
    code, out, _ = cli("status", str(seed_results.root / "pr-1234"), "--json")
    (run,) = json.loads(out)
    assert [e["rule"] for e in run["quarantine"]] == ["unreadable"]


def test_an_append_only_run_is_recorded_in_its_manifest(tmp_path: Path) -> None:
    """``infx run --append-only``: the run's manifest carries the flag the store chains on; resuming keeps it."""
    from infx.sweep.prepare import RunRequest, prepare, start_invocation

    repo = Path(__file__).resolve().parents[2]
    req = RunRequest(config_files=[str(repo / "configs" / "cpu-master.yaml")],
                     runner_config=str(repo / "configs" / "runners.yaml"), config_keys=["tinyllama-bf16-cpu-vllm"],
                     results=str(tmp_path), run_id="more", workspace=str(repo), append_only=True)
    prep = prepare(req)
    start_invocation(prep)
    assert prep.run_dir.read_manifest().append_only is True
    start_invocation(prepare(req.model_copy(update={"append_only": False})))  # resumed without the flag
    assert prep.run_dir.read_manifest().append_only is True
    plain = prepare(req.model_copy(update={"run_id": "full", "append_only": False}))
    start_invocation(plain)
    assert plain.run_dir.read_manifest().append_only is False
