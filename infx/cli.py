"""The ``infx`` command. Each stage package contributes its commands through a
``register(app)`` function in its ``cli`` module; imports stay lazy so that
``infx --help`` and the fast paths start quickly."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import typer

app = typer.Typer(
    name="infx",
    help="Open LLM-inference benchmark platform: catalog -> matrix -> gate -> launch -> measure -> store -> show.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Stage modules that contribute commands, in data-flow order.
_STAGE_CLIS = (
    "infx.workspace_cli",  # workspace, init
    "infx.catalog.cli",    # validate
    "infx.matrix.cli",     # matrix
    "infx.engines.cli",    # plan, engine build-tiny-model|up|down
    "infx.preflight.cli",  # preflight
    "infx.loadgen.cli",    # bench
    "infx.agentic.cli",    # traces synth|stats
    "infx.sweep.cli",      # run, run-group, run-point, status, repro
    "infx.changelog.cli",  # changelog validate|matrix
    "infx.evals.cli",      # eval
    "infx.results.cli",    # ingest
    "infx.report.cli",     # compare, report, serve
    "infx.report.costcli", # cost show|export (the cost table, priced results)
    "infx.interop.cli",    # export --format inferencex (and ingest --format inferencex)
    "infx.repro.cli",      # verify, diff-env
    "infx.demo",           # demo
)


def _register_all() -> None:
    for name in _STAGE_CLIS:
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue  # stage not built yet
        importlib.import_module(name).register(app)


@app.callback()
def _root(
    workspace: Path | None = typer.Option(
        None, "--workspace", "-w", help="Workspace directory (default: $INFX_WORKSPACE, else the nearest directory "
        "upwards holding infx.toml, or configs/ + recipes/). `infx workspace` shows what was resolved."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Long warnings list every item, one per line "
                                 "(default: a count and the first few)."),
) -> None:
    """infx: catalog -> matrix -> gate -> launch -> measure -> store -> show."""
    if verbose:
        from infx.diagnostics import set_verbose

        set_verbose(True)
    if workspace is not None:
        from infx.workspace import set_override

        set_override(workspace)


@app.command("version")
def version() -> None:
    """Print the infx version."""
    from infx import __version__

    typer.echo(__version__)


def main() -> None:
    _register_all()
    app()


if __name__ == "__main__":
    main()
