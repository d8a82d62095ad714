"""The report written out: text, JSON (``infx.review/1``), a Markdown PR comment, GitHub workflow
annotations and SARIF 2.1.0. Every format is a pure function of the report, so the same input gives
byte-identical output."""

from __future__ import annotations

import json
from typing import Any

from infx.review.models import RULE_IDS, Finding, ReviewReport

COMMENT_LIMIT = 65_536  # GitHub: "Body is too long (maximum is 65536 characters)"
ANNOTATIONS_PER_KIND = 10  # GitHub shows at most 10 errors and 10 warnings per step
TOOL_VERSION = "1"


def render(report: ReviewReport, fmt: str) -> str:
    return {"text": text, "json": as_json, "markdown": markdown, "github": github, "sarif": sarif}[fmt](report)


# ---- text


def _where(f: Finding) -> str:
    loc = f.primary
    return f"{loc.path}:{loc.line}: " if loc else ""


def text(report: ReviewReport) -> str:
    lines = []
    if report.base.problem:
        lines.append(f"warning: the base ({report.base.sha[:12]}) could not be read, every head point is "
                     f"reviewed as new: {report.base.problem}")
    for f in report.findings:
        pts = f" [{len(f.points)} point(s)]" if f.points else ""
        lines.append(f"{_where(f)}{f.severity}: [{f.rule}] {f.title}{pts}")
    for r in report.rules:
        lines.append(f"{r.id}: {r.status.upper()} - {r.reason}")
    s = report.summary
    p = s.points
    lines.append(f"infx review {report.base.sha[:7]}..{report.head.sha[:7]}: {report.verdict} "
                 f"({s.errors} error(s), {s.warnings} warning(s), {s.notes} note(s); points: {p.added} added, "
                 f"{p.changed} changed, {p.removed} removed, {p.unchanged} unchanged)")
    return "\n".join(lines) + "\n"


def as_json(report: ReviewReport) -> str:
    return json.dumps(report.to_json(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def _full(f: Finding) -> str:
    """Title and message as one text, without repeating a message that already starts with the title."""
    return f.message if f.message.startswith(f.title) else f"{f.title}: {f.message}"


# ---- Markdown PR comment

_ICON = {"pass": "✅", "warn": "⚠️", "fail": "❌", "n/a": "➖", "unverified": "❔"}


def marker(report: ReviewReport) -> str:
    return f"<!-- infx-review sha={report.head.sha} -->"


def _link(report: ReviewReport, f: Finding) -> str:
    loc = f.primary
    if loc is None:
        return ""
    if report.repository:
        return f" ([{loc.path}#L{loc.line}](https://github.com/{report.repository}/blob/{report.head.sha}/" \
               f"{loc.path}#L{loc.line}))"
    return f" ({loc.path}#L{loc.line})"


def _md_escape(s: str) -> str:
    return s.replace("<", "&lt;").replace(">", "&gt;")


def _details(f: Finding) -> str:
    body = json.dumps(f.evidence, indent=2, sort_keys=True, ensure_ascii=False)
    pts = ("\n\npoints: " + ", ".join(f"`{p}`" for p in f.points)) if f.points else ""
    return (f"<details><summary>{f.rule}: {_md_escape(f.title)}</summary>\n\n{_md_escape(f.message)}{pts}\n\n"
            f"```json\n{body}\n```\n</details>\n")


def markdown(report: ReviewReport, limit: int = COMMENT_LIMIT) -> str:
    s = report.summary
    icon = "❌" if s.errors else "⚠️" if s.warnings else "✅"
    head = [marker(report),
            f"## {icon} infx review: {s.errors} blocking, {s.warnings} warnings "
            f"(base {report.base.sha[:7]} → head {report.head.sha[:7]})", ""]
    if report.base.problem:
        head.append(f"⚠️ the base could not be read; every head point is reviewed as new: "
                    f"{_md_escape(report.base.problem)}")
        head.append("")
    by_id = {f.id: f for f in report.findings}
    for r in sorted(report.rules, key=lambda r: RULE_IDS.index(r.id) if r.id in RULE_IDS else 99):
        first = by_id.get(r.findings[0]) if r.findings else None
        where = _link(report, first) if first and r.status in ("fail", "warn") else ""
        head.append(f"{_ICON[r.status]} {r.id}: {r.status.upper()} — {_md_escape(r.reason)}{where}  ")
    p = s.points
    head += ["", f"points: {p.added} added, {p.changed} changed, {p.removed} removed, {p.unchanged} unchanged", ""]
    top = "\n".join(head) + "\n"
    blocks = [_details(f) for f in report.findings]
    out = top
    shown = 0
    for b in blocks:
        if len(out) + len(b) + 400 > limit:
            break
        out += b
        shown += 1
    if shown < len(blocks):
        rest = report.findings[shown:]
        tail = f"\n{len(rest)} finding(s) only listed (evidence left out to stay under {limit:,} characters):\n"
        listed = 0
        for f in rest:
            line = f"- `{f.id}` ({f.severity})\n"
            if len(out) + len(tail) + len(line) + 120 > limit:
                break
            tail += line
            listed += 1
        if listed < len(rest):
            tail += f"- … and {len(rest) - listed} more (see the JSON or SARIF artifact)\n"
        out += tail
    return out


# ---- GitHub annotations


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github(report: ReviewReport) -> str:
    lines = []
    left = 0
    for sev, cmd in (("error", "error"), ("warning", "warning"), ("note", "notice")):
        fs = [f for f in report.findings if f.severity == sev]
        cap = ANNOTATIONS_PER_KIND
        for f in fs[:cap]:
            props = []
            loc = f.primary
            if loc:
                props += [f"file={escape_property(loc.path)}", f"line={loc.line}",
                          f"endLine={loc.end_line or loc.line}"]
            props.append(f"title={escape_property(f.rule)}")
            lines.append(f"::{cmd} {','.join(props)}::{escape_data(_full(f))}")
        left += max(0, len(fs) - cap)
    if left:
        lines.append(f"::notice::{left} more finding(s) left out (GitHub shows at most {ANNOTATIONS_PER_KIND} "
                     "per kind); see the SARIF or JSON artifact")
    return "\n".join(lines) + ("\n" if lines else "")


# ---- SARIF 2.1.0

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _sarif_loc(path: str, line: int, end: int | None) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"},
                                 "region": {"startLine": line, "endLine": end or line}}}


def sarif(report: ReviewReport) -> str:
    from infx.review.rules import modules

    infos = [m.RULE for m in modules()]
    rules = [{"id": i.id, "name": i.id, "shortDescription": {"text": i.short}, "fullDescription": {"text": i.full},
              "defaultConfiguration": {"level": i.level}} for i in infos]
    index = {i.id: n for n, i in enumerate(infos)}
    results = []
    for f in report.findings:
        loc = f.primary
        res: dict[str, Any] = {
            "ruleId": f.rule, "ruleIndex": index[f.rule], "level": f.severity,
            "message": {"text": _full(f)},
            "locations": [_sarif_loc(loc.path, loc.line, loc.end_line)] if loc else [_sarif_loc("perf-changelog.yaml",
                                                                                                1, 1)],
            "partialFingerprints": {"infxReview/v1": f.fingerprint},
        }
        related = [x for x in f.locations[1:]]
        if related:
            res["relatedLocations"] = [dict(_sarif_loc(x.path, x.line, x.end_line), id=n)
                                       for n, x in enumerate(related)]
        results.append(res)
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "infx-review", "version": TOOL_VERSION, "informationUri":
                            "https://github.com/SemiAnalysisAI/InferenceX", "rules": rules}},
        "automationDetails": {"id": f"infx-review/{report.head.sha}"},
        "results": results,
    }]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
