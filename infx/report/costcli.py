"""``infx cost show | export``: the cost table in use, and every stored point priced at read time."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Annotated

import typer

from infx.diagnostics import Diagnostic, InfxError, exit_on_error

cost_app = typer.Typer(help="Cost per token: the price table (shipped, or the workspace's cost-model.yaml) and "
                            "priced results.", no_args_is_help=True)

EXPORT_KEYS = ("run_id", "point_id", "sku", "tier", "disagg", "gpus", "prefill_gpus", "decode_gpus",
               "usd_per_gpu_hour", "usd_per_mtok_total", "usd_per_mtok_input_all", "usd_per_mtok_input_role",
               "usd_per_mtok_output_all", "usd_per_mtok_output_role", "tokens_per_usd_total",
               "tokens_per_usd_input_all", "tokens_per_usd_input_role", "tokens_per_usd_output_all",
               "tokens_per_usd_output_role", "tok_per_s_per_mw",
               "tok_per_s_per_measured_kw", "energy_usd_per_mtok", "on_cost_frontier", "not_priced")


@cost_app.command("show")
@exit_on_error
def show(path: Annotated[Path | None, typer.Argument(help="A cost table file (default: the workspace's "
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


@cost_app.command("export")
@exit_on_error
def export(results: Annotated[Path | None, typer.Argument(help="Results directory (default: the workspace's).")] = None,
           run: Annotated[str | None, typer.Option("--run", help="Run id (default: every run).")] = None,
           tier: Annotated[str | None, typer.Option("--tier", help="Price tier (default: the table's).")] = None,
           fmt: Annotated[str, typer.Option("--format", help="csv | json")] = "csv",
           output: Annotated[Path | None, typer.Option("-o", "--output", help="File to write (default: stdout).")
                             ] = None,
           ) -> None:
    """Every measured point priced with the current cost table (read time; the store is not changed)."""
    from infx import atomic
    from infx.analysis.cost import load_cost_view
    from infx.analysis.costmodel import load_cost_model
    from infx.analysis.dataset import load_measured
    from infx.report.cli import _open_store
    from infx.results.cli import results_root

    if fmt not in ("csv", "json"):
        raise InfxError(Diagnostic(f"--format: expected csv or json, got {fmt!r}"))
    model = load_cost_model()
    model.tier(tier)
    store = _open_store(results_root(results), quiet=True)
    try:
        runs = [run] if run else None
        if run and run not in store.run_ids():
            raise InfxError(Diagnostic(f"run {run!r} not found (runs: {', '.join(store.run_ids()) or 'none'})"))
        measured = load_measured(store, runs)
        view = load_cost_view(store, measured, runs, model=model, tier=tier)
    finally:
        store.close()
    rows = []
    for pc in view.points:
        v = pc.usd_per_mtok
        rows.append(dict(zip(EXPORT_KEYS, (
            pc.run_id, pc.point_id, pc.sku, pc.tier, pc.disagg, pc.gpus, pc.prefill_gpus, pc.decode_gpus,
            pc.usd_per_gpu_hour.value, v["total"].value, v["input:all"].value, v["input:role"].value,
            v["output:all"].value, v["output:role"].value,
            *(pc.tokens_per_usd[k].value for k in ("total", "input:all", "input:role", "output:all", "output:role")),
            pc.tok_per_s_per_mw.value,
            pc.tok_per_s_per_measured_kw.value, pc.energy_usd_per_mtok.value, pc.point_id in view.on_frontier,
            v["total"].reason or None), strict=True)))
    if fmt == "json":
        text = json.dumps({"table": view.table, "version": view.version, "files": view.files, "tier": view.tier,
                           "points": rows}, indent=2) + "\n"
    else:
        buf = io.StringIO()
        buf.write(f"# {view.table}; tier {view.tier}\n")
        w = csv.DictWriter(buf, fieldnames=list(EXPORT_KEYS), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        text = buf.getvalue()
    if output is None:
        typer.echo(text, nl=False)
    else:
        atomic.write_text(output, text)
        typer.echo(f"wrote {output}", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(cost_app, name="cost")
