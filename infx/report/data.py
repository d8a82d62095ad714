"""What one report shows, read from the store into typed objects (no SQL in the page code)."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infx.analysis.accuracy import AccuracyComparison
from infx.analysis.compare import ComparisonSet, compare_arms, compare_runs
from infx.analysis.dataset import (
    GpusPerNode,
    Measured,
    gpus_per_node_resolver,
    load_measured,
)
from infx.analysis.evals import EvalPoint, compare_arm_accuracy, load_evals
from infx.analysis.view import ViewData
from infx.diagnostics import Diagnostic, InfxError
from infx.interop.prtable import PRComparison, pr_comparison
from infx.report.samples import LatencySamples, read_samples
from infx.results.layout import RECORDS_FILE, ResultsDir, RunManifest
from infx.results.store import Store
from infx.results.store.reads import PointLineRow

#: One row of the point table: every point of the run, measured or not (its figures: ``ReportData.measured_at``).
PointLine = PointLineRow


@dataclass
class ReportData:
    run_id: str
    manifest: RunManifest
    measured: list[Measured]  # this run (and the baseline's, when given)
    points: list[PointLine]
    baseline: str | None = None
    baseline_manifest: RunManifest | None = None
    arm_comparison: ComparisonSet | None = None
    baseline_comparison: ComparisonSet | None = None
    agg_disagg_comparison: ComparisonSet | None = None  # when the run holds disaggregated deployments
    notes: list[str] = field(default_factory=list)
    samples: dict[str, LatencySamples] = field(default_factory=dict)  # point id -> raw distributions
    published: PRComparison | None = None  # baseline is an imported InferenceX run: its PR table
    telemetry: list[Any] = field(default_factory=list)  # infx.report.telemetry.PointTelemetry, this run's points
    evals: list[EvalPoint] = field(default_factory=list)  # accuracy evals of this run (and the baseline)
    accuracy: list[AccuracyComparison] = field(default_factory=list)  # paired verdicts: arms, and vs baseline
    cost: Any = None  # infx.analysis.cost.CostView: the cost table applied at read time (never stored)
    reliability: list[Any] = field(default_factory=list)  # infx.analysis.history.ReliabilityRow of the runs shown
    main_view: Any = None  # infx.analysis.mainview.MainView of the report's points (every hardware on one chart)
    acceptance: list[Any] = field(default_factory=list)  # infx.results.store.reads.AcceptanceRow, this run's

    def measured_at(self, point_id: str) -> Measured | None:
        """The measured figures of a point of this run (None: not measured)."""
        return self._mine.get(point_id)

    @functools.cached_property
    def _mine(self) -> dict[str, Measured]:
        return {m.point_id: m for m in self.measured if m.run_id == self.run_id}

    @property
    def per_node_known(self) -> bool:
        return all(m.gpus_per_node is not None for m in self.measured)

    @property
    def norm(self) -> str:
        return "node" if self.per_node_known else "gpu"


def _telemetry(store: Store, rd: ResultsDir, run_id: str, lines: list[PointLine], mine: dict[str, Measured]
               ) -> list[Any]:
    from infx.report.telemetry import load_point

    figures = store.telemetry_figures(run_id)
    out = []
    for line in lines:
        measured = mine.get(line.point_id)
        if measured is None or line.point_id not in figures:
            continue
        try:
            result = rd.read_result(run_id, line.point_id)
        except InfxError:
            continue
        pt = load_point(rd.point_dir(run_id, line.point_id), line.point_id, line.conc, result, figures[line.point_id])
        if pt is not None:
            pt.energy_ci = measured.estimate("joules_per_output_token")
            out.append(pt)
    return out


def latest_run(store: Store) -> str:
    runs = store.measured_run_ids()  # an imported run is never the default
    if not runs:
        raise InfxError(Diagnostic(f"{store.name}: no runs ingested"))
    return runs[-1]


def view_manifest(view: ViewData) -> RunManifest:
    """A manifest for the report of a view (it is no run: its description names the snapshots' runs)."""
    from infx import __version__

    at = view.as_of.at
    return RunManifest(run_id=view.view_id, infx_version=__version__, started_at=at if at is not None else time.time(),
                       official=True, description=view.describe())


def _main_view(data: ReportData, cost_model: Any, view: ViewData | None) -> Any:
    from infx.analysis.costmodel import load_cost_model
    from infx.analysis.mainview import Run, build_main_view

    runs = []
    for m in (data.manifest, data.baseline_manifest):
        if m is None:
            continue
        if view is not None and m.run_id == view.view_id:
            runs += [Run(run_id=r, official=True) for r in view.runs]
        else:
            runs.append(Run(run_id=m.run_id, official=m.official, started_at=m.started_at, ended_at=m.ended_at))
    return build_main_view(data.measured, view=data.run_id, runs=runs, model=cost_model or load_cost_model())


def load_report_data(store: Store, run_id: str | None = None, baseline: str | None = None, *,
                     gpus_per_node: GpusPerNode | None = None, results_root: str | Path | None = None,
                     cost_model: Any = None, cost_tier: str | None = None, view: ViewData | None = None) -> ReportData:
    """Everything the report of ``run_id`` shows. With ``results_root``, per-request latency
    distributions are read from the points' ``records.jsonl.gz``. With ``view`` (``--as-of``), the report is of
    the view (no ``run_id``) or of ``run_id`` against the view as its baseline."""
    if view is not None:
        if run_id is None:
            run_id = view.view_id
        elif baseline is not None:
            raise InfxError(Diagnostic("--as-of with --run compares the run against the curves as of then: "
                                       "drop --baseline", path=("--baseline",)))
        else:
            baseline = view.view_id
    run_id = run_id or latest_run(store)
    in_view = {view.view_id} if view is not None else set()
    manifest = view_manifest(view) if view is not None and run_id == view.view_id else store.manifest(run_id)
    if manifest is None:
        raise InfxError(Diagnostic(f"run {run_id!r} is not in {store.name} "
                                   f"(runs: {', '.join(store.run_ids()) or 'none'})"))
    baseline_manifest = None
    if baseline is None and manifest.baseline_run and store.manifest(manifest.baseline_run) is not None:
        baseline = manifest.baseline_run  # the run names its own baseline (infx run --baseline-run)
    if baseline is not None:
        baseline_manifest = (view_manifest(view) if view is not None and baseline in in_view
                             else store.manifest(baseline))
        if baseline_manifest is None:
            raise InfxError(Diagnostic(f"baseline run {baseline!r} is not in {store.name} "
                                       f"(runs: {', '.join(store.run_ids())})"))
    resolve = gpus_per_node or gpus_per_node_resolver(store)
    runs = [run_id] + ([baseline] if baseline else [])
    stored = [r for r in runs if r not in in_view]  # runs of the store (not the view)
    measured = load_measured(store, stored, gpus_per_node=resolve) if stored else []
    if view is not None:
        measured += view.measured
    mine = {m.point_id: m for m in measured if m.run_id == run_id}
    if run_id in in_view:
        lines = [PointLine(m.point_id, "done", m.arm.topology, m.conc, m.gpus_per_server, m.image,
                           m.launch_fingerprint, None, f"measured in {m.measured_in}", "", m.kv_cache_tokens)
                 for m in sorted(mine.values(), key=lambda m: (m.arm.topology, m.conc, m.point_id))]
    else:
        lines = store.point_lines(run_id)
    data = ReportData(run_id, manifest, measured, lines, baseline, baseline_manifest)
    if view is not None:
        data.notes.append(f"{view.view_id}: {view.describe()}")
        data.notes.extend(view.notes)
    norm = data.norm
    if not data.per_node_known:
        data.notes.append("GPUs per node unknown for some runners: per-node charts and comparisons are omitted "
                          "(record gpus_per_node in the manifest, or pass --gpus-per-node / --runners)")
    buffered = [m for m in measured if m.run_id == run_id and m.buffered_stream]
    if buffered:
        concs = ", ".join(str(m.conc) for m in buffered)
        data.notes.append(f"{len(buffered)} point(s) (concurrency {concs}) failed the streaming check (responses "
                          "arrived in a single chunk): their TPOT-based interactivity is not real, so they are left "
                          "out of the throughput-vs-interactivity charts and frontiers")
    if results_root is not None:
        rd = ResultsDir(results_root)
        for line in lines:
            measured_pt = mine.get(line.point_id)
            if measured_pt is not None:
                path = rd.file(measured_pt.measured_in, line.point_id, RECORDS_FILE)
                got = read_samples(path) if path.is_file() else None
                if got is not None:
                    data.samples[line.point_id] = got
        if run_id not in in_view:
            data.telemetry = _telemetry(store, rd, run_id, lines, mine)
    data.arm_comparison = compare_arms(measured, run_id, norm=norm)
    if any(m.disagg for m in measured if m.run_id == run_id):
        from infx.analysis.aggdisagg import compare_agg_disagg

        data.agg_disagg_comparison = compare_agg_disagg(measured, run_id, norm=norm)
    from infx.analysis.cost import load_cost_view

    capacity = None
    if results_root is not None and stored:  # the capacity searches (infx run --search max-concurrency --slo TIER)
        from infx.analysis.capacity import capacity_results

        capacity = capacity_results(results_root, stored, measured) or None
    data.cost = load_cost_view(store, measured, stored, model=cost_model, tier=cost_tier, capacity=capacity)
    data.main_view = _main_view(data, cost_model, view)
    from infx.analysis.history import reliability

    shown = {r.run_id for r in data.main_view.runs}
    data.reliability = [r for r in reliability(store) if r.run_id in shown]
    data.evals = load_evals(store, stored) if stored else []
    data.acceptance = store.acceptance([run_id]) if run_id not in in_view else []
    if run_id not in in_view:
        data.accuracy = compare_arm_accuracy(store, data.evals, run_id, None, None)
        if baseline and baseline not in in_view:
            data.accuracy += compare_arm_accuracy(store, data.evals, run_id, None, None, baseline)
    if baseline:
        data.baseline_comparison = compare_runs(measured, run_id, baseline, norm=norm)
        if results_root is not None and baseline not in in_view and run_id not in in_view \
                and store.origin(baseline) == "imported" and store.origin(run_id) == "measured":
            data.published = pr_comparison(store, Path(results_root), run_id, baseline)
    return data
