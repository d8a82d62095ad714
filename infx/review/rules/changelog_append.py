"""``changelog-append``: infx's changelog gate (append-only history, resolvable keys, a matrix that
generates) on base..head, with the byte rules split as InferenceX documents them: an entry inserted
before history or a changed historical byte is an error; blank-line layout is a warning with its fix."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from infx.diagnostics import Diagnostic, InfxError
from infx.review.models import Finding, Location, Severity, finding
from infx.review.rules import Outcome, RuleInfo, status_of

if TYPE_CHECKING:
    from infx.review.context import ReviewContext
    from infx.review.side import EntryPlace

RULE = RuleInfo("changelog-append", "perf-changelog.yaml only grows at its end",
                "infx's changelog gate plus the byte rules: head[:len(base)] == base, no deleted or edited history "
                "(errors); one empty line before each new entry and no trailing blank line (warnings).", "error")


def _find(d: Diagnostic, severity: Severity, rel: str, n: int) -> Finding:
    line = d.line or 1
    msg = d.message
    return finding("changelog-append", severity, f"{rel}#{n}", msg.split(";")[0], msg,
                   locations=[Location(path=d.file or rel, line=line)], evidence={"diagnostic": str(d)},
                   template=msg.split(":")[0] + msg.split(";")[0][-40:])


def check(ctx: ReviewContext) -> Outcome:
    from infx.changelog.gate import GateOptions, GateReport, build_matrix, check_change
    from infx.changelog.history import PullRequestContext, layout_warnings

    rel = ctx.head.changelog_rel()
    head = ctx.head.file_bytes(rel)
    base = ctx.base.file_bytes(rel) if ctx.base.ws is not None else None
    if head == base:
        if ctx.changed or ctx.removed:
            key = (ctx.changed or ctx.removed)[0].key
            place = ctx.head.places.get(key)
            loc = [Location(path=place.file, line=place.key_line)] if place else [Location(path=rel, line=1)]
            f = finding("changelog-append", "error", "missing-entry",
                        f"{len(ctx.changed_keys())} catalog entr(ies) changed but {rel} has no new entry",
                        f"the catalog changes {', '.join(ctx.changed_keys()[:5])} but {rel} is unchanged; append an "
                        "entry naming the changed config keys", locations=loc, template="missing entry")
            return status_of([f], "")
        return Outcome("n/a", "neither the catalog nor the changelog changed")
    prefix = ctx.head.prefix
    opts = GateOptions(repo=ctx.head.top, base_ref=ctx.base.sha, head_ref=ctx.head.sha,
                       changelog_file=prefix + rel,
                       config_files=[prefix + f.file for f in _config_files(ctx)],
                       runner_config=prefix + (ctx.head.rel(ctx.head.ws.runner_config if ctx.head.ws else None)
                                               or "configs/runners.yaml"),
                       pr=PullRequestContext(number=ctx.pr.number))
    findings: list[Finding] = []
    try:  # run_gate's steps, keeping both changelogs for the layout warnings
        base_log, head_log, change = check_change(opts)
        t0 = time.perf_counter()
        report = GateReport(changelog_file=opts.changelog_file, change=change,
                            matrix=build_matrix(opts, head_log, change), seconds=time.perf_counter() - t0)
    except InfxError as exc:
        for n, d in enumerate(exc.diagnostics):
            findings.append(_find(_strip(d, prefix), "error", rel, n))
        return status_of(findings, "")
    for n, d in enumerate(layout_warnings(base_log, head_log, change)):
        findings.append(_find(_strip(d, prefix), "warning", rel, n))
    summary = re.sub(r"; [0-9.]+ s\)$", ")", report.summary().replace(f"Validated {prefix + rel}: ", ""))
    return status_of(findings, summary)  # no timing: the same input gives byte-identical output


def _strip(d: Diagnostic, prefix: str) -> Diagnostic:
    f = d.file[len(prefix):] if d.file and prefix and d.file.startswith(prefix) else d.file
    return Diagnostic(d.message, f, d.line, d.col, d.path, d.severity)


def _config_files(ctx: ReviewContext) -> list[EntryPlace]:
    seen: dict[str, EntryPlace] = {}
    for place in ctx.head.places.values():
        seen.setdefault(place.file, place)
    return list(seen.values())
