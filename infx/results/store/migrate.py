"""Schema versions and Alembic, run from code.

A store's version is its Alembic revision (``alembic_version``); the legacy ``schema_version`` table mirrors it
as an integer (revision ``000N`` is ``schema_version`` N), so an infx from before Alembic refuses a newer store
instead of writing into it. A database written before Alembic (``schema_version`` N, no ``alembic_version``) is
stamped at revision N and upgraded in place.

Opening an up-to-date store costs two small queries and never imports Alembic. An upgrade runs in one
transaction that holds the store's migration lock (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-level
advisory lock), and re-reads the version under it, so processes opening a fresh store together apply each
revision once. The migrations ship inside the package (``migrations/``): no ``alembic.ini`` is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field

from infx.diagnostics import Diagnostic, InfxError
from infx.results.store import schema
from infx.results.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from infx.results.store.backend import Backend

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_LOCK_KEY = 0x696E66785F6D6967  # "infx_mig": the PostgreSQL advisory lock every migration holds


class MigrateRequest(BaseModel):
    """What ``infx store migrate`` is asked: the store (``store``, else the one of ``results``) and how far."""

    model_config = ConfigDict(extra="forbid")

    store: str | None = None
    results: Path | None = None
    revision: int | None = Field(None, ge=1, le=SCHEMA_VERSION)  # None: the head


def revision_of(version: int) -> str:
    return f"{version:04d}"


@dataclass(frozen=True)
class DbVersion:
    """Where a database stands: ``number`` (0: empty), its Alembic revision (None: before Alembic) and whether
    this infx knows it (False: written by a newer infx)."""

    number: int
    revision: str | None
    known: bool = True


def current(conn: sa.Connection) -> DbVersion:
    """The version of the database behind ``conn`` (inside a transaction). Newer than this infx when either the
    Alembic revision or the ``schema_version`` mirror is past what it knows (a newer infx of either age wrote it)."""
    tables = set(sa.inspect(conn).get_table_names())
    mirror = 0
    if "schema_version" in tables:
        mirror = int(conn.execute(sa.select(schema.schema_version.c.version)).scalar() or 0)
    if "alembic_version" not in tables:
        return DbVersion(mirror, None, known=mirror <= SCHEMA_VERSION)
    rev = conn.execute(sa.select(sa.column("version_num", sa.Text)).select_from(sa.table("alembic_version"))
                       ).scalar()
    if rev is None:
        return DbVersion(mirror, None, known=mirror <= SCHEMA_VERSION)
    number = int(rev) if rev.isdigit() else SCHEMA_VERSION + 1
    known = rev.isdigit() and number <= SCHEMA_VERSION and mirror <= SCHEMA_VERSION
    return DbVersion(max(number, mirror) if not known else number, rev, known=known)


def newer_error(display: str, version: DbVersion) -> InfxError:
    what = f"revision {version.revision}" if version.revision and not version.revision.isdigit() else \
        f"schema {version.number}"
    return InfxError(Diagnostic(f"results store {display}: database {what} is newer than this infx "
                                f"({SCHEMA_VERSION}); upgrade infx", display))


def upgrade(backend: Backend, target: int | None = None) -> int:
    """Bring the store up to ``target`` (default: the head); returns the version it is at. A store already
    there is not touched (and Alembic is not imported)."""
    target = SCHEMA_VERSION if target is None else target
    if not 0 < target <= SCHEMA_VERSION:
        raise InfxError(Diagnostic(f"--revision: expected 1..{SCHEMA_VERSION}, got {target}"))
    with backend.read() as conn:
        seen = current(conn)
    if not seen.known:
        raise newer_error(backend.url.display, seen)
    if seen.number >= target:
        return seen.number
    with backend.write() as conn:
        if backend.kind == "postgresql":
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_LOCK_KEY)))
        seen = current(conn)  # again, under the lock: another process may have migrated meanwhile
        if not seen.known:
            raise newer_error(backend.url.display, seen)
        if seen.number >= target:
            return seen.number
        if seen.number == 0 and target == SCHEMA_VERSION and not _tables(conn):
            _create_head(conn)  # an empty database: the head schema at once (Alembic's cookbook), stamped
        else:
            _run_alembic(conn, seen, target)
    return target


def _tables(conn: sa.Connection) -> list[str]:
    return sa.inspect(conn).get_table_names()


def _create_head(conn: sa.Connection) -> None:
    from alembic import command

    schema.metadata.create_all(conn)
    conn.execute(sa.insert(schema.schema_version).values(version=SCHEMA_VERSION))
    command.stamp(_config(conn), revision_of(SCHEMA_VERSION))


def _config(conn: sa.Connection) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = conn
    return cfg


def _run_alembic(conn: sa.Connection, seen: DbVersion, target: int) -> None:
    from alembic import command

    cfg = _config(conn)
    if seen.revision is None and seen.number > 0:  # written before Alembic: its hand-written steps 1..N
        command.stamp(cfg, revision_of(seen.number))
    command.upgrade(cfg, revision_of(target))


def configure_context(context: Any) -> None:
    """The body of ``migrations/env.py``: migrate the connection :func:`upgrade` handed over, inside its
    transaction, mirroring each applied revision into ``schema_version``."""
    conn = context.config.attributes["connection"]
    context.configure(connection=conn, target_metadata=schema.metadata, on_version_apply=_mirror_version)
    with context.begin_transaction():
        context.run_migrations()


def _mirror_version(*, ctx: Any, step: Any, heads: Any, run_args: Any) -> None:
    revs = step.up_revision_ids if step.is_upgrade else step.down_revision_ids
    number = max((int(r) for r in revs if r and r.isdigit()), default=0)
    conn = ctx.connection
    table = schema.schema_version
    if not sa.inspect(conn).has_table(table.name):  # below revision 0001
        return
    conn.execute(sa.delete(table))
    conn.execute(sa.insert(table).values(version=number))


def head_revision() -> str:
    """The head of the shipped revisions (a test requires it to be ``SCHEMA_VERSION``)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    assert head is not None
    return head
