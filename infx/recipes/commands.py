"""The libraries behind ``infx recipes render|show|check``: typed requests in, printable text out."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from infx.diagnostics import Diagnostic, InfxError
from infx.recipes.check import CheckRequest, PointCheck, catalog_checks
from infx.recipes.render import RecipeRendering, RecipeSelection, render
from infx.recipes.source import RecipeRepo


class RepoOptions(BaseModel):
    recipes_repo: Path | None = None
    recipes_commit: str | None = None


def open_repo(opts: RepoOptions, workspace: Any = None) -> RecipeRepo:
    """The checkout named by ``--recipes-repo`` (and ``--recipes-commit``), else ``[recipes]`` of infx.toml."""
    from infx.workspace import current

    path, commit = opts.recipes_repo, opts.recipes_commit
    if path is None:
        ws = workspace or current()
        path = ws.upstream_recipes
        commit = commit or ws.upstream.commit
        if path is None:
            raise InfxError(Diagnostic("no upstream recipes checkout: give --recipes-repo DIR or set [recipes] path "
                                       "in infx.toml", str(ws.marker or ws.root)))
    return RecipeRepo(path, commit)


class RenderRequest(RepoOptions):
    model: str
    hardware: str
    strategy: str | None = None
    variant: str = "default"
    features: list[str] | None = None
    modes: list[str] = Field(default_factory=list)  # feature:mode
    as_json: bool = False


def render_request(req: RenderRequest) -> RecipeRendering:
    repo = open_repo(req)
    lr = repo.find_model(req.model)
    modes: dict[str, str] = {}
    for m in req.modes:
        f, sep, mode = m.partition(":")
        if not sep or not f or not mode:
            raise InfxError(Diagnostic(f"--mode must be FEATURE:MODE, not '{m}' (at --mode)"))
        modes[f] = mode
    strategy = req.strategy
    if strategy is None:
        d = lr.recipe.default_strategy
        strategy = d if d and d.startswith("single_node") else "single_node_tp"
    sel = RecipeSelection(recipe_path=lr.rel, recipe_commit=repo.commit, variant=req.variant, strategy=strategy,
                          hardware=req.hardware, features=req.features, modes=modes)
    return render(repo, sel, lr)


def format_rendering(r: RecipeRendering, as_json: bool = False) -> str:
    if as_json:
        return r.model_dump_json(indent=2)
    s = r.selection
    lines = [f"# {s.recipe_path} variant={s.variant} strategy={s.strategy} hardware={s.hardware}"
             + (f" commit={s.recipe_commit[:12]}" if s.recipe_commit else ""),
             f"# features: {', '.join(r.features) or '-'}"
             + (f"; modes: {', '.join(f'{k}:{v}' for k, v in r.modes.items())}" if r.modes else ""),
             f"# image: {r.docker_image}  ({r.image_provenance})"]
    for k, v in r.env.items():
        lines.append(f"# env {k}={v}  ({r.env_provenance[k]})")
    for w in r.warnings:
        lines.append(f"# warning: {w}")
    lines.append(" ".join(f"{k}={shlex.quote(v)}" for k, v in r.env.items()) + (" " if r.env else "")
                 + shlex.join(r.argv))
    lines.append("")
    lines.append("token provenance:")
    i = 0
    argv, prov = r.argv, r.provenance
    while i < len(argv):
        tok = argv[i]
        if i >= 3 and tok.startswith("-") and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            lines.append(f"  {tok} {argv[i + 1]}    {prov[i + 1]}")
            i += 2
            continue
        lines.append(f"  {tok}    {prov[i]}")
        i += 1
    return "\n".join(lines)


class ShowRequest(RepoOptions):
    model: str
    as_json: bool = False


def show(req: ShowRequest) -> str:
    """What a recipe declares: model facts, variants, hardware status, strategies, features, warnings."""
    from infx.recipes.render import default_features, listed_hardware, offered_strategies

    repo = open_repo(req)
    lr = repo.find_model(req.model)
    r = lr.recipe
    if req.as_json:
        return json.dumps({"file": lr.rel, "commit": repo.commit, "recipe": r.model_dump(mode="json",
                                                                                          exclude_none=True),
                           "warnings": [str(w) for w in lr.warnings]}, indent=2)
    m = r.model
    out = [f"{lr.rel}" + (f" @ {repo.commit[:12]}" if repo.commit else ""),
           f"model {m.model_id}: {m.architecture or '?'}, {m.parameter_count or '?'} params "
           f"({m.active_parameters or '?'} active), context {m.context_length or '?'}; "
           f"vLLM >= {m.min_vllm_version or '?'}" + (" (nightly)" if m.nightly_required else ""),
           "hardware: " + (", ".join(f"{k} {v}" for k, v in r.meta.hardware.items()) or "none listed"),
           "strategies: " + ", ".join(offered_strategies(r))
           + (f" (default {r.default_strategy})" if r.default_strategy else ""),
           "variants:"]
    for vk, v in r.variants.items():
        hw = listed_hardware(repo, r, vk)
        out.append(f"  {vk}: {v.model_id or m.model_id} precision={v.precision} vram_minimum_gb={v.vram_minimum_gb}"
                   f" (line {lr.line(('variants', vk))}); renders on {', '.join(hw) or 'nothing listed'}")
    defaults = set(default_features(r, "default", ""))
    out.append("features:")
    for f, feat in r.features.items():
        kind = "modes " + "/".join(feat.modes) if feat.modes else "flag"
        on = "default on" if f in defaults else "opt-in"
        only = f"; strategies {', '.join(feat.strategies)}" if feat.strategies else ""
        out.append(f"  {f}: {on}, {kind}{only} (line {lr.line(('features', f))})")
    for w in lr.warnings:
        out.append(f"warning: {w}")
    return "\n".join(out)


# ---- check ----------------------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def point_table(c: PointCheck, all_rows: bool = False) -> list[str]:
    head = ["verdict", "class", "flag/env", "launch", "at", "recipe", "recipe file:line"]
    rows = [head]
    for r in c.rows:
        if r.verdict == "pass" and not all_rows:
            continue
        rows.append([r.verdict, r.cls, r.display or r.key, _fmt(r.point)[:60], str(r.point_at or "-"),
                     _fmt(r.recipe)[:60], str(r.recipe_at or "-")])
    return _table(rows) if len(rows) > 1 else ["  (every flag and variable matches)"]


class Summary(BaseModel):
    entries: int
    points: int
    matched: int
    unmatched: int
    points_with_errors: int
    must_match_errors: int
    warnings: int
    hardware_unsupported: int


def summarise(checks: list[PointCheck]) -> Summary:
    return Summary(
        entries=len({c.point.config_key for c in checks}), points=len(checks),
        matched=sum(c.matched for c in checks), unmatched=sum(not c.matched for c in checks),
        points_with_errors=sum(c.errors > 0 for c in checks),
        must_match_errors=sum(c.errors for c in checks), warnings=sum(c.warnings for c in checks),
        hardware_unsupported=sum(any(f.rule == "recipe-hardware" and f.severity == "warning" for f in c.findings)
                                 for c in checks))


def format_checks(checks: list[PointCheck], brief: bool = False, all_rows: bool = False) -> str:
    out: list[str] = []
    if not brief:
        groups: dict[str, list[PointCheck]] = {}
        for c in checks:
            if c.matched and c.rendering is not None:
                s = c.rendering.selection
                head = (f"{c.point.config_key}: {c.launch_source} vs {s.recipe_path} variant={s.variant} "
                        f"strategy={s.strategy} hardware={s.hardware}"
                        + (f" features={','.join(c.rendering.features)}" if c.rendering.features else "")
                        + (f" modes={','.join(f'{k}:{v}' for k, v in c.rendering.modes.items())}"
                           if c.rendering.modes else ""))
                body = point_table(c, all_rows)
                extra = [f"  {f.severity}: {f.message} ({f.file}:{f.line})" for f in c.findings
                         if f.rule == "recipe-hardware" and f.severity != "pass"]
                text = "\n".join([head, *extra, *body])
            else:
                text = f"{c.point.config_key}: NOT MATCHED: {c.reason}"
            groups.setdefault(text, []).append(c)
        for text, cs in groups.items():
            first, _, rest = text.partition("\n")
            ids = ", ".join(f"{c.point.point_id}(tp{c.point.tp} ep{c.point.ep} conc{c.point.conc})" for c in cs[:6])
            more = f" +{len(cs) - 6} more" if len(cs) > 6 else ""
            out.append(f"{first}\n  points: {ids}{more}" + (f"\n{rest}" if rest else ""))
            out.append("")
    sm = summarise(checks)
    out += ["summary", *_table([
        ["catalog entries", "points", "matched to a recipe", "not matched", "points with must-match errors",
         "must-match errors", "warnings", "points on hardware marked unsupported"],
        [str(sm.entries), str(sm.points), str(sm.matched), str(sm.unmatched), str(sm.points_with_errors),
         str(sm.must_match_errors), str(sm.warnings), str(sm.hardware_unsupported)]])]
    return "\n".join(out)


class CheckCommand(RepoOptions):
    config_files: list[Path] = Field(default_factory=list)
    runner_config: Path | None = None
    config_keys: list[str] | None = None
    table: Path | None = None
    as_json: bool = False
    brief: bool = False
    all_rows: bool = False


def run_check(req: CheckCommand) -> tuple[str, list[PointCheck]]:
    from infx.workspace import current

    ws = current()
    repo = open_repo(req, ws)
    checks = catalog_checks(CheckRequest(recipes_repo=repo.tree.root, recipes_commit=repo.commit,
                                         config_files=req.config_files, runner_config=req.runner_config,
                                         config_keys=req.config_keys, table=req.table), ws)
    if req.as_json:
        return json.dumps({"summary": summarise(checks).model_dump(),
                           "points": [c.model_dump(mode="json", exclude={"rendering": {"provenance"}})
                                      for c in checks]}, indent=2, default=str), checks
    return format_checks(checks, brief=req.brief, all_rows=req.all_rows), checks
