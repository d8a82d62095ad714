"""Column shorthands for the revisions: a revision spells its tables out in full (it must keep building the
schema it built when it was released, whatever ``schema.py`` says later), so they are kept short to read."""

from __future__ import annotations

import sqlalchemy as sa


def _col(name: str, type_: sa.types.TypeEngine[object], *, pk: bool, null: bool, default: str | None
         ) -> sa.Column[object]:
    return sa.Column(name, type_, primary_key=pk, nullable=null and not pk,
                     server_default=None if default is None else sa.text(default))


def T(name: str, *, pk: bool = False, null: bool = True, default: str | None = None) -> sa.Column[object]:  # noqa: N802
    """A text column."""
    return _col(name, sa.Text(), pk=pk, null=null, default=default)


def I(name: str, *, pk: bool = False, null: bool = True, default: str | None = None) -> sa.Column[object]:  # noqa: E741, N802
    """A 64-bit integer column."""
    return _col(name, sa.BigInteger(), pk=pk, null=null, default=default)


def F(name: str, *, null: bool = True) -> sa.Column[object]:  # noqa: N802
    """A double-precision column."""
    return _col(name, sa.Double(), pk=False, null=null, default=None)


def flag(name: str, *, default: str | None = None) -> sa.Column[object]:
    """A 0/1 column (``INTEGER NOT NULL``)."""
    return _col(name, sa.Integer(), pk=False, null=False, default=default)


def texts(*names: str) -> list[sa.Column[object]]:
    return [T(n) for n in names]


def ints(*names: str) -> list[sa.Column[object]]:
    return [I(n) for n in names]


def reals(*names: str) -> list[sa.Column[object]]:
    return [F(n) for n in names]


def key() -> list[sa.Column[object]]:
    """(run_id, point_id): the primary key of every per-point table."""
    return [T("run_id", pk=True), T("point_id", pk=True)]
