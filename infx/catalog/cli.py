"""``infx validate --config-files F... --runner-config R``: check catalogs, report every problem."""

from __future__ import annotations

import typer

_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def validate(ctx: typer.Context) -> None:
    """Validate master configs and runners.yaml; errors as FILE:LINE:COL, exit 2. See --help."""
    from infx.catalog.validate import run

    raise typer.Exit(run(list(ctx.args)))


def register(app: typer.Typer) -> None:
    app.command("validate", context_settings=_PASSTHROUGH, add_help_option=False)(validate)
