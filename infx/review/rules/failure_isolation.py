"""``failure-isolation``: the sweep labels (fail-fast or not), the job family of each changed point
(InferenceX's run-sweep families), and the points a predicted failure would cancel. Fail-fast cancels a
whole family when one job fails, so it couples arms that share no engine launch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infx.matrix.point import Point
from infx.review.models import Finding, Location, finding
from infx.review.rules import Outcome, RuleInfo, status_of
from infx.review.side import arm_of

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("failure-isolation", "A predicted failure cancels only its own launch",
                "With a fail-fast sweep label, the first failing job cancels its whole job family; the rule names "
                "the family, the points a predicted failure (memory-fit error, missing image, unrenderable launch) "
                "would cancel, and which of them are new.", "error")

#: run-sweep.yml's primary labels: (fail-fast, canary)
PRIMARY_LABELS = {"sweep-enabled": False, "full-sweep-fail-fast": True, "full-sweep-enabled": False,
                  "full-sweep-fail-fast-no-canary": True, "non-canary-full-sweep-enabled": False}


def family(point: Point) -> str:
    """The job family (matrix job name prefix) a point runs in."""
    node = "multi-node " if point.multinode else ""
    if point.is_agentic:
        return f"{node}agentic /" if node else "agentic /"
    seq = {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}.get((point.isl or 0, point.osl or 0),
                                                           f"{point.isl}/{point.osl}")
    return f"{'multi-node' if point.multinode else 'single-node'} {seq} /"


def check(ctx: ReviewContext) -> Outcome:
    if not ctx.changed:
        return Outcome("n/a", "no changed point")
    primary = [lb for lb in ctx.pr.labels if lb in PRIMARY_LABELS]
    if not primary:
        return Outcome("n/a", "no sweep label on the pull request (give --labels or --event)")
    if len(primary) > 1:
        key = ctx.changed[0].key
        f = finding("failure-isolation", "error", "labels", "PR has multiple conflicting sweep labels",
                    f"labels {', '.join(sorted(primary))}: run-sweep accepts exactly one primary label",
                    locations=[Location(path=ctx.head_file(key), line=ctx.head.places[key].key_line)],
                    evidence={"labels": sorted(primary)})
        return status_of([f], "")
    label = primary[0]
    if not PRIMARY_LABELS[label]:
        return Outcome("pass", f"label {label} is not fail-fast: a failure stays within its own job")
    predicted = _predicted_failures(ctx)
    changed_keys = sorted({c.key for c in ctx.changed})
    findings: list[Finding] = []
    for key in changed_keys:
        pids = [pid for pid, (k, _) in ctx.head.points.items() if k == key]
        fams: dict[str, list[str]] = {}
        for pid in pids:
            fams.setdefault(family(ctx.head_point(pid)), []).append(pid)
        for fam, members in sorted(fams.items()):
            arms = {arm_of(key, ctx.head_point(p)) for p in members}
            if len(arms) < 2:
                continue
            new = {c.head_pid for c in ctx.changed if c.kind == "added"}
            failing = [p for p in members if p in predicted]
            loc = [Location(path=ctx.head_file(key), line=ctx.head.places[key].key_line)]
            evidence = {"label": label, "family": fam, "points": len(members),
                        "arms": sorted({_arm_label(ctx.head_point(p)) for p in members})}
            if failing:
                f_arms = sorted({_arm_label(ctx.head_point(p)) for p in failing})
                cancelled = [p for p in members if p not in failing]
                names = [ctx.head_point(p).exp_name for p in cancelled]
                new_ones = [ctx.head_point(p) for p in cancelled if p in new]
                new_txt = (", including the new " + " and ".join(f"conc {p.conc}" for p in new_ones[:4])
                           if new_ones else "")
                others = sorted({_arm_label(ctx.head_point(p)) for p in cancelled})
                title = (f"the predicted failure of the {'/'.join(f_arms)} arm cancels the {len(cancelled)} "
                         f"{'/'.join(others)} points{new_txt}") if cancelled else \
                    f"every point of family '{fam}' is predicted to fail (fail-fast cancels the rest on the first)"
                msg = (f"label {label} makes family '{fam}' ({len(members)} points, {len(arms)} arms) fail-fast: "
                       f"{title}. Why they fail: " + "; ".join(sorted({predicted[p] for p in failing}))[:400])
                findings.append(finding("failure-isolation", "error", f"{key}/{fam}", title, msg, locations=loc,
                                        points=names, evidence=dict(evidence, failing=[ctx.head_point(p).exp_name
                                                                                       for p in failing],
                                                                    new=[p.exp_name for p in new_ones]),
                                        template="fail-fast cancels"))
            else:
                title = f"fail-fast couples {len(arms)} arms in family '{fam}' ({len(members)} points)"
                findings.append(finding("failure-isolation", "warning", f"{key}/{fam}", title,
                                        f"{title} under label {label}; no failure is predicted, but any one failure "
                                        "would cancel the other arms' points", locations=loc, evidence=evidence,
                                        template="fail-fast couples"))
    return status_of(findings, f"label {label}: no family couples two arms")


def _arm_label(p: Point) -> str:
    if p.multinode and p.prefill and p.decode:
        return f"p{p.prefill.num_worker}x{p.prefill.tp} d{p.decode.num_worker}x{p.decode.tp}"
    ep = f" EP={p.ep}" if p.ep != 1 else ""
    return f"TP={p.tp}{ep}" + (f" {p.isl}/{p.osl}" if not p.is_agentic else "")


def _predicted_failures(ctx: ReviewContext) -> dict[str, str]:
    """Changed head points predicted to fail at start: a failing memory verdict, a launch that does not
    render, or (with --verify-images) an image tag the registry does not have."""
    out: dict[str, str] = {}
    for pid, v in ctx.verdicts().items():
        if v.memory is not None and v.memory.status == "fail":
            out[pid] = "memory-fit: " + "; ".join(v.memory.problems[:1])
    for c in ctx.changed:
        if c.head_pid and isinstance(ctx.head.launch(c.head_pid), str):
            out[c.head_pid] = "launch does not render"
    missing = ctx.missing_images()
    for c in ctx.changed:
        if c.head_pid and ctx.head_point(c.head_pid).image in missing:
            out[c.head_pid] = "image tag not found"
    return out
