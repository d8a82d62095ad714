"""Alembic migrations of the results store (run programmatically: :mod:`infx.results.store.migrate`)."""
