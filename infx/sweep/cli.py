"""``infx run``, ``infx run-group``, ``infx run-point``, ``infx status`` and ``infx repro``.

Each command parses its options into the sweep's typed request (:class:`~infx.sweep.prepare.RunRequest`,
built once through :func:`infx.cli_options.build_request`), hands it to the library
(:mod:`infx.sweep.prepare`, :mod:`infx.sweep.execute`, :mod:`infx.sweep.rerun`) and prints.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from infx.cli_options import ModelDefault, build_request
from infx.diagnostics import Diagnostic, InfxError, exit_on_error
from infx.preemption import SIGNAL_LEAD_S

if TYPE_CHECKING:
    from pydantic import BaseModel

    from infx.repro.verdict import ReproVerdict
    from infx.sweep.prepare import Prepared

EXIT_FAILED = 1

# RunRequest fields whose option is not spelled --field-name
RUN_OPTIONS = {"load.slo_tier": "--slo", "load.agentic_duration_s": "--agentic-duration",
               "telemetry.enabled": "--telemetry", "telemetry.gpu": "--gpu-telemetry", "pr.number": "--pr-number",
               "pr.branch": "--pr-branch", "load.stall_timeout_s": "--stall-timeout"}


def _run_request() -> type[BaseModel]:
    from infx.sweep.prepare import RunRequest

    return RunRequest


def _load_profile() -> type[BaseModel]:
    from infx.sweep.profile import LoadProfile

    return LoadProfile


def _changelog_selection() -> type[BaseModel]:
    from infx.sweep.prepare import ChangelogSelection

    return ChangelogSelection


def _telemetry_options() -> type[BaseModel]:
    from infx.telemetry.session import TelemetryOptions

    return TelemetryOptions


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
    changelog_file: str = typer.Option(..., "--changelog-file", default_factory=ModelDefault(
        _changelog_selection, "changelog_file"), help="--changelog: the changelog's path in the repository."),
    repo: Path = typer.Option(Path("."), "--repo", help="--changelog: repository to read revisions from."),
    trim_conc: bool = typer.Option(False, "--trim-conc", help="--changelog: keep only the lowest "
                                   "concurrency per curve."),
    conc: list[int] | None = typer.Option(None, "--conc", help="Run only these concurrencies "
                                             "(repeatable; a subset of the selected points)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Select, gate and group the points, write "
                                 "plan.json and print the plan; launch nothing."),
    evals: str = typer.Option(..., "--evals", default_factory=ModelDefault(_run_request, "evals"),
                              help="default | none | evals-only | all"),
    evals_only: bool = typer.Option(False, "--evals-only", help="Same as --evals evals-only: only the "
                                    "eval points, launched at the eval context, no throughput run."),
    eval_limit: int | None = typer.Option(None, "--eval-limit", help="Grade only the first N questions "
                                             "of each eval (default: the whole test set)."),
    results: Path | None = typer.Option(None, "--results", help="Results directory (root of runs; "
                                           "default: the workspace's results/)."),
    run_id: str | None = typer.Option(None, "--run-id", help="Default: derived from the config keys, "
                                         "so the same command resumes the same run."),
    backend: str = typer.Option(..., "--backend", default_factory=ModelDefault(_run_request, "backend"),
                                help="local | slurm"),
    fail_fast: bool = typer.Option(False, "--fail-fast", help="Start no new group after a failure "
                                   "(running work is never killed)."),
    rerun_failed: bool = typer.Option(False, "--rerun-failed", help="Retry failed points (done points are "
                                      "never re-measured)."),
    recipes: Path | None = typer.Option(None, "--recipes", help="Recipe directory (default: the workspace's "
                                           "recipes/ over the built-in ones)."),
    ready_timeout: float = typer.Option(..., "--ready-timeout", default_factory=ModelDefault(
        _run_request, "ready_timeout"), help="Seconds an engine may take to become ready."),
    max_error_rate: float = typer.Option(..., "--max-error-rate", default_factory=ModelDefault(
        _run_request, "max_error_rate"), help="A point with more failed requests than this fraction is failed "
                                              "(its result is kept)."),
    prompts_per_conc: int = typer.Option(..., "--prompts-per-conc", default_factory=ModelDefault(
        _load_profile, "prompts_per_conc"), help="Requests per point = conc x this."),
    trials: int | None = typer.Option(None, "--trials", help="Trials per point (warmup before the first only); "
                                         "default: the catalog scenario's trials:, else 1."),
    max_trials: int | None = typer.Option(None, "--max-trials", help="Adaptive: add trials until the output "
                                             "tok/s 95% CI half-width is within --ci-target, at most M."),
    ci_target: float = typer.Option(..., "--ci-target", default_factory=ModelDefault(_load_profile, "ci_target"),
                                    help="Adaptive stop: CI half-width / mean."),
    search: str | None = typer.Option(None, "--search", help="max-concurrency: per launch, the largest "
                                         "concurrency meeting --slo TIER (doubling, then bisection)."),
    slo: str | None = typer.Option(None, "--slo", help="SLO tier for --search, declared under slo: on "
                                      "the scenario in the catalog."),
    search_max: int = typer.Option(..., "--search-max", default_factory=ModelDefault(_load_profile, "search_max"),
                                   help="Highest concurrency --search probes."),
    stop_at_saturation: bool = typer.Option(False, "--stop-at-saturation", help="Skip an arm's higher "
                                            "concurrencies once one saturated (recorded skipped-saturated)."),
    stall_timeout: float | None = typer.Option(None, "--stall-timeout", help="Seconds without a byte before a "
                                               "request counts as stalled (default 120); a stalled engine ends "
                                               "its point (engine-stalled) and is stopped."),
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
    signal_lead: int = typer.Option(SIGNAL_LEAD_S, "--signal-lead", min=0, max=86400, help="slurm: seconds "
                                    "before the time limit the job gets SIGTERM (it pauses: interrupted point "
                                    "kept, exit 75)."),
    pr_number: int | None = typer.Option(None, "--pr-number", help="Mark the run unofficial: measured "
                                            "for this pull request (reports show a banner)."),
    pr_branch: str | None = typer.Option(None, "--pr-branch", help="Mark the run unofficial: measured "
                                            "for this branch."),
    baseline_run: str | None = typer.Option(None, "--baseline-run", help="Run id this run is compared "
                                               "with in reports (e.g. the official run)."),
    description: str = typer.Option(..., "--description", default_factory=ModelDefault(_run_request, "description"),
                                    help="Free text stored in the run manifest."),
    append_only: bool = typer.Option(False, "--append-only", help="The run adds concurrencies to the curves it "
                                     "touches instead of replacing them: the store chains it to the last full "
                                     "run of each curve when both used the same image."),
    telemetry: bool = typer.Option(True, "--telemetry/--no-telemetry", help="Sample GPU power, CPU package "
                                   "energy (RAPL) and the engine's /metrics next to each point."),
    gpu_telemetry: str = typer.Option(..., "--gpu-telemetry", default_factory=ModelDefault(_telemetry_options, "gpu"),
                                      help="auto | nvidia | amd | none: the GPU power tool (auto: nvidia-smi, "
                                           "then amd-smi, from PATH)."),
) -> None:
    """Measure catalog points: group by launch, launch once per group, resume what is done."""
    from infx.outpaths import check_output_dir
    from infx.sweep.execute import run_locally, submit_slurm
    from infx.sweep.prepare import ChangelogSelection, RunRequest, prepare
    from infx.workspace import current

    ws = current()
    if evals_only:
        if evals not in ("none", "evals-only"):
            raise InfxError(Diagnostic(f"--evals-only contradicts --evals {evals}"))
        evals = "evals-only"
    selection: ChangelogSelection | None = None
    if changelog:
        if not base_ref or not head_ref:
            raise InfxError(Diagnostic("--changelog needs --base-ref and --head-ref"))
        if config_keys:
            raise InfxError(Diagnostic("--changelog selects the points: give it or --config-keys, not both"))
        selection = build_request(ChangelogSelection, {
            "repo": str(repo), "base_ref": base_ref, "head_ref": head_ref, "changelog_file": changelog_file,
            "config_files": [str(p) for p in config_files] if config_files else None, "trim_conc": trim_conc,
            **({"runner_config": str(runner_config)} if runner_config is not None else {})})
        # the working-tree copies serve the preflight gate (placeholders, runner facts)
        config_files = [repo / p for p in config_files] if config_files else sorted(
            (repo / "configs").glob("*-master.yaml"))
        runner_config = repo / selection.runner_config
    else:
        if not config_keys:
            raise InfxError(Diagnostic("missing option --config-keys (or select with --changelog)"))
        if base_ref or head_ref or trim_conc:
            raise InfxError(Diagnostic("--base-ref/--head-ref/--trim-conc need --changelog"))
        config_files = config_files or ws.require_config_files()
        runner_config = runner_config or ws.runner_config
    load = {"prompts_per_conc": prompts_per_conc, "trials": trials, "max_trials": max_trials, "ci_target": ci_target,
            "search": search, "slo_tier": slo, "search_max": search_max, "stop_at_saturation": stop_at_saturation,
            "agentic_traces": str(agentic_traces.resolve()) if agentic_traces else None,
            "agentic_duration_s": agentic_duration, "stall_timeout_s": stall_timeout}
    req = build_request(RunRequest, {
        "config_files": [str(p) for p in config_files], "runner_config": str(runner_config),
        "changelog": selection, "config_keys": list(config_keys or []), "evals": evals,
        "conc": list(conc) if conc else None, "results": str(results or ws.results_dir), "run_id": run_id,
        "workspace": str(ws.root), "recipes": str(recipes) if recipes else None, "backend": backend,
        "fail_fast": fail_fast, "rerun_failed": rerun_failed, "ready_timeout": ready_timeout,
        "max_error_rate": max_error_rate, "eval_limit": eval_limit,
        "pr": {"number": pr_number, "branch": pr_branch} if pr_number is not None or pr_branch else None,
        "baseline_run": baseline_run, "description": description, "append_only": append_only,
        "telemetry": {"enabled": telemetry, "gpu": gpu_telemetry}, "preflight": preflight, "load": load,
    }, RUN_OPTIONS)
    check_output_dir(Path(req.results), "--results")  # before any launch or measurement
    prep = prepare(req)
    if dry_run:
        raise typer.Exit(_print_plan(prep))
    if req.backend == "slurm":
        code = submit_slurm(prep, wait, wait_timeout, partition, time_limit, max_parallel, signal_lead)
    else:
        code = run_locally(prep)
    raise typer.Exit(code)


@exit_on_error
def run_group_cmd(
    run_dir: Path = typer.Option(..., "--run-dir", help="RESULTS/<run-id> holding plan.json"),
    group: list[str] = typer.Option(..., "--group", help="Launch fingerprint (prefix) of a group in the plan."),
    array_task: bool = typer.Option(False, "--array-task", help="Run only the --group at $SLURM_ARRAY_TASK_ID."),
) -> None:
    """Run launch group(s) of a planned run (what each Slurm job executes on its node)."""
    from infx.sweep.execute import run_groups
    from infx.sweep.layout import RunDir
    from infx.sweep.prepare import load_plan
    from infx.sweep.slurm import pick_groups

    rd = RunDir(run_dir)
    plan = load_plan(rd)
    chosen = pick_groups(plan, group, array_task)
    raise typer.Exit(run_groups(rd, plan, [g.fingerprint for g in chosen]))


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
    ready_timeout: float = typer.Option(..., "--ready-timeout", default_factory=ModelDefault(_run_request,
                                                                                        "ready_timeout")),
    max_error_rate: float = typer.Option(..., "--max-error-rate", default_factory=ModelDefault(_run_request,
                                                                                          "max_error_rate")),
    prompts_per_conc: int = typer.Option(..., "--prompts-per-conc", default_factory=ModelDefault(_load_profile,
                                                                                            "prompts_per_conc")),
) -> None:
    """Measure one matrix row: launch, warmup, measure, stop (one row of a GitHub Actions matrix)."""
    from infx import jsonio
    from infx.matrix.point import Point
    from infx.outpaths import check_output_dir
    from infx.sweep.execute import run_locally
    from infx.sweep.prepare import RunRequest, prepare
    from infx.workspace import current

    if (row is None) == (row_file is None):
        raise InfxError(Diagnostic("give exactly one of --row JSON and --row-file FILE"))
    source = str(row_file or "--row")
    text = sys.stdin.read() if row == "-" else row if row is not None else jsonio.read_text(
        Path(source), what="row file")
    try:
        data = jsonio.loads(text, source)
    except InfxError as exc:
        d = exc.diagnostics[0]
        raise InfxError(Diagnostic(f"--row is not JSON: {d.message.removeprefix('invalid JSON: ')}", d.file,
                                   d.line, d.col)) from None
    if not isinstance(data, dict):
        raise InfxError(Diagnostic("--row must be a JSON object", source))
    if "point-id" not in data:
        from infx.matrix.pointid import point_id as make_point_id

        data["point-id"] = make_point_id(data)
    from pydantic import ValidationError

    try:
        point = Point.from_row(data)
    except ValidationError as exc:  # one line per problem, at the row's field
        raise InfxError([Diagnostic(e["msg"], source, path=tuple(e["loc"]))
                         for e in exc.errors(include_url=False)]) from None
    ws = current()
    if runner_config is None and ws.runner_config.is_file():
        runner_config = ws.runner_config
    req = build_request(RunRequest, {
        "config_files": [], "runner_config": str(runner_config or ""), "config_keys": [point.point_id],
        "results": str(results or ws.results_dir), "workspace": str(ws.root), "run_id": run_id,
        "recipes": str(recipes) if recipes else None, "ready_timeout": ready_timeout,
        "max_error_rate": max_error_rate, "load": {"prompts_per_conc": prompts_per_conc}})
    check_output_dir(Path(req.results), "--results")  # before the launch and the measurement
    raise typer.Exit(run_locally(prepare(req, points=[point])))


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
        show_acc = any(p.acceptance for p in s.points)
        for col in ("point", "conc", "state", *(("trials: output tok/s, 95% CI",) if show_trials else ()),
                    *(("spec-decode acceptance",) if show_acc else ()),
                    *(("kv tokens predicted/logged",) if show_kv else ()),
                    *(("eval",) if show_eval else ()),
                    *((f"$/Mtok ({cost.tier if cost else ''})",) if show_cost else ()), "reason"):
            t.add_column(col)
        colours = {"done": "green", "damaged": "red", "failed": "red", "skipped": "yellow", "running": "cyan",
                   "queued": "blue", "interrupted": "magenta"}
        for p in s.points:
            c = colours.get(p.state, "white")
            t.add_row(p.point_id, p.conc, f"[{c}]{p.state}[/{c}]", *((p.trials,) if show_trials else ()),
                      *((p.acceptance,) if show_acc else ()),
                      *((p.kv,) if show_kv else ()),
                      *((p.eval,) if show_eval else ()), *((p.cost,) if show_cost else ()), p.reason[:100])
        console.print(t)
        if s.jobs:
            console.print("slurm jobs: " + ", ".join(f"{j} {st}" for j, st in sorted(s.jobs.items())))
    if refused:  # never dropped silently: what ingest refused, with its rule (`infx store quarantine`)
        console.print(f"[yellow]quarantined by ingest: {len(refused)} row(s)[/yellow]")
        for e in refused:
            console.print(f"  {e}", highlight=False, markup=False, soft_wrap=True)


@exit_on_error
def repro_cmd(
    source: Path = typer.Argument(..., help="A point directory or a copy of one (its bundle), or its "
                                  "receipt.json."),
    backend: str = typer.Option(..., "--backend", default_factory=ModelDefault(_run_request, "backend"),
                                help="local | slurm"),
    trials: int | None = typer.Option(None, "--trials", help="Trials of the rerun (the sweep's --trials: "
                                         "one launch, N measured trials); default: as many as the original."),
    results: Path | None = typer.Option(None, "--results", help="Results directory for the rerun "
                                           "(default: the workspace's results/)."),
    margin: float | None = typer.Option(None, "--margin", help="Practical margin of the verdict "
                                           "(default 0.05, i.e. 5%, as `infx compare`)."),
    wait_timeout: float = typer.Option(3600.0, "--wait-timeout", help="slurm: seconds to wait for the job."),
    partition: str | None = typer.Option(None, "--partition", help="slurm partition"),
) -> None:
    """Rerun a point exactly (same argv, env, image, load profile, seed) from its bundle into a new run,
    then print the verdict against the original. Exit 1 when the rerun failed or reads better/worse."""
    from infx.analysis.compare import DEFAULT_MARGIN
    from infx.atomic import write_text
    from infx.repro.diffenv import bundle_dir, load_payload
    from infx.repro.verdict import compare_point
    from infx.sweep.execute import run_locally, submit_slurm
    from infx.sweep.rerun import RerunRequest, prepare_rerun
    from infx.workspace import current

    rerun = build_request(RerunRequest, {"backend": backend, "trials": trials, "margin": margin})
    src = bundle_dir(source)
    root = results or current().results_dir
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    run_id = f"repro-{load_payload(src).point_id}-{stamp}"
    prep, payload = prepare_rerun(src, root, run_id, rerun.backend, rerun.trials)
    n = prep.request.load.trials_for(payload.point_id)
    print(f"repro: {payload.run_id}/{payload.point_id} -> {prep.run_dir.root} ({n} trial(s), config hash "
          f"{str(payload.config_hash)[:16]})", file=sys.stderr)
    if rerun.backend == "slurm":
        rc = submit_slurm(prep, True, wait_timeout, partition, None, None)
    else:
        rc = run_locally(prep)  # the request replays the bundle's launch
    pdir = prep.run_dir.point_dir(payload.point_id)
    st = prep.run_dir.read_status(payload.point_id)
    if st is None or st.state != "done":
        print(f"repro: the rerun did not measure the point ({st.state if st else 'no status'}"
              f"{': ' + st.reason if st and st.reason else ''})", file=sys.stderr)
        raise typer.Exit(EXIT_FAILED)
    verdict = compare_point(src, pdir, margin=DEFAULT_MARGIN if rerun.margin is None else rerun.margin)
    out = prep.run_dir.root / "repro-verdict.json"
    write_text(out, verdict.model_dump_json(indent=2) + "\n")
    _print_verdict(verdict)
    print(f"verdict: {verdict.verdict}: {verdict.text} ({out})", file=sys.stderr)
    raise typer.Exit(rc or (EXIT_FAILED if verdict.verdict in ("better", "worse") else 0))


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)
    app.command("run-group")(run_group_cmd)
    app.command("run-point")(run_point_cmd)
    app.command("status")(status_cmd)
    app.command("repro")(repro_cmd)


def _print_plan(prep: Prepared) -> int:
    """``infx run --dry-run``: write ``plan.json`` and list the groups and gate rejects; launch nothing."""
    from infx.sweep.prepare import write_plan

    prep.run_dir.root.mkdir(parents=True, exist_ok=True)
    plan = write_plan(prep)
    print(f"plan: {len(prep.points)} point(s), {len(plan.groups)} launch group(s), {len(prep.rejects)} rejected "
          f"by the gate; {prep.run_dir.plan_file}", file=sys.stderr)
    for g in plan.groups:
        print(f"group {g.fingerprint[:12]}: {' '.join(g.point_ids)}", file=sys.stderr)
    for pid, (_, _, reason) in prep.rejects.items():
        print(f"rejected {pid}: {reason}", file=sys.stderr)
    return 0


def _print_verdict(v: ReproVerdict) -> None:
    print(f"repro verdict (rerun vs original, {v.trials_rerun} vs {v.trials_original} trial(s), margin "
          f"±{v.margin:.0%}):", file=sys.stderr)
    for m in v.metrics:
        print(f"  {m.label}: {m.original} -> {m.rerun}: {m.text}", file=sys.stderr)
    for n in v.notes:
        print(f"  note: {n}", file=sys.stderr)
