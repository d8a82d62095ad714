"""``infx ingest``: load a results directory into the store (the store stage's command)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infx.diagnostics import exit_on_error


def results_root(path: Path | None) -> Path:
    """A results argument, defaulting to the workspace's ``results/``."""
    if path is not None:
        return path
    from infx.workspace import current

    return current().results_dir


def register(app: typer.Typer) -> None:
    @app.command("ingest")
    @exit_on_error
    def ingest(
        directory: Annotated[Path | None, typer.Argument(help="A results directory (or one run directory in it; "
                                                           "default: the workspace's results/).")] = None,
        db: Annotated[Path | None, typer.Option("--db", help="Database (default: RESULTS/infx.db).")] = None,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 2 when any point was skipped.")] = False,
    ) -> None:
        """Load a results directory into RESULTS/infx.db. Idempotent; bad points are reported and skipped."""
        from infx.results.store import Store, locate_results

        root, runs = locate_results(results_root(directory))
        with Store(db or root / "infx.db") as store:
            report = store.ingest_dir(root, runs)
        for d in report.problems:
            typer.echo(str(d), err=True)
        typer.echo(report.summary())
        if strict and report.problems:
            raise SystemExit(2)
