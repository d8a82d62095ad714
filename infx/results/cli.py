"""``infx ingest``: load a results directory into the store (the store stage's command)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from infx.diagnostics import Diagnostic, InfxError, exit_on_error

# Hooks for stages above the store (they import this module, never the reverse; tests/test_import_direction.py):
# ``INGEST_FORMATS[name](paths, results_root, name, skip_bad) -> (problems, summary)`` reads other formats
# (infx.interop: ``--format inferencex``); ``AFTER_INGEST`` callables ``(store, results_root)`` run after a
# whole results directory was ingested (infx.interop restores imported runs from their files).
INGEST_FORMATS: dict[str, Callable[[list[Path], Path, str | None, bool], tuple[list[Any], str]]] = {}
AFTER_INGEST: list[Callable[[Any, Path], None]] = []


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
        paths: Annotated[list[Path] | None, typer.Argument(
            help="A results directory (or one run directory in it; default: the workspace's results/). With "
                 "--format inferencex: aggregated result files, combined list files, directories.")] = None,
        db: Annotated[Path | None, typer.Option("--db", help="Database (default: RESULTS/infx.db).")] = None,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 2 when any point was skipped.")] = False,
        fmt: Annotated[str, typer.Option("--format", help="infx (a results directory) | inferencex "
                                                          "(published InferenceX results, as an imported run).")] = "infx",
        results: Annotated[Path | None, typer.Option("--results", help="With --format inferencex: the results "
                                                                       "directory to import into (default: the "
                                                                       "workspace's results/).")] = None,
        name: Annotated[str | None, typer.Option("--name", help="With --format inferencex: the imported run's id "
                                                                "(default: inferencex).")] = None,
        skip_bad: Annotated[bool, typer.Option("--skip-bad", help="With --format inferencex: import the good files "
                                                                  "even when others are rejected.")] = False,
    ) -> None:
        """Load a results directory into RESULTS/infx.db (idempotent; bad points are reported and skipped),
        or with --format inferencex published InferenceX results as an imported run."""
        from infx.results.store import Store, locate_results

        if fmt != "infx":
            if fmt not in INGEST_FORMATS:
                raise InfxError(Diagnostic(f"--format: expected one of {', '.join(['infx', *INGEST_FORMATS])}, "
                                           f"got {fmt!r}"))
            if not paths:
                raise InfxError(Diagnostic(f"--format {fmt}: give the files or directories to import"))
            problems, summary = INGEST_FORMATS[fmt](paths, results_root(results), name, skip_bad)
            for d in problems:
                typer.echo(str(d), err=True)
            typer.echo(summary)
            if strict and problems:
                raise SystemExit(2)
            return
        if paths and len(paths) > 1:
            raise InfxError(Diagnostic(f"expected one results directory, got {len(paths)} paths"))
        root, runs = locate_results(results_root(paths[0] if paths else None))
        with Store(db or root / "infx.db") as store:
            report = store.ingest_dir(root, runs)
            if runs is None:
                for hook in AFTER_INGEST:
                    hook(store, root)
        for d in report.problems:
            typer.echo(str(d), err=True)
        typer.echo(report.summary())
        if strict and report.problems:
            raise SystemExit(2)
