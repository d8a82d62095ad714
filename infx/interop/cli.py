"""``infx export --format inferencex``, and ``--format inferencex`` for the store's ``infx ingest``
(registered into its hooks, :mod:`infx.results.ingest_hooks`: the store stage never imports this one). ``export``
builds its :class:`~infx.interop.export.ExportRequest` once and hands it to the library."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infx.cli_options import ModelDefault, build_request
from infx.diagnostics import Diagnostic, exit_on_error
from infx.results.cli import StoreOpt

if TYPE_CHECKING:
    from pydantic import BaseModel

    from infx.results.store import Store

EXPORT_OPTIONS = {"runs": "--run", "output": "-o"}


def _export_request() -> type[BaseModel]:
    from infx.interop.export import ExportRequest

    return ExportRequest


def ingest_published(paths: list[Path], results: Path, name: str | None, skip_bad: bool, store: str | None
                     ) -> tuple[list[Diagnostic], str]:
    """``infx ingest --format inferencex``: published files as one imported run (default name: inferencex)."""
    from infx.interop.ingest import ingest_inferencex

    rep = ingest_inferencex(paths, results, name or "inferencex", skip_bad=skip_bad, store_url=store)
    return rep.problems, rep.summary()


def restore_imported(store: Store, root: Path) -> None:
    """After a whole results directory was ingested: its imported runs back in the store, when it lacks them."""
    from infx.interop.ingest import restore_imports

    for name in restore_imports(store, root):
        typer.echo(f"restored imported run {name}")


@exit_on_error
def export_cmd(
    *,
    results: Annotated[Path | None, typer.Argument(help="A results directory (or one run directory in it; "
                                                         "default: the workspace's results/).")] = None,
    fmt: Annotated[str, typer.Option("--format", default_factory=ModelDefault(_export_request, "format"),
                                     help="Output format: inferencex.")],
    output: Annotated[Path, typer.Option("-o", "--output", default_factory=ModelDefault(_export_request, "output"),
                                         help="Directory to write (one folder per run).")],
    run: Annotated[list[str] | None, typer.Option("--run", help="Run id(s) (default: every run).")] = None,
    store: StoreOpt = None,
) -> None:
    """Write agg_<name>.json (InferenceX's aggregated format) and <name>.json (its raw bench-client
    JSON) for every measured point; an imported run gives back its published files."""
    from infx.diagnostics import warn
    from infx.interop.export import ExportRequest, export_results
    from infx.outpaths import check_output_dir

    req = build_request(ExportRequest, {"results": results, "format": fmt, "output": output, "runs": run or [],
                                        "store": store}, EXPORT_OPTIONS)
    check_output_dir(req.output, "-o")
    report = export_results(req)
    for d in report.skipped:
        warn(d)
    typer.echo(f"{report.summary()} -> {req.output}")


def register(app: typer.Typer) -> None:
    from infx.results.ingest_hooks import AFTER_INGEST, INGEST_FORMATS

    INGEST_FORMATS["inferencex"] = ingest_published
    if restore_imported not in AFTER_INGEST:
        AFTER_INGEST.append(restore_imported)
    app.command("export")(export_cmd)
