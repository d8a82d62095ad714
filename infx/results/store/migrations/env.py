"""Alembic's environment for the results store: always run from code (:mod:`infx.results.store.migrate`), on a
connection that is already inside the transaction holding the store's migration lock; no ``alembic.ini``."""

from __future__ import annotations

from alembic import context

from infx.results.store.migrate import configure_context

configure_context(context)
