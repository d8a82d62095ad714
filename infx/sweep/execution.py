"""Run a prepared sweep: on this host with live progress and a final table (``infx run``, ``infx demo``,
``infx repro``), the planned groups of a Slurm job (``infx run-group``), or submitted to Slurm
(``infx run --backend slurm``, ``infx repro --backend slurm``). Each returns the command's exit code."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infx.sweep.driver import Prepared, RunPlan, RunRequest
    from infx.sweep.interfaces import EngineStarter, PointEvaluator, PointMeasurer
    from infx.sweep.layout import RunDir
    from infx.sweep.local import LocalEvaluator
    from infx.sweep.orchestrator import Emit

EXIT_FAILED_POINTS = 1
EXIT_INTERRUPTED = 130


def sigterm_as_interrupt() -> None:
    """SIGTERM (Slurm's scancel/time limit, a killed CI job) takes the same path as Ctrl-C:
    the running engine is stopped, finished points stay, nothing is half-written."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def run_prepared_locally(prep: Prepared, *, starter: EngineStarter | None = None, measurer: PointMeasurer | None = None,
                         evaluator: PointEvaluator | None = None) -> int:
    """Run a prepared sweep on this host with live progress and a final table; the exit code."""
    from rich.console import Console

    from infx.sweep.driver import run_local, workspace_of
    from infx.sweep.local import LocalMeasurer, LocalStarter, kv_calibrator
    from infx.sweep.progress import Progress, results_table
    from infx.sweep.rendering import renderer_at_port

    sigterm_as_interrupt()
    starter = starter or LocalStarter(renderer_at_port(prep.request.recipes, workspace_of(prep.request)),
                                      calibrate=kv_calibrator(prep.request.runner_config))
    measurer = measurer or LocalMeasurer(prep.request.load, telemetry=prep.request.telemetry)
    evaluator = evaluator or evaluator_for(prep.request)
    interrupted = False
    with Progress() as progress:
        try:
            summary = run_local(prep, starter, measurer, ingesting(prep.run_dir, progress), evaluator=evaluator)
        except KeyboardInterrupt:
            interrupted = True
    Console(stderr=True).print(results_table(prep.run_dir, [p.point_id for p in prep.points]))
    print(f"results: {prep.run_dir.root}", file=sys.stderr)
    if interrupted:
        return EXIT_INTERRUPTED
    if summary.launches == 0 and not summary.failed and not summary.done:
        print(f"nothing to do: {len(summary.reused)} point(s) already measured"
              + (f", {len(summary.previously_failed)} failed before (--rerun-failed retries them)"
                 if summary.previously_failed else "")
              + (f", {len(summary.skipped)} rejected by the gate" if summary.skipped else ""), file=sys.stderr)
    if summary.accuracy_failed:
        print(f"accuracy-fail: {len(summary.accuracy_failed)} point(s) below their eval threshold: "
              f"{', '.join(summary.accuracy_failed)}", file=sys.stderr)
    if summary.eval_failed:
        print(f"eval failed: {len(summary.eval_failed)} point(s) got no complete score: "
              f"{', '.join(summary.eval_failed)}", file=sys.stderr)
    return 0 if summary.ok else EXIT_FAILED_POINTS


def evaluator_for(request: RunRequest) -> LocalEvaluator | None:
    """The sweep's evaluator when the request grades evals."""
    if request.evals == "none":
        return None
    from infx.sweep.local import LocalEvaluator

    return LocalEvaluator(request.eval_limit)


def ingesting(rd: RunDir, emit: Emit) -> Emit:
    """Wrap an event sink: each finished point is ingested into ``RESULTS/infx.db`` as it lands
    (local runs only: Slurm nodes never write the shared SQLite file; ``infx ingest`` does it later)."""
    from infx.sweep import events as ev

    warned = False

    def sink(e: Any) -> None:
        nonlocal warned
        emit(e)
        if isinstance(e, (ev.PointFinished, ev.EvalFinished)):
            try:
                from infx.results.store import ingest_point

                rep = ingest_point(rd.results.root, rd.run_id, e.point_id)
                problems = [str(d) for d in rep.problems]
            except Exception as exc:
                problems = [f"{type(exc).__name__}: {exc}"]
            if problems and not warned:
                warned = True
                print(f"ingest: {problems[0]} (re-run `infx ingest {rd.results.root}` later)", file=sys.stderr)

    return sink


def run_planned_groups(rd: RunDir, plan: RunPlan, fingerprints: list[str]) -> int:
    """Body of ``infx run-group``: re-render the planned points, check fingerprints, run the groups."""
    from infx.sweep.driver import finish_invocation, options_of, workspace_of
    from infx.sweep.grouping import LaunchGroup
    from infx.sweep.local import LocalMeasurer, LocalStarter, kv_calibrator
    from infx.sweep.orchestrator import Orchestrator
    from infx.sweep.progress import Progress
    from infx.sweep.rendering import renderer_at_port, replay_renderer
    from infx.workspace import set_override

    sigterm_as_interrupt()
    if rd.stop_file.exists():
        print(f"fail-fast: {rd.stop_file} exists; not starting group(s) {', '.join(f[:12] for f in fingerprints)}",
              file=sys.stderr)
        return 0
    if plan.request.workspace:  # a Slurm node works in the workspace the run was prepared in
        set_override(Path(plan.request.workspace))
    render = (replay_renderer(plan.request.replay) if plan.request.replay
              else renderer_at_port(plan.request.recipes, workspace_of(plan.request)))
    planned = {g.fingerprint: g for g in plan.groups}
    groups = []
    for fp in fingerprints:
        pts = [plan.point(pid) for pid in planned[fp].point_ids]
        groups.append(LaunchGroup(fp, pts, engine=pts[0].framework, image=pts[0].image))
    code = 0
    with Progress() as progress:
        orch = Orchestrator(rd, LocalStarter(render, calibrate=kv_calibrator(plan.request.runner_config)),
                            LocalMeasurer(plan.request.load, telemetry=plan.request.telemetry),
                            options_of(plan.request), progress, evaluator=evaluator_for(plan.request))
        try:
            summary = orch.run(groups)
            code = 0 if summary.ok else EXIT_FAILED_POINTS
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
        finally:
            finish_invocation(rd)
    return code


def submit_slurm(prep: Prepared, wait: bool, wait_timeout: float, partition: str | None, time_limit: str | None,
                 max_parallel: int | None) -> int:
    """Submit a prepared sweep's groups that still need work as Slurm jobs (``--wait``: until they ended)."""
    from infx.diagnostics import Diagnostic, InfxError
    from infx.sweep import slurm
    from infx.sweep.driver import (
        load_plan,
        save_plan,
        start_invocation,
        write_plan,
    )
    from infx.sweep.orchestrator import Orchestrator, SweepOptions

    rd = prep.run_dir
    previous_jobs: list[dict[str, Any]] = []
    if rd.plan_file.is_file():
        try:
            previous_jobs = load_plan(rd).slurm_jobs
        except InfxError:
            previous_jobs = []
        live = slurm.queue_states([str(j["job_id"]) for j in previous_jobs])
        if live:
            raise InfxError(Diagnostic(
                f"run {prep.run_id} still has Slurm jobs queued or running ({', '.join(sorted(live))}): wait for "
                f"them (infx status {rd.root}) or scancel them, then re-run", str(rd.plan_file)))
    start_invocation(prep)
    plan = write_plan(prep)
    if previous_jobs:  # keep the history, so `infx status` still maps earlier jobs
        plan.slurm_jobs[:0] = previous_jobs
        save_plan(rd, plan)
    # gate rejects are recorded now; resumed points are not submitted at all
    opts = SweepOptions(rerun_failed=prep.request.rerun_failed, load_key=prep.request.load.key())
    # points whose eval is still to grade are submitted again
    orch = Orchestrator(rd, None, None, opts, evaluator=evaluator_for(prep.request))  # plans, runs nothing
    orch.mark_skipped(prep.rejects)
    todo, summary = orch.plan(prep.groups)
    print(f"slurm: {len(prep.points)} point(s): {len(summary.reused)} already measured, "
          f"{len(summary.previously_failed)} failed before, {len(prep.rejects)} rejected by the gate, "
          f"{sum(len(g.points) for g in todo)} to run in {len(todo)} group(s)", file=sys.stderr)
    if not todo:
        print("nothing to do", file=sys.stderr)
        return 0 if not summary.previously_failed else EXIT_FAILED_POINTS
    planned = {g.fingerprint: g for g in plan.groups}  # nodes and GPUs per node as plan.json has them
    subs = slurm.submit(rd, plan, [planned[g.fingerprint].model_copy(update={"point_ids": g.point_ids})
                                   for g in todo], partition=partition, time_limit=time_limit,
                        max_parallel=max_parallel)
    for s in subs:
        print(f"submitted job {s.job_id}: {len(s.groups)} group(s), {s.nodes} node(s) x gres gpu:{s.gpus}", file=sys.stderr)
    print(f"follow with: infx status {rd.root}", file=sys.stderr)
    if not wait:
        return 0
    if not slurm.wait_for_jobs([s.job_id for s in subs], wait_timeout):
        print(f"slurm: jobs still queued/running after {wait_timeout:g}s", file=sys.stderr)
        return EXIT_FAILED_POINTS
    from infx.sweep.status import run_state

    st = run_state(rd)
    sink = ingesting(rd, lambda e: None)  # the submitting host ingests what the nodes measured
    from infx.sweep import events as ev

    for p in st.points:
        if p.state in ("done", "failed", "skipped"):
            sink(ev.PointFinished(p.point_id, p.state, None))
    counts = st.counts()
    print("slurm: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())), file=sys.stderr)
    return 0 if set(counts) <= {"done", "skipped"} else EXIT_FAILED_POINTS
