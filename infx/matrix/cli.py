"""``infx matrix full-sweep|test-config ...``: the same command as ``python -m infx.matrix.generate``
(:mod:`infx.matrix.generate_cli`)."""

from __future__ import annotations

import typer

_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def matrix(ctx: typer.Context) -> None:
    """Expand master configs into matrix rows (JSON on stdout): full-sweep | test-config. See --help."""
    from infx.matrix.generate_cli import run

    raise typer.Exit(run(list(ctx.args), prog="infx matrix"))


def register(app: typer.Typer) -> None:
    app.command("matrix", context_settings=_PASSTHROUGH, add_help_option=False)(matrix)
