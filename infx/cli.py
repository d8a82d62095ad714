"""The ``infx`` command. Each stage package contributes its commands through a ``register(app)`` function
in its ``cli`` module, which only attaches them; the command bodies import their libraries lazily so that
``infx --help`` and the fast paths start quickly. A stage module that fails to load stops ``infx`` with one
line naming it (exit 1): a command never goes missing silently."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

import typer

EXIT_BROKEN_STAGE = 1

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
    "infx.recipes.cli",    # recipes render|show|check (upstream vLLM recipes)
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
    "infx.review.cli",     # review
)


class StageLoadError(Exception):
    """A stage's command module could not be loaded: its commands would be missing."""


def _register_all(stages: Sequence[str] | None = None) -> None:
    """Attach every stage's commands to ``app``. A stage module that cannot be imported (a misspelled name,
    a broken import inside it) or has no ``register(app)`` is an error, never a silently missing command."""
    for name in _STAGE_CLIS if stages is None else stages:
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            raise StageLoadError(f"cannot load the commands of {name}: {type(exc).__name__}: {exc}") from exc
        register = getattr(module, "register", None)
        if not callable(register):
            raise StageLoadError(f"{name} has no register(app): its commands cannot be attached")
        register(app)


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
    try:
        _register_all()
    except StageLoadError as exc:  # a broken install or a bug: say which stage, once, and stop
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_BROKEN_STAGE) from None
    app()


if __name__ == "__main__":
    main()
