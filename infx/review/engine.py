"""``run_review``: read both sides from git, compute the changed set, run every rule, build the report."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import cast

from infx.diagnostics import Diagnostic, InfxError
from infx.review.context import PullRequest, ReviewContext, compute_changes
from infx.review.gitread import repository, resolve_commit, unpack
from infx.review.models import (
    Finding,
    PointCounts,
    ReviewReport,
    ReviewRequest,
    RuleResult,
    SideRef,
    Summary,
    Verdict,
)
from infx.review.rules import Outcome, RuleModule, modules
from infx.review.side import Side, load_side


def run_review(req: ReviewRequest, workspace_root: Path) -> ReviewReport:
    top, rel = repository(workspace_root)
    base_sha = resolve_commit(top, req.base, "--base")
    head_sha = resolve_commit(top, req.head, "--head")
    pr = read_pull_request(req)
    with tempfile.TemporaryDirectory(prefix="infx-review-") as tmp:
        head = load_side("head", req.head, head_sha, unpack(top, head_sha, rel, Path(tmp) / "head"), required=True)
        base = load_side("base", req.base, base_sha, unpack(top, base_sha, rel, Path(tmp) / "base"),
                         required=False)
        for side in (head, base):
            side.top, side.prefix = top, (rel + "/" if rel else "")
        _check_changelog(head)
        ctx = ReviewContext(request=req, base=base, head=head, pr=pr, workspace_root=workspace_root)
        ctx.changes = compute_changes(base, head)
        rules = [cast(RuleModule, m) for m in modules()]
        return build_report(ctx, [(m.RULE.id, _run(m, ctx)) for m in rules])


def _check_changelog(head: Side) -> None:
    """A head changelog that does not parse is bad input (one line naming file:line, exit 2)."""
    from infx.changelog.parse import parse_changelog

    rel = head.changelog_rel()
    data = head.file_bytes(rel)
    if data is None:
        return
    try:
        parse_changelog(data, rel)
    except InfxError as exc:
        raise InfxError([Diagnostic(f"{d.message} (head {head.sha[:12]})", d.file, d.line, d.col, d.path)
                         for d in exc.diagnostics[:1]]) from None


def _run(module: RuleModule, ctx: ReviewContext) -> Outcome:
    return module.check(ctx)


def build_report(ctx: ReviewContext, outcomes: list[tuple[str, Outcome]]) -> ReviewReport:
    findings: list[Finding] = []
    rules = []
    for rid, out in outcomes:
        ordered = sorted(out.findings, key=Finding.sort_key)
        findings.extend(ordered)
        rules.append(RuleResult(id=rid, status=out.status, reason=out.reason, findings=[f.id for f in ordered]))
    findings.sort(key=Finding.sort_key)
    counts = {k: sum(1 for c in ctx.changes if c.kind == k) for k in ("added", "changed", "removed", "unchanged")}
    summary = Summary(errors=sum(f.severity == "error" for f in findings),
                      warnings=sum(f.severity == "warning" for f in findings),
                      notes=sum(f.severity == "note" for f in findings), points=PointCounts(**counts))
    verdict: Verdict = "fail" if summary.errors else "warn" if summary.warnings else "pass"
    return ReviewReport(base=_ref(ctx.base), head=_ref(ctx.head), verdict=verdict, summary=summary, rules=rules,
                        findings=findings, repository=ctx.pr.repository or ctx.request.repository)


def _ref(side: Side) -> SideRef:
    return SideRef(ref=side.ref, sha=side.sha, readable=side.problem is None, problem=side.problem)


def read_pull_request(req: ReviewRequest) -> PullRequest:
    """Labels, number, body and comments from ``--event`` (a GitHub event JSON), then the explicit options."""
    pr = PullRequest(repository=req.repository)
    if req.event is not None:
        from infx import jsonio

        ev = jsonio.load(req.event, what="GitHub event file")
        p = ev.get("pull_request") if isinstance(ev, dict) else None
        if not isinstance(p, dict):
            raise InfxError(Diagnostic("the event has no 'pull_request' object", str(req.event), 1, 1,
                                       ("pull_request",)))
        num = p.get("number")
        pr.number = num if isinstance(num, int) else None
        body = p.get("body")
        pr.body = body if isinstance(body, str) else ""
        pr.labels = [lb["name"] for lb in p.get("labels") or [] if isinstance(lb, dict) and isinstance(lb.get("name"),
                                                                                                       str)]
        comments = ev.get("comments") if isinstance(ev, dict) else None
        pr.comments = [c.get("body", "") for c in comments or [] if isinstance(c, dict)
                       and isinstance(c.get("body"), str)]
        repo = (ev.get("repository") or {}).get("full_name") if isinstance(ev.get("repository"), dict) else None
        pr.repository = pr.repository or (repo if isinstance(repo, str) else None)
    if req.labels is not None:
        pr.labels = list(req.labels)
    if req.body is not None:
        pr.body = _text(req.body, "--body")
    if req.signoff is not None:
        pr.signoff = _text(req.signoff, "--signoff")
    return pr


def _text(path: Path, option: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InfxError(Diagnostic(f"{option}: cannot read {path}: {exc.strerror}", str(path))) from None
    if len(data) > 1 << 20:
        raise InfxError(Diagnostic(f"{option}: {path} is larger than 1 MiB", str(path)))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InfxError(Diagnostic(f"{option}: {path} is not UTF-8 (byte {exc.start})", str(path))) from None
