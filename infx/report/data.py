"""What one report shows, read from the store into typed objects (no SQL in the page code)."""

from __future__ import annotations

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
from infx.diagnostics import Diagnostic, InfxError
from infx.interop.prtable import PRComparison, pr_comparison
from infx.report.samples import LatencySamples, read_samples
from infx.results.layout import RECORDS_FILE, ResultsDir, RunManifest
from infx.results.store import Store


@dataclass(frozen=True)
class PointLine:
    """One row of the point table: every point of the run, measured or not."""

    point_id: str
    state: str
    topology: str
    conc: int
    gpus_per_server: int
    image: str
    launch_fingerprint: str | None
    failure_class: str | None
    reason: str
    log_tail: str
    measured: Measured | None
    kv_cache_tokens: int | None


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

    @property
    def per_node_known(self) -> bool:
        return all(m.gpus_per_node is not None for m in self.measured)

    @property
    def norm(self) -> str:
        return "node" if self.per_node_known else "gpu"


def _telemetry(store: Store, rd: ResultsDir, run_id: str, lines: list[PointLine]) -> list[Any]:
    from infx.report.telemetry import load_point, stored_figures

    figures = stored_figures(store.conn, run_id)
    out = []
    for line in lines:
        if line.measured is None or line.point_id not in figures:
            continue
        try:
            result = rd.read_result(run_id, line.point_id)
        except InfxError:
            continue
        pt = load_point(rd.point_dir(run_id, line.point_id), line.point_id, line.conc, result, figures[line.point_id])
        if pt is not None:
            pt.energy_ci = line.measured.estimate("joules_per_output_token")
            out.append(pt)
    return out


def latest_run(store: Store) -> str:
    runs = store.measured_run_ids()  # an imported run is never the default
    if not runs:
        raise InfxError(Diagnostic(f"{store.path}: no runs ingested"))
    return runs[-1]


def load_report_data(store: Store, run_id: str | None = None, baseline: str | None = None, *,
                     gpus_per_node: GpusPerNode | None = None, results_root: str | Path | None = None,
                     cost_model: Any = None, cost_tier: str | None = None) -> ReportData:
    """Everything the report of ``run_id`` shows. With ``results_root``, per-request latency
    distributions are read from the points' ``records.jsonl.gz``."""
    run_id = run_id or latest_run(store)
    manifest = store.manifest(run_id)
    if manifest is None:
        raise InfxError(Diagnostic(f"run {run_id!r} is not in {store.path} (runs: {', '.join(store.run_ids()) or 'none'})"))
    baseline_manifest = None
    if baseline is None and manifest.baseline_run and store.manifest(manifest.baseline_run) is not None:
        baseline = manifest.baseline_run  # the run names its own baseline (infx run --baseline-run)
    if baseline is not None:
        baseline_manifest = store.manifest(baseline)
        if baseline_manifest is None:
            raise InfxError(Diagnostic(f"baseline run {baseline!r} is not in {store.path} "
                                       f"(runs: {', '.join(store.run_ids())})"))
    resolve = gpus_per_node or gpus_per_node_resolver(store)
    runs = [run_id] + ([baseline] if baseline else [])
    measured = load_measured(store, runs, gpus_per_node=resolve)
    mine = {m.point_id: m for m in measured if m.run_id == run_id}
    lines: list[PointLine] = []
    q = """SELECT p.point_id, p.state, p.topology, p.conc, p.gpus_per_server, p.image, p.launch_fingerprint,
                  f.failure_class, COALESCE(f.reason, ''), COALESCE(f.log_tail, ''), s.kv_cache_tokens
           FROM points p LEFT JOIN failures f ON f.run_id = p.run_id AND f.point_id = p.point_id
           LEFT JOIN startup s ON s.run_id = p.run_id AND s.point_id = p.point_id
           WHERE p.run_id = ? ORDER BY p.topology, p.conc, p.point_id"""
    for (pid, state, topo, conc, gps, image, lf, fclass, reason, tail, kv) in store.conn.execute(q, (run_id,)):
        lines.append(PointLine(pid, state, topo, conc, gps, image, lf, fclass, reason, tail, mine.get(pid), kv))
    data = ReportData(run_id, manifest, measured, lines, baseline, baseline_manifest)
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
            if line.measured is not None:
                path = rd.file(run_id, line.point_id, RECORDS_FILE)
                got = read_samples(path) if path.is_file() else None
                if got is not None:
                    data.samples[line.point_id] = got
        data.telemetry = _telemetry(store, rd, run_id, lines)
    data.arm_comparison = compare_arms(measured, run_id, norm=norm)
    if any(m.disagg for m in measured if m.run_id == run_id):
        from infx.analysis.aggdisagg import compare_agg_disagg

        data.agg_disagg_comparison = compare_agg_disagg(measured, run_id, norm=norm)
    from infx.analysis.cost import load_cost_view

    capacity = None
    if results_root is not None:  # the capacity searches (infx run --search max-concurrency --slo TIER)
        from infx.analysis.capacity import capacity_results

        capacity = capacity_results(results_root, [r for r in (run_id, baseline) if r], measured) or None
    data.cost = load_cost_view(store, measured, runs, model=cost_model, tier=cost_tier, capacity=capacity)
    data.evals = load_evals(store, runs)
    data.accuracy = compare_arm_accuracy(store, data.evals, run_id, None, None)
    if baseline:
        data.accuracy += compare_arm_accuracy(store, data.evals, run_id, None, None, baseline)
    if baseline:
        data.baseline_comparison = compare_runs(measured, run_id, baseline, norm=norm)
        if results_root is not None and store.origin(baseline) == "imported" and store.origin(run_id) == "measured":
            data.published = pr_comparison(store, Path(results_root), run_id, baseline)
    return data
