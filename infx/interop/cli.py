"""``infx export --format inferencex``, and ``--format inferencex`` for the store's ``infx ingest``
(registered into its hooks: the store stage never imports this one)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infx.diagnostics import Diagnostic, InfxError, exit_on_error
from infx.results.cli import StoreOpt

if TYPE_CHECKING:
    from infx.results.store import Store


def _ingest(paths: list[Path], results: Path, name: str | None, skip_bad: bool, store: str | None
            ) -> tuple[list[Diagnostic], str]:
    from infx.interop.ingest import ingest_inferencex

    rep = ingest_inferencex(paths, results, name or "inferencex", skip_bad=skip_bad, store_url=store)
    return rep.problems, rep.summary()


def _restore(store: Store, root: Path) -> None:
    from infx.interop.ingest import restore_imports

    for name in restore_imports(store, root):
        typer.echo(f"restored imported run {name}")


def register(app: typer.Typer) -> None:
    from infx.results.cli import AFTER_INGEST, INGEST_FORMATS, results_root

    INGEST_FORMATS["inferencex"] = _ingest
    if _restore not in AFTER_INGEST:
        AFTER_INGEST.append(_restore)

    @app.command("export")
    @exit_on_error
    def export(
        results: Annotated[Path | None, typer.Argument(help="A results directory (or one run directory in it; "
                                                             "default: the workspace's results/).")] = None,
        fmt: Annotated[str, typer.Option("--format", help="Output format: inferencex.")] = "inferencex",
        output: Annotated[Path, typer.Option("-o", "--output", help="Directory to write (one folder per run).")]
        = Path("inferencex-export"),
        run: Annotated[list[str] | None, typer.Option("--run", help="Run id(s) (default: every run).")] = None,
        store: StoreOpt = None,
    ) -> None:
        """Write agg_<name>.json (InferenceX's aggregated format) and <name>.json (its raw bench-client
        JSON) for every measured point; an imported run gives back its published files."""
        from infx.diagnostics import warn
        from infx.interop.export import ExportReport, export_imported, export_run
        from infx.interop.ingest import imported_aggs
        from infx.results.layout import ResultsDir
        from infx.results.store import Store, locate_results
        from infx.results.store.url import resolve

        if fmt != "inferencex":
            raise InfxError(Diagnostic(f"--format: expected inferencex, got {fmt!r}"))
        from infx.outpaths import check_output_dir

        check_output_dir(output, "-o")
        root, runs = locate_results(results_root(results))
        rd = ResultsDir(root)
        measured = runs if runs is not None else rd.runs()
        imported: list[str] = []
        where = resolve(store, root)
        if where.path is None or where.path.is_file():
            with Store(where) as st:  # migrates an older store (origin column)
                imported = [r for r in st.run_ids() if st.origin(r) == "imported"]
                wanted = run or (measured + imported if runs is None else measured)
                unknown = [r for r in wanted if r not in measured and r not in imported]
                if unknown:
                    raise InfxError(Diagnostic(f"run(s) not found: {', '.join(unknown)}"))
                report = ExportReport()
                for r in wanted:
                    if r in imported:
                        export_imported([(n, d) for _, n, d in imported_aggs(st, r)], output / r, report)
        else:
            wanted = run or measured
            report = ExportReport()
        for r in wanted:
            if r not in imported:
                if r not in measured:
                    raise InfxError(Diagnostic(f"run {r!r} not found in {root}"))
                export_run(rd, r, output / r, report)
        for d in report.skipped:
            warn(d)
        typer.echo(f"{report.summary()} -> {output}")
