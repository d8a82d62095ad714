"""``infx cost export``: what it is asked (:class:`CostExportRequest`) and every stored point priced with the cost
table in use, at read time (:func:`export_costs`; the store is not changed), as CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from infx.diagnostics import Diagnostic, InfxError

EXPORT_KEYS = ("run_id", "point_id", "sku", "tier", "disagg", "gpus", "prefill_gpus", "decode_gpus",
               "usd_per_gpu_hour", "usd_per_mtok_total", "usd_per_mtok_input_all", "usd_per_mtok_input_role",
               "usd_per_mtok_output_all", "usd_per_mtok_output_role", "tokens_per_usd_total",
               "tokens_per_usd_input_all", "tokens_per_usd_input_role", "tokens_per_usd_output_all",
               "tokens_per_usd_output_role", "tok_per_s_per_mw",
               "tok_per_s_per_measured_kw", "energy_usd_per_mtok", "on_cost_frontier", "not_priced")


class CostExportRequest(BaseModel):
    """What ``infx cost export`` is asked: which results, which run (None: every run), the price tier (None:
    the table's default), the format, and the file to write (None: stdout)."""

    model_config = ConfigDict(extra="forbid")

    results: Path | None = None  # None: the workspace's results/
    run: str | None = None
    tier: str | None = None
    format: Literal["csv", "json"] = "csv"
    output: Path | None = None


def export_costs(req: CostExportRequest) -> str:
    """The priced points ``req`` asks for, as the text of the export (CSV with a comment line naming the table
    and tier, or JSON with the table's version and files)."""
    from infx.analysis.cost import load_cost_view
    from infx.analysis.dataset import load_measured
    from infx.report.inputs import cost_model_for, open_results
    from infx.results.layout import results_root

    model = cost_model_for(req.tier)
    with open_results(results_root(req.results)) as opened:
        store = opened.store
        runs = [req.run] if req.run else None
        if req.run and req.run not in store.run_ids():
            raise InfxError(Diagnostic(f"run {req.run!r} not found (runs: {', '.join(store.run_ids()) or 'none'})"))
        measured = load_measured(store, runs)
        view = load_cost_view(store, measured, runs, model=model, tier=req.tier)
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
    if req.format == "json":
        return json.dumps({"table": view.table, "version": view.version, "files": view.files, "tier": view.tier,
                           "points": rows}, indent=2) + "\n"
    buf = io.StringIO()
    buf.write(f"# {view.table}; tier {view.tier}\n")
    w = csv.DictWriter(buf, fieldnames=list(EXPORT_KEYS), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()
