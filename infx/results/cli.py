"""``infx ingest`` (a results directory into the store) and ``infx store migrate|copy|quarantine``: the store
stage's commands. ``ingest`` builds its :class:`~infx.results.ingestion.IngestRequest` and ``store migrate`` its
:class:`~infx.results.store.migrate.MigrateRequest` once (:func:`infx.cli_options.build_request`); the other
formats ``ingest`` reads are the stages above's (:mod:`infx.results.ingest_hooks`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infx.cli_options import ModelDefault, build_request
from infx.diagnostics import Diagnostic, InfxError, exit_on_error

if TYPE_CHECKING:
    from pydantic import BaseModel

StoreOpt = Annotated[str | None, typer.Option(
    "--store", help="Results store: a SQLite file or postgresql://USER@HOST:PORT/DB (default: INFX_STORE_URL, "
                    "else infx.toml [store] url, else RESULTS/infx.db). Credentials: PGUSER/PGPASSWORD or ~/.pgpass.")]
StoreResultsOpt = Annotated[Path | None, typer.Option(
    "--results", help="Results directory whose infx.db is meant (default: the workspace's results/).")]


def _ingest_request() -> type[BaseModel]:
    from infx.results.ingestion import IngestRequest

    return IngestRequest


@exit_on_error
def ingest_cmd(
    *,
    paths: Annotated[list[Path] | None, typer.Argument(
        help="A results directory (or one run directory in it; default: the workspace's results/). With "
             "--format inferencex: aggregated result files, combined list files, directories.")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="SQLite database file (the same as --store PATH).")] = None,
    store: StoreOpt = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 2 when any point was skipped.")] = False,
    fmt: Annotated[str, typer.Option("--format", default_factory=ModelDefault(_ingest_request, "format"),
                                     help="infx (a results directory) | inferencex (published InferenceX results, "
                                          "as an imported run).")],
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
    from infx.results.ingestion import IngestRequest, ingest

    req = build_request(IngestRequest, {"paths": paths or [], "db": db, "store": store, "strict": strict,
                                        "format": fmt, "results": results, "name": name, "skip_bad": skip_bad})
    problems, summary = ingest(req)
    for d in problems:
        typer.echo(str(d), err=True)
    typer.echo(summary)
    if req.strict and problems:
        raise SystemExit(2)


@exit_on_error
def migrate_cmd(
    store: StoreOpt = None,
    results: StoreResultsOpt = None,
    revision: Annotated[int | None, typer.Option("--revision", help="Upgrade only up to this revision "
                                                                   "(default: the latest).")] = None,
) -> None:
    """Upgrade a store to this infx's schema in place (Alembic revisions; a store from before them is
    stamped at its schema_version first). Idempotent."""
    from infx.results.layout import results_root
    from infx.results.store import Store
    from infx.results.store.migrate import MigrateRequest
    from infx.results.store.url import resolve

    req = build_request(MigrateRequest, {"store": store, "results": results, "revision": revision})
    where = resolve(req.store, results_root(req.results))
    before = Store.peek_version(where)
    with Store(where, schema_target=req.revision) as st:
        after = st.schema_version()
    was = "new store" if before is None else f"revision {before:04d}"
    typer.echo(f"{where.display}: {was} -> revision {after:04d}" if before != after
               else f"{where.display}: at revision {after:04d} (nothing to do)")


@exit_on_error
def copy_cmd(
    src: Annotated[str, typer.Argument(help="The store to copy from (a SQLite file or postgresql:// URL).")],
    dst: Annotated[str, typer.Argument(help="The store to copy into (created or upgraded as needed).")],
    run: Annotated[list[str] | None, typer.Option("--run", help="Only these run ids (default: every run).")] = None,
) -> None:
    """Copy every run of SRC into DST, idempotently: unchanged points are not touched, changed ones replaced
    whole; running it again finishes an interrupted copy."""
    from infx.results.store.copy import copy_between

    source, dest, report = copy_between(src, dst, run)
    for line in report.rejected:
        typer.echo(f"not copied: {line}", err=True)
    typer.echo(f"{source.display} -> {dest.display}: {report.summary()}")


@exit_on_error
def quarantine_cmd(
    store: StoreOpt = None,
    results: StoreResultsOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the entries as JSON.")] = False,
) -> None:
    """List what ingest refused, with the rule and reason (ingesting the fixed file releases it)."""
    import dataclasses
    import json

    from infx.results.layout import results_root
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


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest_cmd)
    store_app = typer.Typer(help="The results store: upgrade it, copy it into a team store, list its quarantine.",
                            no_args_is_help=True)
    store_app.command("migrate")(migrate_cmd)
    store_app.command("copy")(copy_cmd)
    store_app.command("quarantine")(quarantine_cmd)
    app.add_typer(store_app, name="store")
