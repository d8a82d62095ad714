"""``memory-fit``: the preflight memory verdict of every changed point, read from its rendered launch,
with the argv fact that decides it (e.g. where an offloadable table lives)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infx.review.models import Location, finding
from infx.review.rules import Outcome, RuleInfo, status_of

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("memory-fit", "Every changed point fits in GPU memory at engine start",
                "The preflight memory model on the rendered launch of each changed point: weights, tables "
                "(where the argv puts them), buffers, graphs and KV against the engine's budget.", "error")


def _gb(b: int) -> str:
    return f"{b / 1e9:.1f} GB"


def check(ctx: ReviewContext) -> Outcome:
    if not ctx.changed:
        return Outcome("n/a", "no changed point")
    verdicts = ctx.verdicts()
    findings = []
    checked = 0
    for pids in ctx.changed_arms().values():
        key, point = ctx.head.points[pids[0]]
        launch = ctx.head.launch(pids[0])
        related = ctx.head.recipe_file_of(launch) if not isinstance(launch, str) else None
        locs = [Location(path=ctx.head_file(key), line=ctx.row_line(pids[0]))]
        if related:
            locs.append(Location(path=related, line=1, role="related"))
        fails, warns = [], []
        report = None
        for pid in pids:
            v = verdicts.get(pid)
            m = v.memory if v is not None else None
            if m is None:
                continue
            checked += 1
            if m.status == "fail":
                fails.append(pid)
                report = report or m
            elif m.status == "warn":
                warns.append(pid)
                report = report or m
        names = [ctx.head_point(p).exp_name for p in (fails or warns)]
        subject = f"{key}/tp={point.tp}" + (f"/ep={point.ep}" if point.ep != 1 else "")
        if not (fails or warns) or report is None:
            continue
        tables = [{"component": ln.component, "bytes": ln.bytes, "where": ln.where, "note": ln.note}
                  for ln in report.gpu + report.host]
        facts = [ln.note for ln in report.gpu + report.host if ln.note and ("--" in ln.note)]
        evidence = {"needed_bytes": report.needed_bytes, "budget_bytes": report.budget_bytes,
                    "margin_bytes": report.margin_bytes, "breakdown": tables, "argv_facts": facts,
                    "problems": report.problems, "settings": report.settings}
        if fails:
            if report.needed_bytes > report.budget_bytes:
                title = (f"TP={point.tp} arm does not fit: {_gb(report.needed_bytes)}/GPU needed, "
                         f"{_gb(report.budget_bytes)} budget")
            else:  # fits the budget, fails on something else (e.g. a KV pool smaller than one sequence)
                title = f"TP={point.tp} arm does not start: {(report.problems or ['memory check failed'])[0]}"
            msg = (f"{len(fails)} point(s) of {key} exceed the per-GPU budget at engine start (margin "
                   f"{_gb(report.margin_bytes)}). " + " ".join(facts[:2]))
            findings.append(finding("memory-fit", "error", subject, title, msg.strip(), locations=locs,
                                    points=names, evidence=evidence, template="does not fit"))
        else:
            title = f"TP={point.tp} arm: memory unverifiable or tight: {'; '.join(report.problems[:1])}"
            findings.append(finding("memory-fit", "warning", subject, title, title, locations=locs, points=names,
                                    evidence=evidence, template="unverifiable"))
    if not checked and not findings:
        return Outcome("unverified", "no changed point has a memory verdict (multi-node, or no launch)")
    return status_of(findings, f"{checked} changed point(s) fit")
