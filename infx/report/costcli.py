"""``infx cost show | export``: the cost table in use, and every stored point priced at read time. ``export``
builds its :class:`~infx.report.costexport.CostExportRequest` once and hands it to the library."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infx.cli_options import ModelDefault, build_request
from infx.diagnostics import exit_on_error

if TYPE_CHECKING:
    from pydantic import BaseModel


def _export_request() -> type[BaseModel]:
    from infx.report.costexport import CostExportRequest

    return CostExportRequest


@exit_on_error
def show_cmd(path: Annotated[Path | None, typer.Argument(help="A cost table file (default: the workspace's "
                                                         "cost-model.yaml, else the one infx ships).")] = None,
             as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Validate a cost table and print it: version, source, tiers, and per SKU power and prices with sources."""
    from rich.console import Console
    from rich.table import Table

    from infx.analysis.costmodel import load_cost_model

    model = load_cost_model(path)
    if as_json:
        typer.echo(model.model_dump_json(indent=2))
        return
    console = Console()
    console.print(model.label, highlight=False)
    console.print(f"files: {', '.join(model.files)}; default tier: {model.default_tier}", highlight=False)
    t = Table(show_edge=False)
    for col in ("SKU", "all-in kW/GPU", *model.tiers, "$/kWh"):
        t.add_column(col)
    for name, sc in model.skus.items():
        prices = []
        for tier in model.tiers:
            p = sc.prices[tier]
            prices.append(f"not priced: {p.unpriced}"[:40] if p.value is None
                          else f"{p.value:g} $/{'GPU' if p.unit == 'gpu-hour' else 'node'}-hr")
        kw = sc.all_in_kw.value
        kwh = sc.usd_per_kwh.value if sc.usd_per_kwh else None
        t.add_row(name + (" (illustrative)" if sc.illustrative else ""),
                  f"{kw:g}" if kw is not None else f"not known: {sc.all_in_kw.unpriced}"[:40], *prices,
                  f"{kwh:g}" if kwh is not None else "-")
    console.print(t)


@exit_on_error
def export_cmd(
    *,
    results: Annotated[Path | None, typer.Argument(help="Results directory (default: the workspace's).")] = None,
    run: Annotated[str | None, typer.Option("--run", help="Run id (default: every run).")] = None,
    tier: Annotated[str | None, typer.Option("--tier", help="Price tier (default: the table's).")] = None,
    fmt: Annotated[str, typer.Option("--format", default_factory=ModelDefault(_export_request, "format"),
                                     help="csv | json")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="File to write (default: stdout).")] = None,
) -> None:
    """Every measured point priced with the current cost table (read time; the store is not changed)."""
    from infx import atomic
    from infx.report.costexport import CostExportRequest, export_costs

    req = build_request(CostExportRequest, {"results": results, "run": run, "tier": tier, "format": fmt,
                                            "output": output}, {"output": "-o"})
    text = export_costs(req)
    if req.output is None:
        typer.echo(text, nl=False)
    else:
        atomic.write_text(req.output, text)
        typer.echo(f"wrote {req.output}", err=True)


def register(app: typer.Typer) -> None:
    cost_app = typer.Typer(help="Cost per token: the price table (shipped, or the workspace's cost-model.yaml) and "
                                "priced results.", no_args_is_help=True)
    cost_app.command("show")(show_cmd)
    cost_app.command("export")(export_cmd)
    app.add_typer(cost_app, name="cost")
