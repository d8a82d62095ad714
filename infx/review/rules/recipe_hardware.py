"""``recipe-hardware``: the upstream recipe's ``meta.hardware`` status for each changed single-node vLLM
point's GPU (spec 4.5), from :func:`infx.recipes.rules.recipe_hardware` over the recipes checkout at the
commit the config key's link names: ``unsupported`` is a warning, absent a note ("not verified
upstream"), ``verified`` a pass. Located at the catalog entry's ``runner:`` line, related to the recipe's
``meta.hardware`` line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infx.recipes.check import RecipeFinding, arg_table
from infx.recipes.rules import recipe_hardware
from infx.review.models import Finding, Location, Severity, finding
from infx.review.rules import Outcome, RuleInfo, status_of
from infx.review.upstream import Item, items, upstream_path

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("recipe-hardware", "The upstream recipe supports the runner hardware",
                "The upstream recipe's meta.hardware status for each changed point's GPU "
                "(supported, unsupported, unknown).", "warning")


def check(ctx: ReviewContext) -> Outcome:
    todo = items(ctx)
    if isinstance(todo, str):
        return Outcome("n/a", todo)
    table = arg_table(ctx.head.root / "recipe-args.yaml")
    groups: dict[tuple[str, str, str], tuple[Item, RecipeFinding, list[str]]] = {}
    passed = 0
    unmatched = 0
    for it in todo:
        if isinstance(it.repo, str) or it.target.manual:
            unmatched += 1
            continue
        repo, index = it.repo
        found = recipe_hardware(repo, it.facts, table=table, index=index, pin=it.target.pin)
        if not found:
            unmatched += 1
        for rf in found:
            if rf.severity == "pass":
                passed += 1
                continue
            groups.setdefault((it.key, rf.severity, rf.message), (it, rf, []))[2].append(it.pid)
    findings = [_finding(ctx, it, rf, pids) for (_, _, _), (it, rf, pids) in groups.items()]
    if not findings and not passed:
        return Outcome("unverified", f"no changed point is served by a recipe of the checkout ({unmatched} point(s))")
    return status_of(findings, f"{passed} changed point(s) run on hardware their recipe marks verified")


def _finding(ctx: ReviewContext, it: Item, rf: RecipeFinding, pids: list[str]) -> Finding:
    place = ctx.head.places[it.key]
    locs = [Location(path=place.file, line=place.runner_line)]
    if rf.file and rf.line:
        locs.append(Location(path=upstream_path(ctx, rf.file, it.launch), line=rf.line, role="related"))
    repo = it.repo if not isinstance(it.repo, str) else None
    hw = str(rf.evidence.get("key_path", "")).rpartition(".")[2]
    sev: Severity = "warning" if rf.severity == "warning" else "note"
    where = f"{rf.file}:{rf.line}" if rf.line else str(rf.file)
    return finding("recipe-hardware", sev, f"{it.key}/{hw}", rf.message,
                   f"{rf.message} ({where}, {rf.evidence.get('key_path')})",
                   locations=locs, points=[ctx.head_point(p).exp_name for p in pids],
                   evidence={**rf.evidence, "file": rf.file, "line": rf.line, "link_state": it.target.label,
                             "recipe_commit": repo[0].commit if repo else None}, template=sev)
