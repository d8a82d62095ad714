"""``infx plan``: the launch of every selected point, and which points can share one.

Each point is rendered with its recipe (:func:`infx.engines.render.render_launch`); problems of
all points (no recipe, drift, contradictions, bad expressions) are collected and raised together.
Points whose launches have the same fingerprint can be served by one engine.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence

from pydantic import BaseModel

from infx.diagnostics import Diagnostic, InfxError
from infx.engines.disagg.model import Deployment
from infx.engines.launch import Launch, Runtime, redact_env
from infx.engines.recipes import RecipeSet
from infx.engines.synthetic import label_of_launch
from infx.matrix.point import Point
from infx.metrics.sections import SpecDecodeLabel


class PlannedPoint(BaseModel):
    """One point's launch with the matrix fields that identify it (so scripts need not parse names)."""

    point_id: str
    exp_name: str
    config_key: str | None = None
    scenario_type: str
    tp: int | None
    pp: int
    ep: int
    dp_attn: bool
    dcp_size: int
    pcp_size: int
    conc: int | list[int]
    isl: int | None
    osl: int | None
    spec_decoding: str
    kv_offloading: str | None
    disagg: bool
    run_eval: bool
    launch: Launch | None = None  # env redacted (single-node points)
    deployment: Deployment | None = None  # every role, env redacted (multinode points)
    acceptance: SpecDecodeLabel | None = None  # spec decoding: measured or synthetic (read before redaction)

    @property
    def fingerprint(self) -> str:
        return self.deployment.fingerprint if self.deployment else self._launch().fingerprint

    @property
    def recipe(self) -> str:
        return self.deployment.engine if self.deployment else self._launch().recipe

    def _launch(self) -> Launch:
        assert self.launch is not None, "a planned point carries its launch or its deployment"
        return self.launch

    @classmethod
    def of(cls, point: Point, launch: Launch | None, config_key: str | None,
           deployment: Deployment | None = None, acceptance: SpecDecodeLabel | None = None) -> PlannedPoint:
        fields = {k: getattr(point, k) for k in cls.model_fields
                  if k not in ("config_key", "launch", "deployment", "acceptance")}
        return cls(**fields, config_key=config_key, launch=launch, deployment=deployment, acceptance=acceptance)


class LaunchGroup(BaseModel):
    fingerprint: str
    recipe: str
    point_ids: list[str]


class Plan(BaseModel):
    points: list[PlannedPoint]
    groups: list[LaunchGroup]  # distinct launches, in first-use order
    skipped: list[str] = []  # --keep-going: the problems of the points that could not be rendered


def build_plan(points: Sequence[Point], recipes: RecipeSet, *, runtime: Runtime = "local", port: int = 8000,
               config_keys: dict[str, str] | None = None, keep_going: bool = False) -> Plan:
    from infx.engines.render import prefetch_scripts, render_launch

    prefetch_scripts(list(points), recipes)
    diags: list[Diagnostic] = []
    planned: list[PlannedPoint] = []
    seen: set[str] = set()
    for p in points:
        try:
            if p.multinode:
                from infx.engines.disagg.render import render_deployment

                dep = render_deployment(p, recipes, port=port)
                planned.append(PlannedPoint.of(p, None, (config_keys or {}).get(p.point_id), dep.redacted(),
                                               label_of_launch(p, dep)))
                continue
            launch = render_launch(p, recipes, port=port, runtime=runtime)
            acc = label_of_launch(p, launch)
        except InfxError as exc:
            for d in exc.diagnostics:
                if str(d) not in seen:
                    seen.add(str(d))
                    diags.append(d)
            continue
        planned.append(PlannedPoint.of(p, launch.redacted(), (config_keys or {}).get(p.point_id), acceptance=acc))
    if diags and not keep_going:
        raise InfxError(diags)
    groups: dict[str, LaunchGroup] = {}
    for pp in planned:
        g = groups.setdefault(pp.fingerprint, LaunchGroup(fingerprint=pp.fingerprint, recipe=pp.recipe, point_ids=[]))
        g.point_ids.append(pp.point_id)
    return Plan(points=planned, groups=list(groups.values()), skipped=[str(d) for d in diags])


def format_plan(plan: Plan) -> str:
    lines: list[str] = []
    index = {g.fingerprint: i + 1 for i, g in enumerate(plan.groups)}
    for pp in plan.points:
        lines.append(f"point {pp.point_id}  {pp.exp_name}  (conc {pp.conc})")
        if pp.acceptance is not None:
            lines.append(f"  acceptance: {pp.acceptance.text()}  (spec-decoding {pp.acceptance.method})")
        if pp.deployment is not None:
            lines.extend(format_deployment(pp.deployment, index[pp.fingerprint]))
            continue
        launch = pp._launch()
        lines.append(f"  launch #{index[launch.fingerprint]}  fingerprint {launch.fingerprint[:16]}  "
                     f"recipe {launch.recipe}  runtime {launch.runtime}")
        if launch.script:
            script_sha = launch.script_sha256[:16] if launch.script_sha256 else "-"
            lib_sha = launch.lib_sha256[:16] if launch.lib_sha256 else "-"
            lines.append(f"  script: {launch.script}  sha256 {script_sha}  lib sha256 {lib_sha}")
        if launch.env:
            lines.append("  env:  " + _env_text(launch.env))
        lines.append("  argv: " + shlex.join(launch.argv))
        for name in launch.files:
            lines.append(f"  file: {name}")
        for c in launch.client:
            lines.append(f"  {c[0]}: " + shlex.join(c[1:]))
    lines.append("")
    lines.append(f"{len(plan.points)} points, {len(plan.points)} launches rendered, {len(plan.groups)} distinct:")
    for i, g in enumerate(plan.groups, 1):
        lines.append(f"  launch #{i} {g.fingerprint[:16]} ({g.recipe}): {len(g.point_ids)} point(s) share it")
    if plan.skipped:
        lines.append(f"{len(plan.skipped)} point problem(s) skipped (--keep-going); the first: {plan.skipped[0]}")
    lines.extend(acceptance_counts(plan))
    return "\n".join(lines)


def acceptance_counts(plan: Plan) -> list[str]:
    """How many speculative-decoding points run with synthetic (forced) acceptance, by engine."""
    by: dict[str, list[int]] = {}
    for pp in plan.points:
        if pp.acceptance is None:
            continue
        engine = pp.deployment.framework if pp.deployment is not None else pp._launch().engine
        counts = by.setdefault(engine, [0, 0])
        counts[0 if pp.acceptance.acceptance == "synthetic" else 1] += 1
    if not by:
        return []
    total = sum(c[0] for c in by.values())
    out = [f"speculative decoding: {total} of {sum(sum(c) for c in by.values())} point(s) run with synthetic "
           "acceptance (a forced acceptance length, not a measured one):"]
    out.extend(f"  {engine}: {c[0]} synthetic, {c[1]} measured" for engine, c in sorted(by.items()))
    return out


def format_deployment(d: Deployment, number: int) -> list[str]:
    kv = f"  kv-transfer {d.kv_transfer.name} ({d.kv_transfer.connector})" if d.kv_transfer else ""
    out = [f"  deployment #{number}  fingerprint {d.fingerprint[:16]}  {d.framework}  "
           f"{d.gpus()} GPU(s): prefill {d.gpus('prefill')}, decode {d.gpus('decode')}{kv}"]
    for r in d.roles:
        out.append(f"  role {r.name} ({r.kind}) x{r.count}  {r.gpus_per_instance} GPU each  tp={r.tp} ep={r.ep}"
                   f"{' dp-attn' if r.dp_attn else ''}  launch {r.launch.fingerprint[:16]}")
        if r.launch.env:
            out.append("    env:  " + _env_text(r.launch.env))
        out.append("    argv: " + shlex.join(r.launch.argv))
        for name in r.launch.files:
            out.append(f"    file: {name}")
    out.extend(f"  note: {n}" for n in d.notes)
    return out


def _env_text(env: dict[str, str]) -> str:
    """``K=V`` pairs, sorted, secrets redacted, each value shell-quoted."""
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(redact_env(env).items()))


def _parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="Render the engine launch of each selected point.")
    ap.add_argument("--config-files", nargs="+", default=None, metavar="FILE",
                    help="master config files (default: the workspace's configs/*-master.yaml)")
    ap.add_argument("--runner-config", default=None, metavar="FILE", help="runners.yaml (default: the workspace's)")
    ap.add_argument("--config-keys", nargs="+", required=True, metavar="KEY",
                    help="catalog keys (fnmatch globs allowed)")
    ap.add_argument("--recipes", default=None, metavar="DIR",
                    help="recipe directory or files (default: the workspace's recipes/ over the built-in ones)")
    ap.add_argument("--runtime", default="local", choices=["local", "docker", "podman", "slurm"])
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--conc", nargs="+", type=int, default=None)
    ap.add_argument("--json", action="store_true", help="print the plan as JSON")
    ap.add_argument("--keep-going", action="store_true",
                    help="render every point that can be; name the others' problems instead of stopping")
    return ap


def run(argv: list[str], prog: str = "infx plan") -> int:
    args = _parser(prog).parse_args(argv)
    from infx.engines.recipes import workspace_recipes
    from infx.matrix.select import keyed_points
    from infx.workspace import current

    try:
        ws = current()
        keyed = keyed_points(args.config_files or ws.require_config_files(), args.runner_config or ws.runner_config,
                             args.config_keys, evals="none", conc=args.conc)
        recipes = workspace_recipes(args.recipes, ws)
        plan = build_plan([p for _, p in keyed], recipes, runtime=args.runtime, port=args.port,
                          config_keys={p.point_id: k for k, p in keyed}, keep_going=args.keep_going)
    except InfxError as exc:
        for d in exc.diagnostics:
            print(str(d), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(plan.model_dump(mode="json"), indent=2))
    else:
        print(format_plan(plan))
    return 0
