"""``infx ingest`` (a results directory into the store) and ``infx store migrate|copy|quarantine``: the store
stage's commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from infx.diagnostics import Diagnostic, InfxError, exit_on_error

if TYPE_CHECKING:
    from infx.results.store import Store

# Hooks for stages above the store (they import this module, never the reverse; tests/test_import_direction.py):
# ``INGEST_FORMATS[name](paths, results_root, name, skip_bad, store) -> (problems, summary)`` reads other formats
# (infx.interop: ``--format inferencex``); ``AFTER_INGEST`` callables ``(store, results_root)`` run after a
# whole results directory was ingested (infx.interop restores imported runs from their files).
INGEST_FORMATS: dict[str, Callable[[list[Path], Path, str | None, bool, str | None], tuple[list[Any], str]]] = {}
AFTER_INGEST: list[Callable[[Store, Path], None]] = []

StoreOpt = Annotated[str | None, typer.Option(
    "--store", help="Results store: a SQLite file or postgresql://USER@HOST:PORT/DB (default: INFX_STORE_URL, "
                    "else infx.toml [store] url, else RESULTS/infx.db). Credentials: PGUSER/PGPASSWORD or ~/.pgpass.")]


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
        db: Annotated[Path | None, typer.Option("--db", help="SQLite database file (the same as --store PATH).")]
        = None,
        store: StoreOpt = None,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 2 when any point was skipped.")] = False,
        fmt: Annotated[str, typer.Option("--format", help="infx (a results directory) | inferencex "
                                                          "(published InferenceX results, as an imported run).")
                       ] = "infx",
        results: Annotated[Path | None, typer.Option("--results", help="With --format inferencex: the results "
                                                                       "directory to import into (default: the "
                                                                       "workspace's results/).")] = None,
        name: Annotated[str | None, typer.Option("--name", help="With --format inferencex: the imported run's id "
                                                                "(default: inferencex).")] = None,
        skip_bad: Annotated[bool, typer.Option("--skip-bad", help="With --format inferencex: import the good files "
                                                                  "even when others are rejected.")] = False,
    ) -> None:
        """Load a results directory into the store (idempotent; bad points are reported, skipped and quarantined),
        or with --format inferencex published InferenceX results as an imported run."""
        from infx.results.store import Store, locate_results
        from infx.results.store.url import resolve

        if db is not None and store is not None:
            raise InfxError(Diagnostic("give --store or --db, not both"))
        where = str(db) if db is not None else store
        if fmt != "infx":
            if fmt not in INGEST_FORMATS:
                raise InfxError(Diagnostic(f"--format: expected one of {', '.join(['infx', *INGEST_FORMATS])}, "
                                           f"got {fmt!r}"))
            if not paths:
                raise InfxError(Diagnostic(f"--format {fmt}: give the files or directories to import"))
            problems, summary = INGEST_FORMATS[fmt](paths, results_root(results), name, skip_bad, where)
            for d in problems:
                typer.echo(str(d), err=True)
            typer.echo(summary)
            if strict and problems:
                raise SystemExit(2)
            return
        if paths and len(paths) > 1:
            raise InfxError(Diagnostic(f"expected one results directory, got {len(paths)} paths"))
        root, runs = locate_results(results_root(paths[0] if paths else None))
        with Store(resolve(where, root)) as st:
            report = st.ingest_dir(root, runs)
            if runs is None:
                for hook in AFTER_INGEST:
                    hook(st, root)
        for d in report.problems:
            typer.echo(str(d), err=True)
        typer.echo(report.summary())
        if strict and report.problems:
            raise SystemExit(2)

    store_app = typer.Typer(help="The results store: upgrade it, copy it into a team store, list its quarantine.",
                            no_args_is_help=True)
    app.add_typer(store_app, name="store")

    @store_app.command("migrate")
    @exit_on_error
    def migrate_cmd(
        store: StoreOpt = None,
        results: Annotated[Path | None, typer.Option("--results", help="Results directory whose infx.db is meant "
                                                                       "(default: the workspace's results/).")] = None,
        revision: Annotated[int | None, typer.Option("--revision", min=1, help="Upgrade only up to this revision "
                                                                               "(default: the latest).")] = None,
    ) -> None:
        """Upgrade a store to this infx's schema in place (Alembic revisions; a store from before them is
        stamped at its schema_version first). Idempotent."""
        from infx.results.store import Store
        from infx.results.store.url import resolve

        where = resolve(store, results_root(results))
        before = Store.peek_version(where)
        with Store(where, schema_target=revision or None) as st:
            after = st.schema_version()
        was = "new store" if before is None else f"revision {before:04d}"
        typer.echo(f"{where.display}: {was} -> revision {after:04d}" if before != after
                   else f"{where.display}: at revision {after:04d} (nothing to do)")

    @store_app.command("copy")
    @exit_on_error
    def copy_cmd(
        src: Annotated[str, typer.Argument(help="The store to copy from (a SQLite file or postgresql:// URL).")],
        dst: Annotated[str, typer.Argument(help="The store to copy into (created or upgraded as needed).")],
        run: Annotated[list[str] | None, typer.Option("--run", help="Only these run ids (default: every run).")]
        = None,
    ) -> None:
        """Copy every run of SRC into DST, idempotently: unchanged points are not touched, changed ones replaced
        whole; running it again finishes an interrupted copy."""
        from infx.results.store import Store
        from infx.results.store.copy import copy_store
        from infx.results.store.url import parse

        source, dest = parse(src), parse(dst)
        if source.sqlalchemy_url == dest.sqlalchemy_url:
            raise InfxError(Diagnostic(f"SRC and DST are the same store ({source.display})"))
        if source.path is not None and not source.path.is_file():
            raise InfxError(Diagnostic(f"no results database at {source.path}", str(source.path)))
        with Store(source, readonly=source.kind == "sqlite") as a, Store(dest) as b:
            known = set(a.run_ids())
            missing = [r for r in run or [] if r not in known]
            if missing:
                raise InfxError(Diagnostic(f"run(s) not in {a.name}: {', '.join(missing)}"))
            report = copy_store(a, b, run or None)
        for line in report.rejected:
            typer.echo(f"not copied: {line}", err=True)
        typer.echo(f"{source.display} -> {dest.display}: {report.summary()}")

    @store_app.command("quarantine")
    @exit_on_error
    def quarantine_cmd(
        store: StoreOpt = None,
        results: Annotated[Path | None, typer.Option("--results", help="Results directory whose infx.db is meant "
                                                                       "(default: the workspace's results/).")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the entries as JSON.")] = False,
    ) -> None:
        """List what ingest refused, with the rule and reason (ingesting the fixed file releases it)."""
        import dataclasses
        import json

        from infx.results.store import Store
        from infx.results.store.quarantine import RULES
        from infx.results.store.url import resolve

        where = resolve(store, results_root(results))
        if where.path is not None and not where.path.is_file():
            raise InfxError(Diagnostic(f"no results database at {where.path} (run `infx ingest` first)"))
        with Store(where) as st:
            entries = st.quarantined()
        if as_json:
            typer.echo(json.dumps([dataclasses.asdict(e) for e in entries], indent=2))
            return
        if not entries:
            typer.echo(f"{where.display}: nothing quarantined")
            return
        typer.echo(f"{where.display}: {len(entries)} quarantined row(s)")
        for e in entries:
            typer.echo(f"  {e}")
        for rule in sorted({e.rule for e in entries}):
            typer.echo(f"rule {rule}: {RULES.get(rule, '')}")
