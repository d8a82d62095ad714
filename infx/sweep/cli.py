"""``infx run``, ``infx run-group``, ``infx run-point``, ``infx status``."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import typer

from infx.diagnostics import exit_on_error

EXIT_FAILED_POINTS = 1
EXIT_INTERRUPTED = 130


def _sigterm_as_interrupt() -> None:
    """SIGTERM (Slurm's scancel/time limit, a killed CI job) takes the same path as Ctrl-C:
    the running engine is stopped, finished points stay, nothing is half-written."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def register(app: typer.Typer) -> None:
    @app.command("run")
    @exit_on_error
    def run_cmd(
        config_files: list[Path] | None = typer.Option(None, "--config-files", help="Catalog (master config) "
                                                          "files (with --changelog: read at the revisions; default "
                                                          "the workspace's configs/*-master.yaml)."),
        runner_config: Path | None = typer.Option(None, "--runner-config", help="runners.yaml (default: the "
                                                     "workspace's)"),
        config_keys: list[str] | None = typer.Option(None, "--config-keys", help="Catalog keys (fnmatch globs)."),
        changelog: bool = typer.Option(False, "--changelog", help="Run exactly what a perf-changelog change selects "
                                       "(--base-ref/--head-ref) instead of --config-keys."),
        base_ref: str | None = typer.Option(None, "--base-ref", help="--changelog: base revision (e.g. origin/main)."),
        head_ref: str | None = typer.Option(None, "--head-ref", help="--changelog: head revision (e.g. HEAD)."),
        changelog_file: str = typer.Option("perf-changelog.yaml", "--changelog-file", help="--changelog: the "
                                           "changelog's path in the repository."),
        repo: Path = typer.Option(Path("."), "--repo", help="--changelog: repository to read revisions from."),
        trim_conc: bool = typer.Option(False, "--trim-conc", help="--changelog: keep only the lowest "
                                       "concurrency per curve."),
        conc: list[int] | None = typer.Option(None, "--conc", help="Run only these concurrencies "
                                                 "(repeatable; a subset of the selected points)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Select, gate and group the points, write "
                                     "plan.json and print the plan; launch nothing."),
        evals: str = typer.Option("none", "--evals", help="default | none | evals-only | all"),
        evals_only: bool = typer.Option(False, "--evals-only", help="Same as --evals evals-only: only the "
                                        "eval points, launched at the eval context, no throughput run."),
        eval_limit: int | None = typer.Option(None, "--eval-limit", help="Grade only the first N questions "
                                                 "of each eval (default: the whole test set)."),
        results: Path | None = typer.Option(None, "--results", help="Results directory (root of runs; "
                                               "default: the workspace's results/)."),
        run_id: str | None = typer.Option(None, "--run-id", help="Default: derived from the config keys, "
                                             "so the same command resumes the same run."),
        backend: str = typer.Option("local", "--backend", help="local | slurm"),
        fail_fast: bool = typer.Option(False, "--fail-fast", help="Start no new group after a failure "
                                       "(running work is never killed)."),
        rerun_failed: bool = typer.Option(False, "--rerun-failed", help="Retry failed points (done points are "
                                          "never re-measured)."),
        recipes: Path | None = typer.Option(None, "--recipes", help="Recipe directory (default: the workspace's "
                                               "recipes/ over the built-in ones)."),
        ready_timeout: float = typer.Option(900.0, "--ready-timeout", help="Seconds an engine may take to become ready."),
        max_error_rate: float = typer.Option(0.0, "--max-error-rate", help="A point with more failed requests "
                                             "than this fraction is failed (its result is kept)."),
        prompts_per_conc: int = typer.Option(10, "--prompts-per-conc", help="Requests per point = conc x this."),
        trials: int | None = typer.Option(None, "--trials", help="Trials per point (warmup before the first only); "
                                             "default: the catalog scenario's trials:, else 1."),
        max_trials: int | None = typer.Option(None, "--max-trials", help="Adaptive: add trials until the output "
                                                 "tok/s 95% CI half-width is within --ci-target, at most M."),
        ci_target: float = typer.Option(0.05, "--ci-target", help="Adaptive stop: CI half-width / mean."),
        search: str | None = typer.Option(None, "--search", help="max-concurrency: per launch, the largest "
                                             "concurrency meeting --slo TIER (doubling, then bisection)."),
        slo: str | None = typer.Option(None, "--slo", help="SLO tier for --search, declared under slo: on "
                                          "the scenario in the catalog."),
        search_max: int = typer.Option(1024, "--search-max", help="Highest concurrency --search probes."),
        stop_at_saturation: bool = typer.Option(False, "--stop-at-saturation", help="Skip an arm's higher "
                                                "concurrencies once one saturated (recorded skipped-saturated)."),
        preflight: bool = typer.Option(True, "--preflight/--no-preflight", help="Gate points with the preflight "
                                       "checks (a rejected point is skipped, never launched)."),
        agentic_traces: Path | None = typer.Option(None, "--agentic-traces", help="Trace file (weka JSONL) "
                                                      "replayed by agentic points (`infx traces synth`); default: "
                                                      "synthetic traces written to RUN/traces/synthetic.jsonl."),
        agentic_duration: float | None = typer.Option(None, "--agentic-duration", help="Seconds per agentic "
                                                         "point (default: the point's duration)."),
        wait: bool = typer.Option(False, "--wait", help="slurm: block until the jobs have finished."),
        wait_timeout: float = typer.Option(3600.0, "--wait-timeout"),
        partition: str | None = typer.Option(None, "--partition", help="slurm partition"),
        time_limit: str | None = typer.Option(None, "--time", help="slurm time limit per job"),
        max_parallel: int | None = typer.Option(None, "--max-parallel", help="slurm: array throttle (%K)."),
        pr_number: int | None = typer.Option(None, "--pr-number", help="Mark the run unofficial: measured "
                                                "for this pull request (reports show a banner)."),
        pr_branch: str | None = typer.Option(None, "--pr-branch", help="Mark the run unofficial: measured "
                                                "for this branch."),
        baseline_run: str | None = typer.Option(None, "--baseline-run", help="Run id this run is compared "
                                                   "with in reports (e.g. the official run)."),
        description: str = typer.Option("", "--description", help="Free text stored in the run manifest."),
        append_only: bool = typer.Option(False, "--append-only", help="The run adds concurrencies to the curves it "
                                         "touches instead of replacing them: the store chains it to the last full "
                                         "run of each curve when both used the same image."),
        telemetry: bool = typer.Option(True, "--telemetry/--no-telemetry", help="Sample GPU power, CPU package "
                                       "energy (RAPL) and the engine's /metrics next to each point."),
        gpu_telemetry: str = typer.Option("auto", "--gpu-telemetry", help="auto | nvidia | amd | none: the GPU "
                                          "power tool (auto: nvidia-smi, then amd-smi, from PATH)."),
    ) -> None:
        """Measure catalog points: group by launch, launch once per group, resume what is done."""
        from infx.diagnostics import Diagnostic, InfxError
        from infx.results.layout import PullRequest
        from infx.sweep.driver import (
            ChangelogSelection,
            LoadProfile,
            RunRequest,
            prepare,
        )
        from infx.telemetry.session import TelemetryOptions
        from infx.workspace import current

        ws = current()

        if trials is not None and trials < 1:
            raise InfxError(Diagnostic(f"--trials must be >= 1, not {trials}", path=("--trials",)))
        if max_trials is not None and max_trials < max(trials or 1, 2):
            raise InfxError(Diagnostic(f"--max-trials must be >= 2 and >= --trials, not {max_trials}",
                                       path=("--max-trials",)))
        if not 0 < ci_target < 1:
            raise InfxError(Diagnostic(f"--ci-target must be a fraction in (0, 1), not {ci_target}",
                                       path=("--ci-target",)))
        if search is not None and search != "max-concurrency":
            raise InfxError(Diagnostic(f"--search must be max-concurrency, not {search!r}", path=("--search",)))
        if slo is not None and search is None:
            raise InfxError(Diagnostic("--slo TIER is for --search max-concurrency", path=("--slo",)))
        if backend not in ("local", "slurm"):
            raise InfxError(Diagnostic(f"--backend must be local or slurm, not {backend!r}"))
        if gpu_telemetry not in ("auto", "nvidia", "amd", "none"):
            raise InfxError(Diagnostic(f"--gpu-telemetry must be auto, nvidia, amd or none, not {gpu_telemetry!r}"))
        if evals_only:
            if evals not in ("none", "evals-only"):
                raise InfxError(Diagnostic(f"--evals-only contradicts --evals {evals}"))
            evals = "evals-only"
        if eval_limit is not None and eval_limit < 1:
            raise InfxError(Diagnostic(f"--eval-limit must be >= 1, not {eval_limit}"))
        if evals not in ("default", "none", "evals-only", "all"):
            raise InfxError(Diagnostic(f"--evals must be default, none, evals-only or all, not {evals!r}"))
        selection = None
        if changelog:
            if not base_ref or not head_ref:
                raise InfxError(Diagnostic("--changelog needs --base-ref and --head-ref"))
            if config_keys:
                raise InfxError(Diagnostic("--changelog selects the points: give it or --config-keys, not both"))
            selection = ChangelogSelection(
                repo=str(repo), base_ref=base_ref, head_ref=head_ref, changelog_file=changelog_file,
                config_files=[str(p) for p in config_files] if config_files else None,
                runner_config=str(runner_config or "configs/runners.yaml"), trim_conc=trim_conc)
            # the working-tree copies serve the preflight gate (placeholders, runner facts)
            config_files = [repo / p for p in config_files] if config_files else sorted(
                (repo / "configs").glob("*-master.yaml"))
            runner_config = repo / (runner_config or Path("configs/runners.yaml"))
        else:
            if not config_keys:
                raise InfxError(Diagnostic("missing option --config-keys (or select with --changelog)"))
            if base_ref or head_ref or trim_conc:
                raise InfxError(Diagnostic("--base-ref/--head-ref/--trim-conc need --changelog"))
            config_files = config_files or ws.require_config_files()
            runner_config = runner_config or ws.runner_config
        from infx.outpaths import check_output_dir

        check_output_dir(results or ws.results_dir, "--results")  # before any launch or measurement
        req = RunRequest(
            config_files=[str(p) for p in config_files or []], runner_config=str(runner_config),
            changelog=selection, config_keys=list(config_keys or []), evals=evals, conc=list(conc) if conc else None,  # type: ignore[arg-type]
            results=str(results or ws.results_dir), run_id=run_id, workspace=str(ws.root),
            recipes=str(recipes) if recipes else None, backend=backend, fail_fast=fail_fast,  # type: ignore[arg-type]
            rerun_failed=rerun_failed, ready_timeout=ready_timeout, max_error_rate=max_error_rate,
            eval_limit=eval_limit, pr=PullRequest(number=pr_number, branch=pr_branch) if pr_number is not None or pr_branch else None,
            baseline_run=baseline_run, description=description, append_only=append_only,
            telemetry=TelemetryOptions(enabled=telemetry, gpu=gpu_telemetry),  # type: ignore[arg-type]
            preflight=preflight, load=LoadProfile(
                prompts_per_conc=prompts_per_conc, trials=trials, max_trials=max_trials, ci_target=ci_target,
                search=search, slo_tier=slo, search_max=search_max, stop_at_saturation=stop_at_saturation,
                agentic_traces=str(agentic_traces.resolve()) if agentic_traces
                else None, agentic_duration_s=agentic_duration))
        prep = prepare(req)
        if dry_run:
            raise typer.Exit(_print_plan(prep))
        if backend == "slurm":
            code = _submit_slurm(prep, wait, wait_timeout, partition, time_limit, max_parallel)
        else:
            code = run_prepared_locally(prep)
        raise typer.Exit(code)

    @app.command("run-group")
    @exit_on_error
    def run_group_cmd(
        run_dir: Path = typer.Option(..., "--run-dir", help="RESULTS/<run-id> holding plan.json"),
        group: list[str] = typer.Option(..., "--group", help="Launch fingerprint (prefix) of a group in the plan."),
        array_task: bool = typer.Option(False, "--array-task", help="Run only the --group at $SLURM_ARRAY_TASK_ID."),
    ) -> None:
        """Run launch group(s) of a planned run (what each Slurm job executes on its node)."""
        from infx.sweep.driver import load_plan
        from infx.sweep.layout import RunDir
        from infx.sweep.slurm import pick_groups

        rd = RunDir(run_dir)
        plan = load_plan(rd)
        chosen = pick_groups(plan, group, array_task)
        raise typer.Exit(run_planned_groups(rd, plan, [g.fingerprint for g in chosen]))

    @app.command("run-point")
    @exit_on_error
    def run_point_cmd(
        row: str | None = typer.Option(None, "--row", help="One matrix row as JSON (GitHub matrix entry); "
                                          "'-' reads it from stdin."),
        row_file: Path | None = typer.Option(None, "--row-file", help="A JSON file holding one matrix row."),
        results: Path | None = typer.Option(None, "--results", help="default: the workspace's results/"),
        run_id: str = typer.Option("points", "--run-id"),
        runner_config: Path | None = typer.Option(None, "--runner-config", help="runners.yaml for the "
                                                     "preflight gate (default: the workspace's, if present)."),
        recipes: Path | None = typer.Option(None, "--recipes"),
        ready_timeout: float = typer.Option(900.0, "--ready-timeout"),
        max_error_rate: float = typer.Option(0.0, "--max-error-rate"),
        prompts_per_conc: int = typer.Option(10, "--prompts-per-conc"),
    ) -> None:
        """Measure one matrix row: launch, warmup, measure, stop (one row of a GitHub Actions matrix)."""
        from infx.diagnostics import Diagnostic, InfxError
        from infx.matrix.point import Point
        from infx.sweep.driver import LoadProfile, RunRequest, prepare

        if (row is None) == (row_file is None):
            raise InfxError(Diagnostic("give exactly one of --row JSON and --row-file FILE"))
        from infx import jsonio

        text = (sys.stdin.read() if row == "-" else row if row is not None
                else jsonio.read_text(row_file, what="row file"))  # type: ignore[arg-type]
        try:
            data = jsonio.loads(text, str(row_file or "--row"))
        except InfxError as exc:
            d = exc.diagnostics[0]
            raise InfxError(Diagnostic(f"--row is not JSON: {d.message.removeprefix('invalid JSON: ')}", d.file,
                                       d.line, d.col)) from None
        if not isinstance(data, dict):
            raise InfxError(Diagnostic("--row must be a JSON object", str(row_file or "--row")))
        if "point-id" not in data:
            from infx.matrix.pointid import point_id as make_point_id

            data["point-id"] = make_point_id(data)
        try:
            point = Point.from_row(data)
        except Exception as exc:  # pydantic ValidationError -> one line per problem
            from pydantic import ValidationError

            if isinstance(exc, ValidationError):
                raise InfxError([Diagnostic(e["msg"], str(row_file or "--row"), path=tuple(e["loc"]))
                                 for e in exc.errors(include_url=False)]) from None
            raise
        from infx.workspace import current

        ws = current()
        if runner_config is None and ws.runner_config.is_file():
            runner_config = ws.runner_config
        from infx.outpaths import check_output_dir

        check_output_dir(results or ws.results_dir, "--results")  # before the launch and the measurement
        req = RunRequest(config_files=[], runner_config=str(runner_config or ""), config_keys=[point.point_id],
                         results=str(results or ws.results_dir), workspace=str(ws.root),
                         run_id=run_id, recipes=str(recipes) if recipes else None, ready_timeout=ready_timeout,
                         max_error_rate=max_error_rate, load=LoadProfile(prompts_per_conc=prompts_per_conc))
        prep = prepare(req, points=[point])
        raise typer.Exit(run_prepared_locally(prep))

    @app.command("status")
    @exit_on_error
    def status_cmd(
        path: Path | None = typer.Argument(None, help="A results directory or one run directory (default: "
                                              "the workspace's results/)."),
        as_json: bool = typer.Option(False, "--json"),
        tier: str | None = typer.Option(None, "--tier", help="Cost table tier of the $/Mtok column (default: "
                                           "the table's default tier)."),
        store: str | None = typer.Option(None, "--store", help="Results store whose quarantine is listed "
                                            "(default: INFX_STORE_URL, infx.toml [store] url, RESULTS/infx.db)."),
    ) -> None:
        """Per point: queued / running / done / failed / skipped / pending (results dir + squeue/sacct), and the
        rows ingest refused (the store's quarantine)."""
        from rich.console import Console
        from rich.table import Table

        from infx.sweep.status import cost_cell, quarantined, run_dirs, run_state
        from infx.workspace import current

        path = path or current().results_dir

        cost = cost_cell(tier)
        states = [run_state(rd, cost) for rd in run_dirs(path)]
        refused = quarantined(path, store)
        if as_json:
            print(json.dumps([{"run_id": s.run_id, "jobs": s.jobs, "counts": dict(s.counts()),
                               "points": [p.__dict__ for p in s.points],
                               "quarantine": [e.__dict__ for e in refused if e.run_id == s.run_id]}
                              for s in states], indent=2))
            return
        console = Console()
        for s in states:
            t = Table(title=f"run {s.run_id}: " + ", ".join(f"{n} {k}" for k, n in sorted(s.counts().items())))
            show_kv = any(p.kv for p in s.points)
            show_eval = any(p.eval for p in s.points)
            show_cost = any(p.cost for p in s.points)
            show_trials = any(p.trials for p in s.points)
            for col in ("point", "conc", "state", *(("trials: output tok/s, 95% CI",) if show_trials else ()),
                        *(("kv tokens predicted/logged",) if show_kv else ()),
                        *(("eval",) if show_eval else ()),
                        *((f"$/Mtok ({getattr(cost, 'tier', '')})",) if show_cost else ()), "reason"):
                t.add_column(col)
            colours = {"done": "green", "failed": "red", "skipped": "yellow", "running": "cyan", "queued": "blue"}
            for p in s.points:
                c = colours.get(p.state, "white")
                t.add_row(p.point_id, p.conc, f"[{c}]{p.state}[/{c}]", *((p.trials,) if show_trials else ()),
                          *((p.kv,) if show_kv else ()),
                          *((p.eval,) if show_eval else ()), *((p.cost,) if show_cost else ()), p.reason[:100])
            console.print(t)
            if s.jobs:
                console.print("slurm jobs: " + ", ".join(f"{j} {st}" for j, st in sorted(s.jobs.items())))
        if refused:  # never dropped silently: what ingest refused, with its rule (`infx store quarantine`)
            console.print(f"[yellow]quarantined by ingest: {len(refused)} row(s)[/yellow]")
            for e in refused:
                console.print(f"  {e}", highlight=False, markup=False, soft_wrap=True)


# ------------------------------------------------------------------------------------ shared bodies

def _print_plan(prep: Any) -> int:
    """``infx run --dry-run``: write ``plan.json`` and list the groups and gate rejects; launch nothing."""
    from infx.sweep.driver import write_plan

    prep.run_dir.root.mkdir(parents=True, exist_ok=True)
    plan = write_plan(prep)
    print(f"plan: {len(prep.points)} point(s), {len(plan.groups)} launch group(s), {len(prep.rejects)} rejected "
          f"by the gate; {prep.run_dir.plan_file}", file=sys.stderr)
    for g in plan.groups:
        print(f"group {g.fingerprint[:12]}: {' '.join(g.point_ids)}", file=sys.stderr)
    for pid, (_, _, reason) in prep.rejects.items():
        print(f"rejected {pid}: {reason}", file=sys.stderr)
    return 0


def run_prepared_locally(prep: Any, *, starter: Any = None, measurer: Any = None, evaluator: Any = None) -> int:
    """Run a prepared sweep on this host with live progress and a final table; the exit code."""
    from rich.console import Console

    from infx.sweep.driver import run_local, workspace_of
    from infx.sweep.local import LocalMeasurer, LocalStarter, kv_calibrator
    from infx.sweep.progress import Progress, results_table
    from infx.sweep.rendering import renderer_at_port

    _sigterm_as_interrupt()
    starter = starter or LocalStarter(renderer_at_port(prep.request.recipes, workspace_of(prep.request)),
                                      calibrate=kv_calibrator(prep.request.runner_config))
    measurer = measurer or LocalMeasurer(prep.request.load, telemetry=prep.request.telemetry)
    if evaluator is None and prep.request.evals != "none":
        from infx.sweep.evalbridge import LocalEvaluator

        evaluator = LocalEvaluator(prep.request.eval_limit)
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


def ingesting(rd: Any, emit: Any) -> Any:
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


def run_planned_groups(rd: Any, plan: Any, fingerprints: list[str]) -> int:
    """Body of ``infx run-group``: re-render the planned points, check fingerprints, run the groups."""
    from infx.sweep.driver import finish_invocation, options_of, workspace_of
    from infx.sweep.executors import LaunchGroup
    from infx.sweep.local import LocalMeasurer, LocalStarter, kv_calibrator
    from infx.sweep.orchestrator import Orchestrator
    from infx.sweep.progress import Progress
    from infx.sweep.rendering import renderer_at_port, replay_renderer
    from infx.workspace import set_override

    _sigterm_as_interrupt()
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
        evaluator = None
        if plan.request.evals != "none":
            from infx.sweep.evalbridge import LocalEvaluator

            evaluator = LocalEvaluator(plan.request.eval_limit)
        orch = Orchestrator(rd, LocalStarter(render, calibrate=kv_calibrator(plan.request.runner_config)),
                            LocalMeasurer(plan.request.load, telemetry=plan.request.telemetry), options_of(plan.request),
                            progress, evaluator=evaluator)
        try:
            summary = orch.run(groups)
            code = 0 if summary.ok else EXIT_FAILED_POINTS
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
        finally:
            finish_invocation(rd)
    return code


def _submit_slurm(prep: Any, wait: bool, wait_timeout: float, partition: str | None, time_limit: str | None,
                  max_parallel: int | None) -> int:
    from infx.diagnostics import Diagnostic, InfxError
    from infx.sweep import slurm
    from infx.sweep.driver import (
        PlannedGroup,
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
    evaluator = None
    if prep.request.evals != "none":  # points whose eval is still to grade are submitted again
        from infx.sweep.evalbridge import LocalEvaluator

        evaluator = LocalEvaluator(prep.request.eval_limit)
    orch = Orchestrator(rd, None, None, opts, evaluator=evaluator)  # type: ignore[arg-type]
    orch.mark_skipped(prep.rejects)
    todo, summary = orch.plan(prep.groups)
    print(f"slurm: {len(prep.points)} point(s): {len(summary.reused)} already measured, "
          f"{len(summary.previously_failed)} failed before, {len(prep.rejects)} rejected by the gate, "
          f"{sum(len(g.points) for g in todo)} to run in {len(todo)} group(s)", file=sys.stderr)
    if not todo:
        print("nothing to do", file=sys.stderr)
        return 0 if not summary.previously_failed else EXIT_FAILED_POINTS
    subs = slurm.submit(rd, plan, [PlannedGroup(fingerprint=g.fingerprint, point_ids=g.point_ids, gpus=g.gpus)
                                   for g in todo], partition=partition, time_limit=time_limit,
                        max_parallel=max_parallel)
    for s in subs:
        print(f"submitted job {s.job_id}: {len(s.groups)} group(s), gres gpu:{s.gpus}", file=sys.stderr)
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
