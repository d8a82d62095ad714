"""Which store a command uses, and how it is named in messages.

Resolution, first match wins: ``--store URL`` (or ``infx ingest --db PATH``), the ``INFX_STORE_URL`` environment
variable, ``[store] url`` in the workspace's ``infx.toml``, then ``RESULTS/infx.db`` (SQLite, the embedded default).

A URL is ``postgresql://[USER@]HOST[:PORT]/DB[?PARAMS]`` (``postgres://`` and ``postgresql+psycopg://`` are the
same), ``sqlite:///PATH``, or a plain file path (SQLite). Credentials come from libpq's own sources: ``PGUSER``,
``PGPASSWORD``, ``PGPASSFILE`` / ``~/.pgpass``, ``PGSSLMODE``...; a password written into a URL is accepted but
masked (``***``) in every message, and the URL itself is never written into results, manifests or receipts.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict

from infx.diagnostics import Diagnostic, InfxError

ENV_VAR = "INFX_STORE_URL"
DB_NAME = "infx.db"

Kind = Literal["sqlite", "postgresql"]
FoundBy = Literal["--store", "INFX_STORE_URL", "infx.toml", "results directory"]

_PG_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


class StoreUrl(BaseModel):
    """A resolved store: its kind, the SQLAlchemy URL (password included, never printed) and its display name."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    sqlalchemy_url: str
    path: Path | None = None  # SQLite: the database file
    found_by: FoundBy = "--store"

    @property
    def display(self) -> str:
        """The store as every message names it: the file, or the URL with its password masked."""
        if self.path is not None:
            return str(self.path)
        return mask(self.sqlalchemy_url).replace("postgresql+psycopg://", "postgresql://", 1)

    @property
    def password(self) -> str | None:
        return urlsplit(self.sqlalchemy_url).password if self.kind == "postgresql" else None

    def __str__(self) -> str:
        return self.display


def mask(url: str) -> str:
    """``postgresql://u:secret@h/db`` -> ``postgresql://u:***@h/db``; anything else unchanged."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def scrub(text: str, url: StoreUrl | None) -> str:
    """``text`` without the store's password (a driver message could echo a connection string)."""
    secret = url.password if url is not None else None
    if secret:
        text = text.replace(secret, "***")
    return re.sub(r"(://[^:/@\s]*:)[^@\s]*@", r"\1***@", text)


def sqlite_url(path: str | Path, found_by: FoundBy = "results directory") -> StoreUrl:
    p = Path(path)
    return StoreUrl(kind="sqlite", sqlalchemy_url=f"sqlite:///{p}", path=p, found_by=found_by)


def parse(text: str, found_by: FoundBy = "--store") -> StoreUrl:
    """A store URL or a SQLite file path; a malformed URL is one line naming where it came from."""
    value = text.strip()
    where = {"--store": "--store", "INFX_STORE_URL": ENV_VAR, "infx.toml": "infx.toml [store] url",
             "results directory": "results directory"}[found_by]
    if not value:
        raise InfxError(Diagnostic(f"{where}: empty store URL"))
    scheme = value.split("://", 1)[0].lower() if "://" in value else ""
    if not scheme:
        return sqlite_url(Path(value).expanduser(), found_by)
    if scheme == "sqlite":  # as SQLAlchemy reads it: sqlite:///relative/infx.db, sqlite:////absolute/infx.db
        path = value.split("://", 1)[1]
        if not path.startswith("/") or path in ("/", "//") or ":memory:" in path:
            raise InfxError(Diagnostic(f"{where}: expected sqlite:///PATH/TO/infx.db, got {mask(value)!r}"))
        return sqlite_url(Path(path[1:]).expanduser(), found_by)
    if scheme not in _PG_SCHEMES:
        raise InfxError(Diagnostic(f"{where}: unsupported store URL scheme {scheme!r} in {mask(value)!r} "
                                   "(expected postgresql://USER@HOST:PORT/DB or a SQLite file path)"))
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 (validates the port: ValueError when it is not a number or out of range)
    except ValueError as exc:
        raise InfxError(Diagnostic(f"{where}: bad port in {mask(value)!r}: {exc}")) from None
    if not parts.path.strip("/"):
        raise InfxError(Diagnostic(f"{where}: {mask(value)!r} names no database (postgresql://HOST/DB)"))
    return StoreUrl(kind="postgresql", found_by=found_by,
                    sqlalchemy_url=urlunsplit(("postgresql+psycopg", parts.netloc, parts.path, parts.query, "")))


def resolve(option: str | Path | None, results_root: str | Path | None) -> StoreUrl:
    """The store a command uses (see the module docstring); ``results_root`` gives the embedded default."""
    if option is not None and str(option) != "":
        return parse(str(option), "--store")
    env = os.environ.get(ENV_VAR)
    if env:
        return parse(env, "INFX_STORE_URL")
    from infx.workspace import current

    configured = current().store_url
    if configured:
        return parse(configured, "infx.toml")
    if results_root is None:
        results_root = current().results_dir
    return sqlite_url(Path(results_root) / DB_NAME)
