"""A throwaway PostgreSQL cluster for the tests (Debian's ``postgresql``; ``.ci/postgres.sh`` installs it).

``pg_server`` (session): the cluster ``.ci/services.sh`` started (``.ci/postgres.sh start``: its URL in
``$INFX_PG_DIR/postgres.url``, default ``/tmp/infx-postgres``) when it answers, left running at the end (this
session's databases dropped); else ``initdb`` into a temporary directory, a free loopback port, ``pg_ctl start``;
stopped and removed at the end. Authentication: role ``infx`` (superuser) by ``trust`` on 127.0.0.1; role
``secret`` only with its scram-sha-256 password, set per session (the wrong-credential tests). Durability is off
(``fsync``, ``synchronous_commit``): a cluster lives for the tests. initdb refuses root: as root the cluster is
made and run as the ``postgres`` user (``runuser``). When PostgreSQL is missing or cannot start, the tests that
need it skip, saying why.

``store_url`` (parametrised ``sqlite`` / ``postgresql``): a fresh, empty store of each backend per test.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SECRET_ROLE = "secret"
SECRET_PASSWORD = "pw-" + uuid.uuid4().hex[:12]


@dataclass
class PgServer:
    host: str
    port: int
    user: str
    root: Path | None  # the data directory's parent of a cluster this session started (None: services.sh's)
    created: list[str] = field(default_factory=list)  # the databases this session made

    def url(self, database: str, user: str | None = None) -> str:
        return f"postgresql://{user or self.user}@{self.host}:{self.port}/{database}"

    def admin(self):  # type: ignore[no-untyped-def]
        import psycopg

        return psycopg.connect(host=self.host, port=self.port, user=self.user, dbname="postgres", autocommit=True)

    def create_database(self, owner: str | None = None) -> str:
        name = "t_" + uuid.uuid4().hex[:16]
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" OWNER "{owner or self.user}"')
        self.created.append(name)
        return name


def _bin_dir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(d) / "initdb").is_file() and (Path(d) / "pg_ctl").is_file():
            return Path(d)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def running() -> PgServer | None:
    """The cluster ``.ci/postgres.sh start`` runs, when its URL file names one that answers."""
    import psycopg

    url_file = Path(os.environ.get("INFX_PG_DIR", "/tmp/infx-postgres")) / "postgres.url"
    try:
        url = url_file.read_text().strip()
    except OSError:
        return None
    rest = url.removeprefix("postgresql://")
    user, _, hostport = rest.partition("/")[0].rpartition("@")
    host, _, port = hostport.partition(":")
    if not (user and host and port.isdigit()):
        return None
    server = PgServer(host, int(port), user, None)
    try:
        with server.admin() as conn:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (SECRET_ROLE,)).fetchone()
            verb = "ALTER" if exists else "CREATE"  # this session's password
            conn.execute(f"{verb} ROLE {SECRET_ROLE} LOGIN PASSWORD '{SECRET_PASSWORD}'")
    except psycopg.Error:
        return None
    return server


def start(base: Path | None = None) -> PgServer | str:
    """A cluster of this session's own, or the reason there is none."""
    bindir = _bin_dir()
    if bindir is None:
        return "PostgreSQL is not installed (no initdb/pg_ctl; .ci/postgres.sh installs Debian's postgresql)"
    as_user: list[str] = []
    owner = None
    if os.geteuid() == 0:  # initdb refuses root
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run initdb as"
        if shutil.which("runuser") is None:
            return "running as root without runuser to drop to the 'postgres' user"
        as_user = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="infx-pg-", dir=base))
    if owner is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)
    data = root / "data"

    def run(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*as_user, *argv], capture_output=True, text=True, timeout=timeout, cwd=root)

    init = run(str(bindir / "initdb"), "-D", str(data), "-U", "infx", "--auth=trust", "-E", "UTF8", "--no-sync")
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        return f"initdb failed: {(init.stderr or init.stdout).strip().splitlines()[-1:]}"
    hba = (f"local all all trust\nhost all {SECRET_ROLE} 127.0.0.1/32 scram-sha-256\n"
           "host all all 127.0.0.1/32 trust\n")
    last = ""
    for _ in range(3):  # a port picked free can be taken before the server binds it
        port = _free_port()
        conf = (f"\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{root}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 80\n"
                "password_encryption = 'scram-sha-256'\n")
        with open(data / "postgresql.auto.conf", "w") as fh:
            fh.write(conf)
        (data / "pg_hba.conf").write_text(hba)
        if owner is not None:
            for f in ("postgresql.auto.conf", "pg_hba.conf"):
                os.chown(data / f, owner.pw_uid, owner.pw_gid)
        got = run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-w", "-t", "60", "start")
        if got.returncode == 0:
            server = PgServer("127.0.0.1", port, "infx", root)
            with server.admin() as conn:
                conn.execute(f"CREATE ROLE {SECRET_ROLE} LOGIN PASSWORD '{SECRET_PASSWORD}'")
            return server
        log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
        last = (log.strip().splitlines() or [got.stderr.strip()])[-1]
    shutil.rmtree(root, ignore_errors=True)
    return f"PostgreSQL did not start: {last}"


def _pg_ctl(server: PgServer, *args: str) -> subprocess.CompletedProcess[str]:
    assert server.root is not None, "only a cluster this session started is stopped and started again"
    bindir = _bin_dir()
    assert bindir is not None
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(server.root / "data"), *args],
                          capture_output=True, text=True, timeout=90, cwd=server.root)


def halt(server: PgServer) -> None:
    """Stop a cluster of this session's own (fast shutdown: open connections are cut), keeping its data."""
    got = _pg_ctl(server, "-m", "fast", "-w", "-t", "60", "stop")
    assert got.returncode == 0, got.stderr or got.stdout


def resume(server: PgServer) -> None:
    """Start a cluster :func:`halt` stopped, on the same port and data."""
    got = _pg_ctl(server, "-l", str(server.root / "server.log"), "-w", "-t", "60", "start")  # type: ignore[operator]
    assert got.returncode == 0, got.stderr or got.stdout


def _serving(got: PgServer | str) -> Iterator[PgServer]:
    """A fixture's cluster for its lifetime (stopped after), or the test skipped with why none could start."""
    if isinstance(got, str):
        pytest.skip(got)
    try:
        yield got
    finally:
        stop(got)


@pytest.fixture
def own_pg_server() -> Iterator[PgServer]:
    """A cluster for one test alone (``initdb`` into a temporary directory, about a second): a test may stop
    and start it (:func:`halt`, :func:`resume`) without touching the shared one other tests use."""
    yield from _serving(start())


def stop(server: PgServer) -> None:
    if server.root is None:  # services.sh's cluster outlives the session (.ci/postgres.sh stop ends it)
        with server.admin() as conn:  # ... without this session's databases
            for name in server.created:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        return
    if _bin_dir() is not None:
        _pg_ctl(server, "-m", "immediate", "-w", "stop")
    shutil.rmtree(server.root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    yield from _serving(running() or start())


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty store of each backend: a SQLite file path, or a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "store" / "infx.db")
    server: PgServer = request.getfixturevalue("pg_server")
    return server.url(server.create_database())
