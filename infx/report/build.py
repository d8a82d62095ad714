"""``write_report``: the one call that turns a results directory into report.html (used by
``infx report`` and by the demo)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from infx import atomic
from infx.diagnostics import warn


class ReportRequest(BaseModel):
    """What ``infx report`` is asked: which results (and store), the run (None: the latest) and its baseline,
    the report file, the cost table's price tier, and ``as_of`` for the report of the latest curves."""

    model_config = ConfigDict(extra="forbid")

    results: Path | None = None  # None: the workspace's results/
    output: Path = Path("report.html")
    run: str | None = None
    baseline: str | None = None
    png: bool = False
    gpus_per_node: int | None = Field(None, ge=1)
    runners: Path | None = None
    tier: str | None = None
    as_of: str | None = None
    store: str | None = None


def write_report(results: str | Path, output: str | Path, *, run_id: str | None = None,
                 baseline: str | None = None, png: bool = False, gpus_per_node: int | None = None,
                 runners: str | Path | None = None, cost_model: object = None,
                 cost_tier: str | None = None, as_of: str | None = None, store: str | None = None) -> list[Path]:
    """Ingest ``results`` (idempotent), render the run's self-contained report to ``output`` and,
    with ``png``, the main chart next to it (skipped with a warning when chromium is missing).
    Bad points are reported as warnings and left out. Returns the files written."""
    from infx.analysis.dataset import gpus_per_node_resolver
    from infx.report.data import load_report_data
    from infx.report.html import main_chart_page, render_report
    from infx.report.inputs import open_results

    out = Path(output)
    with open_results(results, store) as opened:
        st = opened.store
        resolve = gpus_per_node_resolver(st, override=gpus_per_node, runners_path=runners)
        view = None
        if as_of is not None:
            from infx.analysis.view import load_view

            view = load_view(st, as_of, gpus_per_node=resolve)
        data = load_report_data(st, run_id, baseline, gpus_per_node=resolve, results_root=opened.root,
                                cost_model=cost_model, cost_tier=cost_tier, view=view)
    atomic.write_text(out, render_report(data))
    out.chmod(0o644)  # a report is meant to be shared (atomic writes create 0600 temp files)
    written = [out]
    if png:
        from infx.report.browser import export_png, find_chromium

        if find_chromium() is None:
            warn("--png: chromium not found, PNG skipped (install Debian 'chromium' or set INFX_CHROMIUM)")
        else:
            shot = export_png(main_chart_page(data), out.with_suffix(".png"))
            shot.chmod(0o644)
            written.append(shot)
    return written
