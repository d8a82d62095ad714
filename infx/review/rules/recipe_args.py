"""``recipe-args``: each changed single-node vLLM point's major server arguments against the upstream
recipe its config key links (spec 4.1-4.3), computed by :func:`infx.recipes.rules.recipe_args` over the
recipes checkout (``--recipes-repo`` or ``[recipes] path``) at the commit the link names: a merged PR's
merge commit, a linked file's ref, a page's query pinning hardware/variant/strategy/features; an unmerged
PR is compared at its head (``headRefOid``) and labelled "unmerged preview". Must-match flags set by the
launch and absent or different in the recipe are errors; must-match flags only the recipe sets and
unclassified flags are warnings; harness and functional differences are one note per arm."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from infx.recipes.check import RecipeFinding, arg_table
from infx.recipes.rules import recipe_args
from infx.review.models import Finding, Location, Severity, finding
from infx.review.rules import Outcome, RuleInfo, status_of
from infx.review.upstream import Item, arm_label, items, upstream_path

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("recipe-args", "Major server arguments match the linked upstream recipe",
                "Each changed single-node point's normalised argv against the upstream recipe rendering it "
                "links (model, parallelism, backends, spec decoding, engine-specific configs).", "error")


def check(ctx: ReviewContext) -> Outcome:
    todo = items(ctx)
    if isinstance(todo, str):
        return Outcome("n/a", todo)
    table = arg_table(ctx.head.root / "recipe-args.yaml")
    # one finding per arm and flag (the notes of an arm together); a value that differs between the
    # arm's concurrencies (a capture size) keeps each distinct message in the evidence
    groups: dict[tuple[str, str, str], tuple[Item, RecipeFinding, list[str], dict[str, list[str]]]] = {}
    compared = 0
    for it in todo:
        found = _findings(it, table)
        compared += not any(f.message.startswith("not compared") for f in found)
        arm = f"{it.key}/{arm_label(ctx, it.pid)}"
        for rf in found:
            sub = str(rf.evidence.get("key") or ("notes" if rf.severity == "note" else rf.message))
            g = groups.setdefault((arm, rf.severity, sub), (it, rf, [], {}))
            g[2].append(it.pid)
            g[3].setdefault(rf.message, []).append(ctx.head_point(it.pid).exp_name)
    findings = [_finding(ctx, arm, sub, it, rf, pids, variants)
                for (arm, _, sub), (it, rf, pids, variants) in groups.items()]
    _dedupe_ids(findings)
    return status_of(findings, f"{compared} changed point(s) run their recipe's major arguments")


def _findings(it: Item, table: Any) -> list[RecipeFinding]:
    if it.target.manual:
        return [RecipeFinding(rule="recipe-args", severity="note", file=None, line=None,
                              message="not compared: the link is an SGLang cookbook (the major-args check is manual)")]
    if isinstance(it.repo, str):
        return [RecipeFinding(rule="recipe-args", severity="warning", file=None, line=None,
                              message=f"not compared with a recipe: {it.repo}")]
    if isinstance(it.launch, str):
        return [RecipeFinding(rule="recipe-args", severity="warning", file=None, line=None,
                              message=f"not compared with a recipe: {it.launch}")]
    repo, index = it.repo
    return recipe_args(repo, it.facts, it.launch, table=table, index=index, pin=it.target.pin)


def _finding(ctx: ReviewContext, arm: str, sub: str, it: Item, rf: RecipeFinding, pids: list[str],
             variants: dict[str, list[str]]) -> Finding:
    locs = [Location(path=ctx.head_file(it.key), line=ctx.row_line(pids[0]))]
    if rf.file and rf.line:
        locs.append(Location(path=upstream_path(ctx, rf.file, it.launch), line=rf.line, role="related"))
    preview = it.target.label == "unmerged preview"
    prefix = "[unmerged preview] " if preview else ""
    tp = ctx.head_point(pids[0]).tp
    title = f"{prefix}TP={tp} arm: {rf.message}"
    repo = it.repo if not isinstance(it.repo, str) else None
    ev: dict[str, Any] = {**rf.evidence, "arm": arm, "link": it.target.link.url if it.target.link else None,
                          "link_state": it.target.label,
                          "recipe_commit": rf.evidence.get("recipe_commit") or (repo[0].commit if repo else None)}
    if rf.file:
        ev["file"] = f"{rf.file}:{rf.line}" if rf.line else rf.file
    if len(variants) > 1:
        ev["per_point"] = [{"message": m, "points": names} for m, names in variants.items()]
    sev: Severity = "note" if rf.severity == "pass" else rf.severity
    return finding("recipe-args", sev, f"{arm}/{sub}", title, title + (
        " (compared at the unmerged PR's head; a preview never satisfies the rule)" if preview else ""),
        locations=locs, points=[ctx.head_point(p).exp_name for p in pids], evidence=ev,
        template=f"{sev}|{sub}")


def _dedupe_ids(findings: list[Finding]) -> None:
    seen: dict[str, int] = {}
    for i, f in enumerate(findings):
        n = seen.get(f.id, 0)
        seen[f.id] = n + 1
        if n:
            findings[i] = f.model_copy(update={"id": f"{f.id}#{n + 1}"})
