"""From a request to launch groups: what ``infx run`` prepares before anything starts.

``prepare`` loads the catalog and runners once (:class:`~infx.matrix.select.Selection`), selects the points
(matrix stage), renders each point's launch (engines stage), gates them (preflight stage; a rendering failure
is a gate failure too: such a point costs zero launches) and groups the points by launch fingerprint. The plan
(``plan.json``, :func:`planned_groups`) records everything a Slurm node needs to run one group of it again,
with the nodes and GPUs per node of each. Running the groups is :mod:`infx.sweep.execute`'s.
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from infx.atomic import write_text
from infx.diagnostics import Diagnostic, InfxError
from infx.matrix.point import Point
from infx.results.layout import PullRequest
from infx.sweep.grouping import LaunchGroup, group_points
from infx.sweep.layout import RunDir, RunManifest
from infx.sweep.manifest import merge_engine_versions, new_manifest
from infx.sweep.orchestrator import SweepOptions
from infx.sweep.profile import LoadProfile
from infx.telemetry.session import TelemetryOptions
from infx.workspace import Workspace
from infx.workspace import at as ws_at
from infx.workspace import current as current_workspace

if TYPE_CHECKING:
    from infx.catalog.runners import RunnerConfig
    from infx.engines.disagg.model import Deployment
    from infx.engines.launch import Launch
    from infx.matrix.select import Selection
    from infx.preflight.verdict import PointVerdict

    Render = Callable[[Point], Launch | Deployment]

Evals = Literal["default", "none", "evals-only", "all"]


class ChangelogSelection(BaseModel):
    """``infx run --changelog``: run exactly what a perf-changelog change selects (the changelog gate's
    ``changelog_points``). Paths are relative to ``repo`` and read at the revisions."""

    model_config = ConfigDict(extra="forbid")

    repo: str = "."
    base_ref: str
    head_ref: str
    changelog_file: str = "perf-changelog.yaml"
    config_files: list[str] | None = None  # default: the gate's (configs/*-master.yaml at the revisions)
    runner_config: str = "configs/runners.yaml"
    trim_conc: bool = False

    def run_id(self) -> str:
        """``changelog-<base sha>-<head sha>``: stable for the same change, so a re-run resumes."""
        from infx.changelog.git import resolve_rev

        repo = Path(self.repo)
        return f"changelog-{resolve_rev(repo, self.base_ref)[:12]}-{resolve_rev(repo, self.head_ref)[:12]}"


class RunRequest(BaseModel):
    """Everything ``infx run`` was asked (stored in ``plan.json`` so Slurm jobs can redo a group)."""

    model_config = ConfigDict(extra="forbid")

    config_files: list[str]
    runner_config: str
    config_keys: list[str]
    evals: Evals = "none"
    results: str
    run_id: str | None = None
    recipes: str | None = None  # None: the workspace's recipes over the built-in ones
    workspace: str | None = None  # the workspace root the run was prepared in (Slurm jobs resolve against it)
    backend: Literal["local", "slurm"] = "local"
    fail_fast: bool = False
    rerun_failed: bool = False
    ready_timeout: float = 900.0
    max_error_rate: float = 0.0
    eval_limit: int | None = Field(None, ge=1)  # grade only the first N questions of each eval (None: all)
    preflight: bool = True  # run the preflight gate (rendering is always checked)
    load: LoadProfile = Field(default_factory=LoadProfile)
    changelog: ChangelogSelection | None = None  # select the points from a changelog change instead of keys
    conc: list[int] | None = None  # keep only these concurrencies (the matrix stage's --conc filter)
    pr: PullRequest | None = None  # set: an unofficial (pull request) run, bannered in reports
    baseline_run: str | None = None  # the run this one is compared with in reports
    description: str = ""
    append_only: bool = False  # the run adds points to its curves (chained under one image), never replaces them
    telemetry: TelemetryOptions = Field(default_factory=TelemetryOptions)  # power, energy, engine state
    replay: str | None = None  # `infx repro`: a bundle payload whose recorded launch is run instead of rendering


class PlannedGroup(BaseModel):
    fingerprint: str
    point_ids: list[str]
    gpus: int = 0  # per node (Slurm --gres=gpu:N)
    nodes: int = 1  # a multinode deployment: one allocation across nodes (Slurm --nodes)


class SlurmJob(BaseModel):
    """One submission: an sbatch job (or array) over groups with the same nodes and GPUs per node."""

    job_id: str
    groups: list[str]  # fingerprints, in array-index order
    gpus: int = 0  # per node
    nodes: int = 1


class RunPlan(BaseModel):
    """``plan.json``: the request, the point rows and the launch groups, in run order."""

    request: RunRequest
    run_id: str
    points: dict[str, dict[str, JsonValue]]  # point-id -> Point.to_row()
    groups: list[PlannedGroup]
    created_at: float
    slurm_jobs: list[SlurmJob] = Field(default_factory=list)

    def point(self, pid: str) -> Point:
        return Point.from_row(self.points[pid])


@dataclass
class Prepared:
    request: RunRequest
    run_id: str
    points: list[Point]
    groups: list[LaunchGroup]
    rejects: dict[str, tuple[Point, str, str]] = field(default_factory=dict)  # pid -> (point, fp, reason)
    runners: RunnerConfig | None = None  # the request's runners.yaml, loaded once

    @property
    def gpus_per_node(self) -> dict[str, int]:
        """Runner label -> GPUs of one node, where the runners declare it."""
        if self.runners is None:
            return {}
        return {name: hw.gpus_per_node for name, hw in self.runners.hardware.items()}

    @property
    def run_dir(self) -> RunDir:
        return RunDir(self.request.results, self.run_id)


_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@,-]+")


def default_run_id(config_keys: Sequence[str], evals: str = "none") -> str:
    """Deterministic, so re-running the same command resumes the same run directory."""
    base = "+".join(sorted(config_keys))
    if evals != "none":
        base += f"@{evals}"
    safe = re.sub(r"\.{2,}", ".", _UNSAFE.sub("_", base)).strip("._-") or "run"
    if safe != base or len(safe) > 120:
        safe = safe[:100].rstrip("._-") + "-" + hashlib.sha256(base.encode()).hexdigest()[:8]
    return safe


def load_selection(request: RunRequest) -> tuple[Selection | None, RunnerConfig | None]:
    """The request's catalog with its runners (None without catalog files), and its runners (None without a
    runners.yaml): each file read once per prepare."""
    from infx.matrix.select import Selection

    if request.config_files:
        chosen = Selection.load(request.config_files, request.runner_config)
        return chosen, chosen.runners
    if request.runner_config:
        from infx.catalog import load_runners

        return None, load_runners(request.runner_config)
    return None, None


def select(request: RunRequest, chosen: Selection | None = None) -> list[Point]:
    if request.changelog is not None:
        from infx.changelog.gate import changelog_points

        c = request.changelog
        points = changelog_points(c.repo, c.base_ref, c.head_ref, changelog_file=c.changelog_file,
                                config_files=c.config_files, runner_config=c.runner_config,
                                all_evals=request.evals == "all", evals_only=request.evals == "evals-only",
                                trim_conc=c.trim_conc)
        return [p for p in points if request.conc is None or set(p.concs) & set(request.conc)]
    if chosen is None:
        from infx.matrix.select import Selection

        chosen = Selection.load(request.config_files, request.runner_config)
    return chosen.points(request.config_keys, evals=request.evals, conc=request.conc)


def make_renderer(recipes_path: str | None, workspace: Workspace | None = None,
                  runtimes: dict[str, str] | None = None) -> Render:
    """``point -> Launch`` on the placeholder port (fingerprints leave the port out)."""
    from infx.sweep.rendering import renderer_at_port

    at_port = renderer_at_port(recipes_path, workspace, runtimes)
    return lambda point: at_port(point, 8000)


def workspace_of(request: RunRequest) -> Workspace:
    """The workspace a request was prepared in (the current one when it names none)."""
    return ws_at(request.workspace) if request.workspace else current_workspace()


def gate(points: list[Point], request: RunRequest, render: Render, chosen: Selection | None = None,
         runners: RunnerConfig | None = None,
         ) -> tuple[list[tuple[Point, Launch | Deployment]], dict[str, tuple[Point, str, str]]]:
    """Render every point (a point no recipe can render is rejected) and run the preflight gate.

    Returns the (point, launch) pairs that pass and the rejects ``pid -> (point, fingerprint, reason)``.
    """
    ok: list[tuple[Point, Launch | Deployment]] = []
    rejects: dict[str, tuple[Point, str, str]] = {}
    for p in points:
        try:
            ok.append((p, render(p)))
        except InfxError as exc:
            rejects[p.point_id] = (p, "", f"render: {exc.diagnostics[0].message if exc.diagnostics else exc}")
    verdicts = (_preflight([p for p, _ in ok], request, {p.point_id: launch for p, launch in ok}, chosen, runners)
                if request.preflight else {})
    if verdicts:
        keep = []
        for p, launch in ok:
            v = verdicts.get(p.point_id)
            if v is not None and not v.ok_to_run:
                failing = [c.name for c in v.checks if c.status == "fail"]
                rejects[p.point_id] = (p, launch.fingerprint,
                                       f"preflight:{','.join(failing) or 'fail'}: {v.reason}")
            else:
                keep.append((p, launch))
        ok = keep
    return ok, rejects


def _preflight(points: list[Point], request: RunRequest, launches: dict[str, Launch | Deployment],
               chosen: Selection | None, runners: RunnerConfig | None) -> dict[str, PointVerdict]:
    """Verdicts by point id from the preflight stage when it is installed, else none (schema validation
    already happened while selecting)."""
    if not points:
        return {}
    try:
        from infx.preflight.gate import preflight_points
    except ImportError:
        return {}
    from infx.engines.recipes import recipe_files as resolve_recipe_files
    from infx.preflight.cards import load_cards
    from infx.preflight.checks import PlaceholderScan
    from infx.preflight.gate import PreflightOptions

    ws = workspace_of(request)
    recipe_files = [str(f) for f in resolve_recipe_files(request.recipes, ws)]
    changelog = _changelog_file(request)
    # the same checks as `infx preflight`: evals coverage, placeholders in catalog entries, recipes, changelog
    placeholders = PlaceholderScan.build(request.config_files, recipe_files, changelog)
    verdicts = preflight_points(points, runners=runners, launches=launches, cards=load_cards(ws.card_dirs()),
                                options=PreflightOptions(evals=request.evals, local_gpu_check=True),
                                placeholders=placeholders,
                                config_keys=_config_keys_of(request, chosen, {p.point_id for p in points}),
                                recipe_files={Path(f).stem: f for f in recipe_files})
    return {v.point_id: v for v in verdicts}


def _changelog_file(request: RunRequest) -> Path | None:
    """The changelog scanned for placeholders: the change's own, else the workspace's (as ``infx
    preflight`` does)."""
    if request.changelog is not None:
        f = Path(request.changelog.repo) / request.changelog.changelog_file
    else:
        f = workspace_of(request).changelog
    return f if f.is_file() else None


def _config_keys_of(request: RunRequest, chosen: Selection | None, wanted: set[str]) -> dict[str, str]:
    """point-id -> catalog key for the placeholder scan (the selected keys, every key in changelog mode)."""
    if chosen is None:
        return {}
    from infx.matrix.generate import resolve_keys, test_config_rows

    catalog, runners = chosen.catalog, chosen.runners
    keys = (resolve_keys(catalog, request.config_keys) if request.config_keys and request.changelog is None
            else list(catalog.entries))
    out: dict[str, str] = {}
    for key in keys:
        try:
            rows = test_config_rows(catalog, runners, [key], evals="all" if request.evals != "none" else "none")
        except InfxError:
            continue
        for row in rows:
            if row.get("point-id") in wanted:
                out.setdefault(row["point-id"], key)
    return out


def prepare(request: RunRequest, *, points: list[Point] | None = None,
            render: Render | None = None) -> Prepared:
    chosen, runners = load_selection(request)
    pts = points if points is not None else select(request, chosen)
    if (points is None and chosen is not None and request.changelog is None and request.config_keys
            and request.load.trials is None):
        by_point = chosen.scenario_field(request.config_keys, "trials")
        if by_point:
            request = request.model_copy(update={"load": request.load.model_copy(update={"trials_by_point": by_point})})
    if request.load.search is not None:
        request = _with_slo(request, pts, chosen)
    from infx.evals.point import eval_launch_point

    pts = [eval_launch_point(p) for p in pts]  # eval-only points launch at the eval context
    dupes = [pid for pid, n in Counter(p.point_id for p in pts).items() if n > 1]
    if dupes:
        raise InfxError(Diagnostic(f"duplicate point ids in the selection: {', '.join(sorted(set(dupes))[:5])}"))
    render = render or make_renderer(request.recipes, workspace_of(request), runners.runtimes() if runners else None)
    ok, rejects = gate(pts, request, render, chosen, runners)
    launches = {p.point_id: launch for p, launch in ok}
    groups = group_points([p for p, _ in ok], lambda p: launches[p.point_id])
    run_id = request.run_id or (request.changelog.run_id() if request.changelog is not None
                                else default_run_id(request.config_keys, request.evals))
    return Prepared(request, run_id, pts, groups, rejects, runners)


def _with_slo(request: RunRequest, points: list[Point], chosen: Selection | None) -> RunRequest:
    """The tier ``--slo`` names, per selected point, from the points' catalog scenarios; a tier
    that no selected scenario declares is bad input."""
    tier = request.load.slo_tier
    if not tier:
        raise InfxError(Diagnostic("--search max-concurrency needs --slo TIER (a tier declared under slo: "
                                   "on the scenario in the catalog)"))
    declared = chosen.scenario_field(request.config_keys, "slo") if chosen is not None and request.config_keys \
        else {}
    wanted = {p.point_id for p in points}
    by_point = {pid: tiers[tier] for pid, tiers in declared.items() if tier in tiers and pid in wanted}
    if not by_point:
        known = sorted({t for tiers in declared.values() for t in tiers})
        raise InfxError(Diagnostic(f"SLO tier {tier!r} is not declared by any selected scenario "
                                   f"(declared: {', '.join(known) or 'none'}; add slo: "
                                   f"{{{tier}: {{ttft_p95_ms: 500}}}} to the scenario in the catalog)",
                                   request.config_files[0] if request.config_files else None))
    return request.model_copy(update={"load": request.load.model_copy(update={"slo_by_point": by_point})})


def write_plan(prep: Prepared) -> RunPlan:
    plan = RunPlan(request=prep.request, run_id=prep.run_id,
                   points={p.point_id: p.to_row() for p in prep.points},
                   groups=planned_groups(prep),
                   created_at=time.time())
    save_plan(prep.run_dir, plan)
    return plan


def planned_groups(prep: Prepared) -> list[PlannedGroup]:
    """The prepared groups as ``plan.json`` and Slurm see them: nodes and GPUs per node of each."""
    gpn = prep.gpus_per_node
    fleet_nodes = ({name: hw.nodes for name, hw in prep.runners.hardware.items() if hw.nodes}
                   if prep.runners is not None else {})
    return [_planned_group(g, gpn, fleet_nodes) for g in prep.groups]


def _planned_group(g: LaunchGroup, gpus_per_node: dict[str, int], fleet_nodes: dict[str, int]) -> PlannedGroup:
    """A deployment across nodes asks Slurm for every node its pools take and the GPUs of one node each; a CPU
    deployment on a fleet that declares several nodes asks for a node per worker pool."""
    point = g.points[0]
    if point.multinode and g.gpus == 0 and fleet_nodes.get(point.runner, 1) > 1:
        assert point.prefill is not None and point.decode is not None
        pools = sum(1 for w in (point.prefill, point.decode) if w.num_worker > 0)
        return PlannedGroup(fingerprint=g.fingerprint, point_ids=g.point_ids,
                            nodes=min(pools, fleet_nodes[point.runner]))
    if point.multinode and g.gpus > 0:
        from infx.sweep.deployment import allocation

        gpn = gpus_per_node.get(point.runner)
        if gpn:
            nodes, per_node = allocation(point, gpn)
            return PlannedGroup(fingerprint=g.fingerprint, point_ids=g.point_ids, gpus=per_node, nodes=nodes)
    return PlannedGroup(fingerprint=g.fingerprint, point_ids=g.point_ids, gpus=g.gpus)


def save_plan(run_dir: RunDir, plan: RunPlan) -> None:
    write_text(run_dir.plan_file, plan.model_dump_json(indent=2) + "\n")


def load_plan(run_dir: RunDir) -> RunPlan:
    from infx.results.layout import read_model

    return read_model(run_dir.plan_file, RunPlan)


def start_invocation(prep: Prepared) -> None:
    """Open a prepared sweep's invocation: its manifest, a stale STOP cleared."""
    open_invocation(prep.run_dir, prep.request, [p.image for p in prep.points], prep.gpus_per_node)


def open_invocation(rd: RunDir, req: RunRequest, images: list[str], gpus_per_node: dict[str, int] | None = None,
                    *,
                    clear_stop: bool = True) -> None:
    """Manifest for this invocation (keeps the first start time and the earlier facts when resuming).
    ``clear_stop``: a new sweep clears a stale fail-fast STOP (a Slurm job of a running sweep keeps it)."""
    rd.root.mkdir(parents=True, exist_ok=True)
    if clear_stop:
        rd.stop_file.unlink(missing_ok=True)
    with rd.locked():
        prev = rd.read_manifest()
        ws = workspace_of(req)
        m = new_manifest(rd.run_id, config_files=req.config_files, recipes=req.recipes or ws.recipe_dirs(),
                         config_keys=req.config_keys, repo=ws.root, images=images,
                         gpus_per_node=gpus_per_node or (prev.gpus_per_node if prev else None), previous=prev)
        m = m.model_copy(update={"official": req.pr is None, "pr": req.pr, "baseline_run": req.baseline_run,
                                 "description": req.description or m.description,
                                 "append_only": req.append_only or (prev.append_only if prev else False)})
        rd.results.write_manifest(m)


def finish_invocation(rd: RunDir) -> None:
    """Record the engine versions the groups saw and the end time."""
    versions = [g.startup.engine_version for g in rd.groups() if g.startup is not None]

    def upd(m: RunManifest) -> RunManifest:
        return m.model_copy(update={"engine_version": merge_engine_versions(m.engine_version, versions),
                                    "ended_at": time.time()})

    rd.update_manifest(upd)


def options_of(request: RunRequest, **over: bool | float | int) -> SweepOptions:
    opts = SweepOptions(fail_fast=request.fail_fast, rerun_failed=request.rerun_failed,
                        ready_timeout=request.ready_timeout, max_error_rate=request.max_error_rate,
                        load_key=request.load.key(), search=request.load.search is not None,
                        stop_at_saturation=request.load.stop_at_saturation)
    for k, v in over.items():
        setattr(opts, k, v)
    return opts


def print_err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
