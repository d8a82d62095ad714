"""``infx compare | report | serve``: the show stage's commands (analysis over the store, HTML, dashboard)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infx.diagnostics import Diagnostic, InfxError, exit_on_error
from infx.results.cli import StoreOpt, results_root

if TYPE_CHECKING:
    from infx.analysis.compare import ComparisonSet
    from infx.analysis.costmodel import CostModel
    from infx.analysis.dataset import GpusPerNode
    from infx.results.store import Store

ResultsArg = Annotated[Path | None, typer.Argument(help="Results directory (default: the workspace's results/).")]
RunOpt = Annotated[str | None, typer.Option("--run", help="Run id (default: the latest run).")]
BaselineOpt = Annotated[str | None, typer.Option("--baseline", help="Baseline run id to compare against / overlay.")]
GpnOpt = Annotated[int | None, typer.Option("--gpus-per-node", min=1,
                                                help="GPUs per node for every runner (overrides the manifest).")]
RunnersOpt = Annotated[Path | None, typer.Option("--runners", help="runners.yaml with gpus-per-node per runner.")]
AsOfOpt = Annotated[str | None, typer.Option(
    "--as-of", help="The latest curves as they stood at DATE (YYYY-MM-DD or ISO 8601, UTC) or when RUN finished: "
                    "each curve from one run's snapshot (append-only runs chained under one image); 'latest': now.")]
TierOpt = Annotated[str | None, typer.Option("--tier", help="Cost table price tier (default: the table's default "
                                                             "tier; the workspace's cost-model.yaml, else infx's).")]


def _cost_model(tier: str | None) -> CostModel:
    """The cost table (validated: a bad file is a FILE:LINE error, exit 2) with ``tier`` checked."""
    from infx.analysis.costmodel import load_cost_model

    model = load_cost_model()
    model.tier(tier)
    return model


def _parse_targets(text: str | None) -> list[float] | None:
    if not text:
        return None
    out = []
    for tok in text.replace(" ", "").split(","):
        if not tok:
            continue
        try:
            value = float(tok)
        except ValueError:
            raise InfxError(Diagnostic(f"--at: not a number: {tok!r} (expected e.g. 10,20,40)")) from None
        if not math.isfinite(value) or value <= 0:
            raise InfxError(Diagnostic(f"--at: {tok!r} is not a positive interactivity target (tok/s/user)"))
        out.append(value)
    return out


def _open_store(results: Path, *, quiet: bool = False, store_url: str | None = None) -> Store:
    """Ingest RESULTS (idempotent; cheap when nothing changed) into the store and return it open."""
    from infx.diagnostics import warn
    from infx.results.store import Store, locate_results, require_results
    from infx.results.store.url import resolve

    root, runs = locate_results(results)
    where = resolve(store_url, root)
    require_results(root, runs, where)
    store = Store(where)
    report = store.ingest_dir(root, runs)
    if runs is None:
        from infx.interop.ingest import restore_imports

        restore_imports(store, root)  # imported InferenceX runs, when the database was rebuilt
    for d in report.problems:
        warn(Diagnostic(d.message, d.file, d.line, d.col, d.path, "warning"))
    if not quiet and report.ingested:
        typer.echo(f"ingested: {report.summary()}", err=True)
    return store


def _resolver(store: Store, gpus_per_node: int | None, runners: Path | None) -> GpusPerNode:
    from infx.analysis.dataset import gpus_per_node_resolver

    return gpus_per_node_resolver(store, override=gpus_per_node, runners_path=runners)


def register(app: typer.Typer) -> None:
    @app.command("compare")
    @exit_on_error
    def compare(
        results: ResultsArg = None,
        run: RunOpt = None,
        baseline: BaselineOpt = None,
        arm_a: Annotated[str | None, typer.Option("-a", "--arm-a", help="Arm A, e.g. 'tp=2' (within one run).")] = None,
        arm_b: Annotated[str | None, typer.Option("-b", "--arm-b", help="Arm B, e.g. 'tp=4'.")] = None,
        arm: Annotated[str | None, typer.Option("--arm", help="With --baseline: only this arm.")] = None,
        per: Annotated[str, typer.Option("--per", help="Normalisation: node | gpu | server.")] = "node",
        metric: Annotated[str, typer.Option("--metric", help="total | output tokens per second, or energy: "
                                                          "output tokens per joule (GPU energy, InferenceX rules), "
                                                          "or cost: tokens per $ (cost table; --tier, --basis).")
                          ] = "total",
        x: Annotated[str, typer.Option("--x", help="interactivity (median TPOT) | interactivity_p90.")
                     ] = "interactivity",
        at: Annotated[str | None, typer.Option("--at", help="Interactivity targets, e.g. 10,20,40 "
                                                              "(default: a ladder across the measured range).")] = None,
        ladder: Annotated[int, typer.Option("--ladder", min=2, help="Ladder size when --at is not given.")] = 10,
        margin: Annotated[float, typer.Option("--margin", help="Equivalence margin (fraction): 'equivalent within "
                                                                "+-m' by two one-sided tests (default 0.05).")] = 0.05,
        gpus_per_node: GpnOpt = None,
        runners: RunnersOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
        agg_vs_disagg: Annotated[bool, typer.Option("--agg-vs-disagg", help="Aggregated against disaggregated "
                                                    "deployments of each workload at equal GPU count.")] = False,
        tier: TierOpt = None,
        basis: Annotated[str, typer.Option("--basis", help="--metric cost: input/output tokens on all GPUs of the "
                                           "deployment (all) or on their role's GPUs (role).")] = "all",
        as_of: AsOfOpt = None,
        store: StoreOpt = None,
    ) -> None:
        """Throughput ratio of two arms (or a run vs a baseline) at equal interactivity, read off step frontiers.
        With --as-of: the arms of the latest curves as of then, or --run R against them."""
        from infx.analysis.compare import compare_arms, compare_runs
        from infx.analysis.dataset import load_measured
        from infx.report.data import latest_run

        for name, value, allowed in (("--per", per, ("node", "gpu", "server")),
                                     ("--metric", metric, ("total", "output", "energy", "cost")),
                                     ("--basis", basis, ("all", "role")),
                                     ("--x", x, ("interactivity", "interactivity_p90"))):
            if value not in allowed:
                raise InfxError(Diagnostic(f"{name}: expected one of {', '.join(allowed)}, got {value!r}"))
        if not 0 < margin < 1:
            raise InfxError(Diagnostic(f"--margin must be a fraction in (0, 1) such as 0.05, not {margin}",
                                       path=("--margin",)))
        targets = _parse_targets(at)
        cost_model = _cost_model(tier) if metric == "cost" else None
        st = _open_store(results_root(results), quiet=as_json, store_url=store)
        try:
            view = None
            if as_of is not None:
                from infx.analysis.view import load_view

                if run and baseline:
                    raise InfxError(Diagnostic("--as-of compares the curves as of then with --run or --baseline, not "
                                               "both", path=("--as-of",)))
                view = load_view(st, as_of, gpus_per_node=_resolver(st, gpus_per_node, runners))
                if run:
                    baseline = view.view_id
                else:
                    run = view.view_id
            run_id = run or latest_run(st)
            known = st.run_ids()
            in_view = {view.view_id} if view is not None else set()
            for r in (run_id, baseline):
                if r is not None and r not in known and r not in in_view:
                    raise InfxError(Diagnostic(f"run {r!r} not found (runs: {', '.join(known) or 'none'})"))
            stored = [r for r in [run_id] + ([baseline] if baseline else []) if r not in in_view]
            measured = load_measured(st, stored, gpus_per_node=_resolver(st, gpus_per_node, runners)) if stored else []
            if view is not None:
                measured += view.measured
            published = None
            if baseline and baseline not in in_view and st.origin(baseline) == "imported":  # its PR table too
                from infx.interop.prtable import pr_comparison
                from infx.results.store import locate_results

                published = pr_comparison(st, locate_results(results_root(results))[0], run_id, baseline)
            from infx.analysis.evals import compare_arm_accuracy, load_evals

            accuracy = []
            if run_id not in in_view and (baseline is None or baseline not in in_view):
                evals = load_evals(st, stored)
                accuracy = compare_arm_accuracy(st, evals, run_id, arm if baseline else arm_a,
                                                None if baseline else arm_b, baseline)
            if view is not None and not as_json:
                typer.echo(f"{view.view_id}: {view.describe()}")
                for note in view.notes:
                    typer.echo(f"  note: {note}")
        finally:
            st.close()
        if cost_model is not None:  # read-time pricing (infx.analysis.cost): tokens per $ at equal interactivity
            from infx.analysis.cost import basis_of, compare_cost

            cs = compare_cost(measured, cost_model, run_id, baseline=baseline, a=arm_a, b=arm_b, arm=arm, tier=tier,
                              basis=basis_of(basis), x_metric=x, at=targets, ladder_points=ladder)
        elif agg_vs_disagg:
            from infx.analysis.aggdisagg import compare_agg_disagg

            cs = compare_agg_disagg(measured, run_id, x_metric=x, y_metric=metric, norm=per, at=targets,
                                    ladder_points=ladder, margin=margin)
        elif baseline:
            cs = compare_runs(measured, run_id, baseline, arm=arm, x_metric=x, y_metric=metric, norm=per,
                              at=targets, ladder_points=ladder, margin=margin)
        else:
            cs = compare_arms(measured, run_id, arm_a, arm_b, x_metric=x, y_metric=metric, norm=per,
                              at=targets, ladder_points=ladder, margin=margin)
            if (arm_a or arm_b) and not cs.comparisons:  # a selector that matches no arm is bad input
                raise InfxError(Diagnostic(cs.notes[0] if cs.notes else f"no arm matches in run {run_id}",
                                           path=("--arm-a" if arm_a else "--arm-b",)))
        cs.accuracy = accuracy
        if as_json:
            if published is not None:
                typer.echo(json.dumps({"frontiers": cs.model_dump(mode="json"),
                                       "inferencex": published.model_dump(mode="json")}, indent=2))
            else:
                typer.echo(cs.model_dump_json(indent=2))
            return
        _print_comparisons(cs)
        from infx.analysis.capacity import capacity_lines
        from infx.results.store import locate_results as _locate

        root = _locate(results_root(results))[0]
        searched = [run_id] + ([baseline] if baseline else [])
        for line in capacity_lines(root, searched):
            typer.echo(line)
        if cost_model is not None:  # cost at the SLO tiers the capacity searches found
            from infx.analysis.capacity import capacity_results
            from infx.analysis.cost import cost_view

            found = capacity_results(root, searched, measured)
            if found:
                costs = cost_view([m for m in measured if m.run_id in searched], cost_model, tier, capacity=found)
                for c, sc in zip(found, costs.slo, strict=True):
                    v = sc.usd_per_mtok
                    price = f"${v.value:,.4g}/Mtok" if v.value is not None else f"n/a ({v.reason})"
                    typer.echo(f"{c.run_id} cost at SLO tier {c.slo!r} (price tier {costs.tier}): {price} at "
                               f"{sc.point_id} (conc {c.conc}; max users at tier {c.max_conc})")
        if published is not None:
            from infx.interop.prtable import print_table

            print_table(published)
        if not cs.comparisons and not cs.accuracy:
            raise SystemExit(1)

    @app.command("report")
    @exit_on_error
    def report(
        results: ResultsArg = None,
        output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")] = Path("report.html"),
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
        from infx.report.build import write_report

        check_output_file(output, "-o")
        for path in write_report(results_root(results), output, run_id=run, baseline=baseline, png=png,
                                 gpus_per_node=gpus_per_node, runners=runners, cost_model=_cost_model(tier),
                                 cost_tier=tier, as_of=as_of, store=store):
            typer.echo(f"wrote {path}")

    @app.command("serve")
    @exit_on_error
    def serve(
        results: ResultsArg = None,
        port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free port).")] = 8787,
        host: Annotated[str, typer.Option("--host", help="Address to bind (default loopback only).")] = "127.0.0.1",
        gpus_per_node: GpnOpt = None,
        store: StoreOpt = None,
    ) -> None:
        """Read-only dashboard: lists runs, renders each run's report, overlays a run on a baseline; /latest (and
        /latest?as_of=DATE|RUN) and /api/frontiers?as_of=... show the latest curves."""
        from infx.report.server import serve as run_server

        results = results_root(results)
        if not results.is_dir():
            raise InfxError(Diagnostic(f"{results}: not a directory"))
        run_server(results, host=host, port=port, gpus_per_node=gpus_per_node, store=store)


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
