"""Column shorthands for the revisions: a revision spells its tables out in full (it must keep building the
schema it built when it was released, whatever ``schema.py`` says later), so they are kept short to read."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa


def _col(name: str, type_: sa.types.TypeEngine[Any], *, pk: bool, null: bool, default: str | None
         ) -> sa.Column[Any]:
    return sa.Column(name, type_, primary_key=pk, nullable=null and not pk,
                     server_default=None if default is None else sa.text(default))


def T(name: str, *, pk: bool = False, null: bool = True, default: str | None = None) -> sa.Column[Any]:
    """A text column."""
    return _col(name, sa.Text(), pk=pk, null=null, default=default)


def Int(name: str, *, pk: bool = False, null: bool = True, default: str | None = None) -> sa.Column[Any]:
    """A 64-bit integer column."""
    return _col(name, sa.BigInteger(), pk=pk, null=null, default=default)


def F(name: str, *, null: bool = True) -> sa.Column[Any]:
    """A double-precision column."""
    return _col(name, sa.Double(), pk=False, null=null, default=None)


def flag(name: str, *, default: str | None = None) -> sa.Column[Any]:
    """A 0/1 column (``INTEGER NOT NULL``)."""
    return _col(name, sa.Integer(), pk=False, null=False, default=default)


def texts(*names: str) -> list[sa.Column[Any]]:
    return [T(n) for n in names]


def ints(*names: str) -> list[sa.Column[Any]]:
    return [Int(n) for n in names]


def reals(*names: str) -> list[sa.Column[Any]]:
    return [F(n) for n in names]


def key() -> list[sa.Column[Any]]:
    """(run_id, point_id): the primary key of every per-point table."""
    return [T("run_id", pk=True), T("point_id", pk=True)]
