"""The two backends behind one SQLAlchemy ``Connection``: SQLite (stdlib ``sqlite3``, WAL, the embedded default)
and PostgreSQL (psycopg 3, the team store).

One connection per :class:`~infx.results.store.api.Store`, held for its life (``NullPool``: nothing is shared
between stores, threads or processes). Transactions are explicit and short:

* :meth:`Backend.write` is one write transaction: on SQLite ``BEGIN IMMEDIATE`` (the write lock is taken before
  anything is read, so what a writer reads cannot change under it; waits are bounded by ``LOCK_WAIT_S`` through
  the busy handler, and the first open of a fresh database is retried in :mod:`infx.results.store.sqlite_open`); on
  PostgreSQL a plain transaction with ``lock_timeout`` = ``LOCK_WAIT_S`` (writers lock the points they write,
  row by row, in key order: see :mod:`infx.results.store.writes`).
* :meth:`Backend.read` is a read transaction (one consistent snapshot per read method).

Every driver error leaves through :func:`store_error` as one line naming the store (its password masked).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.pool import NullPool

from infx.diagnostics import Diagnostic, InfxError
from infx.results.store.sqlite_open import open_for_writing
from infx.results.store.url import StoreUrl, scrub

LOCK_WAIT_S = 30.0  # how long any lock wait may take (SQLite's busy handler, PostgreSQL's lock_timeout)
CONNECT_TIMEOUT_S = 10  # a PostgreSQL server that does not answer

_BEGIN = "infx.begin"


@functools.lru_cache(maxsize=2)
def driver_errors(kind: str) -> tuple[type[BaseException], ...]:
    """What the backend's driver (and SQLAlchemy over it) raises; psycopg is imported for PostgreSQL only."""
    errors: tuple[type[BaseException], ...] = (sqlite3.Error, sa.exc.SQLAlchemyError, OSError)
    if kind == "postgresql":
        import psycopg

        errors = (*errors, psycopg.Error)
    return errors


class StoreUnreachable(InfxError):
    """The store's server cannot be reached (refused, lost or shut down): nothing was written, and the same
    write can be made again once it is back (what ``infx run`` tells apart from a store that refuses a point)."""


#: PostgreSQL's connection classes: connection exceptions (08...), and the server shutting down or starting up
_PG_GONE = ("08", "57P01", "57P02", "57P03")
_PG_GONE_TEXT = ("shutting down", "starting up", "not yet accepting connections", "in recovery mode")


def unreachable(exc: BaseException) -> bool:
    """A PostgreSQL driver error that says the server is not there: a connection failure on the client's side
    (no SQLSTATE: refused, unknown host, timed out, the connection closed under a statement) or one of the
    server's connection and shutdown states. A lock timeout or a refused statement is not one."""
    orig = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps the driver's exception
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    if not isinstance(orig, psycopg.OperationalError | psycopg.InterfaceError):
        return False
    state: str | None = orig.sqlstate
    if state is not None:
        return bool(state.startswith(_PG_GONE))
    # libpq gives no SQLSTATE for a refused connection: a server that answered says FATAL (a wrong password, no
    # such database), reachable unless it says it is shutting down or starting up
    text = str(orig)
    return "FATAL:" not in text or any(s in text for s in _PG_GONE_TEXT)


def store_error(url: StoreUrl | str | Path, exc: BaseException) -> InfxError:
    """A driver, SQLAlchemy or OS error on the store as one line naming it (no password, no traceback); a
    PostgreSQL server that cannot be reached is a :class:`StoreUnreachable`."""
    store = url if isinstance(url, StoreUrl) else None
    name = url.display if isinstance(url, StoreUrl) else str(url)
    orig = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps the driver's exception
    diag = getattr(orig, "diag", None)  # psycopg: the server's primary message, without the statement it quotes
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    msg = " ".join(str(primary or orig).split()) or type(orig).__name__
    msg = scrub(msg, store)
    low = msg.lower()
    hint = ""
    if "not a database" in low or "malformed" in low:
        hint = " (not an infx results database, or damaged: move it away and run `infx ingest` again)"
    elif "locked" in low or "busy" in low or "lock timeout" in low:
        hint = " (another infx process holds it: wait for it, or stop it)"
    elif "password authentication failed" in low or "no password supplied" in low:
        hint = " (credentials come from PGUSER/PGPASSWORD or ~/.pgpass)"
    elif "connection refused" in low or "could not translate host" in low or "timeout expired" in low:
        hint = " (is the PostgreSQL server running and reachable?)"
    kind = StoreUnreachable if store is not None and store.kind == "postgresql" and unreachable(exc) else InfxError
    return kind(Diagnostic(f"results store {name}: {msg}{hint}", name))


class Backend:
    """One open connection to a store (see the module docstring)."""

    def __init__(self, url: StoreUrl, *, readonly: bool = False, lock_wait_s: float | None = None) -> None:
        self.url = url
        self.kind = url.kind
        self.readonly = readonly
        wait = LOCK_WAIT_S if lock_wait_s is None else lock_wait_s
        self.engine = _sqlite_engine(url, readonly, wait) if url.kind == "sqlite" else _pg_engine(url, readonly, wait)
        try:
            self.conn: sa.Connection = self.engine.connect()
        except BaseException:
            self.engine.dispose()
            raise

    @property
    def raw(self) -> Any:
        """The DB-API connection underneath (``sqlite3.Connection`` or ``psycopg.Connection``): for the store
        package's bulk paths and for tests; nothing outside the store package writes SQL."""
        return self.conn.connection.driver_connection

    @contextmanager
    def write(self) -> Iterator[sa.Connection]:
        """One write transaction (committed at the end, rolled back on any error)."""
        if self.kind == "sqlite":
            self.conn.info[_BEGIN] = "BEGIN IMMEDIATE"
        with self.conn.begin():
            yield self.conn

    @contextmanager
    def read(self) -> Iterator[sa.Connection]:
        """One read transaction: the statements in it see one snapshot."""
        if self.conn.in_transaction():  # inside a write: read what it sees
            yield self.conn
            return
        with self.conn.begin():
            yield self.conn

    def set_query_only(self) -> None:
        """From now on this connection refuses writes (the dashboard's)."""
        stmt = "PRAGMA query_only=ON" if self.kind == "sqlite" else "SET default_transaction_read_only = on"
        with self.conn.begin():
            self.conn.exec_driver_sql(stmt)

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            self.engine.dispose()


def _sqlite_engine(url: StoreUrl, readonly: bool, wait: float) -> sa.Engine:
    assert url.path is not None
    path = url.path

    def connect() -> sqlite3.Connection:
        if readonly:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None,
                                   timeout=wait)
            conn.execute(f"PRAGMA busy_timeout={int(wait * 1000)}")
            return conn
        return open_for_writing(path, lock_wait_s=wait)

    engine = sa.create_engine("sqlite://", creator=connect, poolclass=NullPool)

    @event.listens_for(engine, "begin")
    def begin(conn: sa.Connection) -> None:  # the driver is in autocommit mode: infx says when and how to BEGIN
        conn.exec_driver_sql(conn.info.pop(_BEGIN, "BEGIN"))

    return engine


def _pg_engine(url: StoreUrl, readonly: bool, wait: float) -> sa.Engine:
    options = f"-c lock_timeout={int(wait * 1000)}"
    if readonly:
        options += " -c default_transaction_read_only=on"
    # prepare_threshold None: every statement is planned with the table as it is now; psycopg's server-side
    # prepared statements would keep a plan made while a store was empty (a scan) for the whole ingest
    return sa.create_engine(url.sqlalchemy_url, poolclass=NullPool,
                            connect_args={"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "infx",
                                          "options": options, "prepare_threshold": None})
