"""``infx compare | report | serve``: the show stage's commands (analysis over the store, HTML, dashboard). Each
builds its request once (:class:`~infx.report.comparison.CompareRequest`, :class:`~infx.report.build.ReportRequest`,
:class:`~infx.report.server.ServeRequest`, through :func:`infx.cli_options.build_request`), hands it to the
library and prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infx.cli_options import ModelDefault, build_request
from infx.diagnostics import Diagnostic, InfxError, exit_on_error
from infx.results.cli import StoreOpt

if TYPE_CHECKING:
    from pydantic import BaseModel

    from infx.analysis.compare import ComparisonSet

ResultsArg = Annotated[Path | None, typer.Argument(help="Results directory (default: the workspace's results/).")]
RunOpt = Annotated[str | None, typer.Option("--run", help="Run id (default: the latest run).")]
BaselineOpt = Annotated[str | None, typer.Option("--baseline", help="Baseline run id to compare against / overlay.")]
GpnOpt = Annotated[int | None, typer.Option("--gpus-per-node",
                                                help="GPUs per node for every runner (overrides the manifest).")]
RunnersOpt = Annotated[Path | None, typer.Option("--runners", help="runners.yaml with gpus-per-node per runner.")]
AsOfOpt = Annotated[str | None, typer.Option(
    "--as-of", help="The latest curves as they stood at DATE (YYYY-MM-DD or ISO 8601, UTC) or when RUN finished: "
                    "each curve from one run's snapshot (append-only runs chained under one image); 'latest': now.")]
TierOpt = Annotated[str | None, typer.Option("--tier", help="Cost table price tier (default: the table's default "
                                                             "tier; the workspace's cost-model.yaml, else infx's).")]

# CompareRequest fields whose option is not spelled --field-name
COMPARE_OPTIONS = {"ladder_points": "--ladder"}


def _compare_request() -> type[BaseModel]:
    from infx.report.comparison import CompareRequest

    return CompareRequest


def _report_request() -> type[BaseModel]:
    from infx.report.build import ReportRequest

    return ReportRequest


def _serve_request() -> type[BaseModel]:
    from infx.report.server import ServeRequest

    return ServeRequest


@exit_on_error
def compare_cmd(
    *,
    results: ResultsArg = None,
    run: RunOpt = None,
    baseline: BaselineOpt = None,
    arm_a: Annotated[str | None, typer.Option("-a", "--arm-a", help="Arm A, e.g. 'tp=2' (within one run).")] = None,
    arm_b: Annotated[str | None, typer.Option("-b", "--arm-b", help="Arm B, e.g. 'tp=4'.")] = None,
    arm: Annotated[str | None, typer.Option("--arm", help="With --baseline: only this arm.")] = None,
    per: Annotated[str, typer.Option("--per", default_factory=ModelDefault(_compare_request, "per"),
                                     help="Normalisation: node | gpu | server.")],
    metric: Annotated[str, typer.Option("--metric", default_factory=ModelDefault(_compare_request, "metric"),
                                        help="total | output tokens per second, or energy: output tokens per joule "
                                             "(GPU energy, InferenceX rules), or cost: tokens per $ (cost table; "
                                             "--tier, --basis).")],
    x: Annotated[str, typer.Option("--x", default_factory=ModelDefault(_compare_request, "x"),
                                   help="interactivity (median TPOT) | interactivity_p90.")],
    at: Annotated[str | None, typer.Option("--at", help="Interactivity targets, e.g. 10,20,40 "
                                                          "(default: a ladder across the measured range).")] = None,
    ladder: Annotated[int, typer.Option("--ladder", default_factory=ModelDefault(_compare_request, "ladder_points"),
                                        help="Ladder size when --at is not given.")],
    margin: Annotated[float, typer.Option("--margin", default_factory=ModelDefault(_compare_request, "margin"),
                                          help="Equivalence margin (fraction): 'equivalent within +-m' by two "
                                               "one-sided tests.")],
    gpus_per_node: GpnOpt = None,
    runners: RunnersOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    agg_vs_disagg: Annotated[bool, typer.Option("--agg-vs-disagg", help="Aggregated against disaggregated "
                                                "deployments of each workload at equal GPU count.")] = False,
    tier: TierOpt = None,
    basis: Annotated[str, typer.Option("--basis", default_factory=ModelDefault(_compare_request, "basis"),
                                       help="--metric cost: input/output tokens on all GPUs of the deployment (all) "
                                            "or on their role's GPUs (role).")],
    as_of: AsOfOpt = None,
    store: StoreOpt = None,
) -> None:
    """Throughput ratio of two arms (or a run vs a baseline) at equal interactivity, read off step frontiers.
    With --as-of: the arms of the latest curves as of then, or --run R against them."""
    from infx.analysis.capacity import capacity_lines
    from infx.report.comparison import CompareRequest, compare, gather, slo_cost_lines

    req = build_request(CompareRequest, {
        "results": results, "run": run, "baseline": baseline, "arm_a": arm_a, "arm_b": arm_b, "arm": arm,
        "per": per, "metric": metric, "x": x, "at": at, "ladder_points": ladder, "margin": margin,
        "gpus_per_node": gpus_per_node, "runners": runners, "agg_vs_disagg": agg_vs_disagg, "tier": tier,
        "basis": basis, "as_of": as_of, "store": store}, COMPARE_OPTIONS)
    inputs = gather(req)
    if not as_json and inputs.ingested.ingested:
        typer.echo(f"ingested: {inputs.ingested.summary()}", err=True)
    if inputs.view is not None and not as_json:
        typer.echo(f"{inputs.view.view_id}: {inputs.view.describe()}")
        for note in inputs.view.notes:
            typer.echo(f"  note: {note}")
    cs = compare(req, inputs)
    if as_json:
        if inputs.published is not None:
            typer.echo(json.dumps({"frontiers": cs.model_dump(mode="json"),
                                   "inferencex": inputs.published.model_dump(mode="json")}, indent=2))
        else:
            typer.echo(cs.model_dump_json(indent=2))
        return
    _print_comparisons(cs)
    for line in capacity_lines(inputs.root, inputs.searched) + slo_cost_lines(req, inputs):
        typer.echo(line)
    if inputs.published is not None:
        from infx.interop.prtable import print_table

        print_table(inputs.published)
    if not cs.comparisons and not cs.accuracy:
        raise SystemExit(1)


@exit_on_error
def report_cmd(
    *,
    results: ResultsArg = None,
    output: Annotated[Path, typer.Option("-o", "--output", default_factory=ModelDefault(_report_request, "output"),
                                         help="HTML file to write.")],
    run: RunOpt = None,
    baseline: BaselineOpt = None,
    png: Annotated[bool, typer.Option("--png", help="Also write the main chart as PNG (needs chromium).")] = False,
    gpus_per_node: GpnOpt = None,
    runners: RunnersOpt = None,
    tier: TierOpt = None,
    as_of: AsOfOpt = None,
    store: StoreOpt = None,
) -> None:
    """Write one self-contained HTML report (plotly inlined; opens offline). With --as-of: the report of the
    latest curves as of then (or of --run against them)."""
    from infx.outpaths import check_output_file
    from infx.report.build import ReportRequest, write_report
    from infx.report.inputs import cost_model_for
    from infx.results.layout import results_root

    req = build_request(ReportRequest, {
        "results": results, "output": output, "run": run, "baseline": baseline, "png": png,
        "gpus_per_node": gpus_per_node, "runners": runners, "tier": tier, "as_of": as_of, "store": store},
        {"output": "-o"})
    check_output_file(req.output, "-o")
    for path in write_report(results_root(req.results), req.output, run_id=req.run, baseline=req.baseline,
                             png=req.png, gpus_per_node=req.gpus_per_node, runners=req.runners,
                             cost_model=cost_model_for(req.tier), cost_tier=req.tier, as_of=req.as_of,
                             store=req.store):
        typer.echo(f"wrote {path}")


@exit_on_error
def serve_cmd(
    *,
    results: ResultsArg = None,
    port: Annotated[int, typer.Option("--port", default_factory=ModelDefault(_serve_request, "port"),
                                      help="Port (0: any free port).")],
    host: Annotated[str, typer.Option("--host", default_factory=ModelDefault(_serve_request, "host"),
                                      help="Address to bind (default loopback only).")],
    gpus_per_node: GpnOpt = None,
    store: StoreOpt = None,
) -> None:
    """Read-only dashboard: lists runs, renders each run's report, overlays a run on a baseline; /latest (and
    /latest?as_of=DATE|RUN) and /api/frontiers?as_of=... show the latest curves."""
    from infx.report.server import ServeRequest, serve
    from infx.results.layout import results_root

    req = build_request(ServeRequest, {"results": results, "port": port, "host": host,
                                       "gpus_per_node": gpus_per_node, "store": store})
    root = results_root(req.results)
    if not root.is_dir():
        raise InfxError(Diagnostic(f"{root}: not a directory"))
    serve(root, host=req.host, port=req.port, gpus_per_node=req.gpus_per_node, store=req.store)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
    app.command("report")(report_cmd)
    app.command("serve")(serve_cmd)


def _print_comparisons(cs: ComparisonSet) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{cs.title}[/bold]")
    for note in cs.notes:
        console.print(f"  note: {note}")
    for c in cs.comparisons:
        console.print(f"\n[bold]{c.workload}: {c.a_label} (A) vs {c.b_label} (B)[/bold]")
        for line in c.verdict:
            console.print(f"  - {line}")
        x_head, rows = c.evidence()
        table = Table(show_edge=False)
        if rows:  # the verdicts' own evidence: each ratio with its 95% interval and what it decides
            table.add_column(x_head, justify="right")
            table.add_column(f"A {c.y_label}", justify="right")
            table.add_column(f"B {c.y_label}", justify="right")
            table.add_column("A/B [95% CI]", justify="right")
            table.add_column("verdict")
            for v in rows:
                table.add_row(f"{v.x:g}" if x_head == "concurrency" else f"{v.x:.2f}",
                              "-" if v.a is None else f"{v.a:,.1f}", "-" if v.b is None else f"{v.b:,.1f}",
                              _ratio_ci(v.ratio, v.ratio_lo, v.ratio_hi), v.decision)
        else:  # no common range: the ladder's point estimates, labelled as such
            console.print("  point estimates only (no interval, no verdict):")
            table.add_column(f"{c.x_label} ({c.x_unit})", justify="right")
            table.add_column(f"A {c.y_label}", justify="right")
            table.add_column(f"B {c.y_label}", justify="right")
            table.add_column("A/B", justify="right")
            table.add_column("note")
            for e in c.ladder:
                table.add_row(f"{e.x:.2f}", "-" if e.a is None else f"{e.a:,.1f}",
                              "-" if e.b is None else f"{e.b:,.1f}", "-" if e.ratio is None else f"{e.ratio:.2f}x",
                              e.note)
        console.print(table)
    for acc in cs.accuracy:
        colour = {"same": "green", "not comparable": "yellow"}.get(acc.verdict, "red")
        console.print(f"\n[bold]accuracy: {acc.a_label} (A) vs {acc.b_label} (B)[/bold]: "
                      f"[{colour}]{acc.verdict}[/{colour}]")
        console.print(f"  - {acc.text}", highlight=False)


def _ratio_ci(ratio: float | None, lo: float | None, hi: float | None) -> str:
    """``1.21x [0.95, 1.54]``: a ratio never printed without its interval when it has one."""
    if ratio is None:
        return "-"
    return f"{ratio:.2f}x" + ("" if lo is None or hi is None else f" [{lo:.2f}, {hi:.2f}]")
