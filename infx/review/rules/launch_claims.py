"""``launch-claims``: every engine flag the new changelog entries quote (``--flag`` with an optional
quoted value) must be launched, with an equal value, by some changed point. A changelog that says
"host memory" while no launch carries the flag is how the seed's OOM slipped through."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from infx.review.models import Finding, Location, finding
from infx.review.rules import Outcome, RuleInfo, status_of

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("launch-claims", "Flags the changelog quotes are launched by a changed point",
                "Each --flag (with its quoted value) in the new changelog entries must occur with an equal value "
                "in at least one changed point's argv.", "warning")

#: A word before the flag that claims it is NOT launched ("drop --max-num-seqs").
_REMOVAL = re.compile(r"(?:\b(?:drop|drops|dropped|remove|removes|removed|without|no)\s+)$", re.I)
_FLAG = re.compile(r"""(?<![\w-])(--[A-Za-z][\w.-]*)(?:[ =]+(?:'([^']*)'|"([^"]*)"))?""")


def new_entry_text(ctx: ReviewContext) -> tuple[str, int]:
    """The appended changelog text at head (lines after the base's), and the line number it starts at."""
    rel = ctx.head.changelog_rel()
    head = ctx.head.file_bytes(rel) or b""
    base = ctx.base.file_bytes(ctx.base.changelog_rel()) or b"" if ctx.base.ws else b""
    if base and head.startswith(base):
        start = base.count(b"\n") + 1
        return head[len(base):].decode("utf-8", "replace"), start
    from infx.changelog.parse import entry_start_lines

    starts = entry_start_lines(head)
    nbase = len(entry_start_lines(base))
    if len(starts) > nbase:
        lines = head.decode("utf-8", "replace").splitlines(keepends=True)
        at = starts[nbase] - 1
        return "".join(lines[at:]), at + 1
    return "", 1


def _norm_flag(f: str) -> str:
    return "--" + f[2:].replace("_", "-")


def _norm_value(v: str) -> Any:
    try:
        return json.loads(v)
    except ValueError:
        return v.strip()


def _argv_values(argv: list[str], flag: str) -> list[str | None]:
    out: list[str | None] = []
    for i, a in enumerate(argv):
        name, eq, val = a.partition("=")
        if not a.startswith("--") or _norm_flag(name) != flag:
            continue
        if eq:
            out.append(val)
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out.append(argv[i + 1])
        else:
            out.append(None)
    return out


def check(ctx: ReviewContext) -> Outcome:
    text, start = new_entry_text(ctx)
    if not text.strip():
        return Outcome("n/a", "no new changelog entry")
    rel = ctx.head.changelog_rel()
    argvs = []
    for c in ctx.changed:
        la = ctx.head.launch(c.head_pid) if c.head_pid else None
        if la is not None and not isinstance(la, str):
            argvs.extend([la.argv] if hasattr(la, "argv") else [r.argv for r in getattr(la, "roles", [])])
    claims = 0
    findings: list[Finding] = []
    for n, line in enumerate(text.splitlines(), start):
        plain = line.replace('\\"', '"')
        for m in _FLAG.finditer(plain):
            flag = _norm_flag(m.group(1))
            raw = m.group(2) if m.group(2) is not None else m.group(3)
            claims += 1
            if _REMOVAL.search(plain[:m.start()]):  # a claimed removal: no changed point may launch it
                still = [v for argv in argvs for v in _argv_values(argv, flag)]
                if still:
                    title = f"changelog says `{flag}` is dropped but {len(still)} changed launch(es) still pass it"
                    findings.append(finding("launch-claims", "warning", f"{flag}=dropped", title, title,
                                            locations=[Location(path=rel, line=n)],
                                            evidence={"flag": flag, "claim": "removed"},
                                            template=f"dropped {flag}"))
                continue
            want = _norm_value(raw) if raw is not None else None
            ok = any(v is not None and (want is None or _norm_value(v) == want) or (v is None and want is None)
                     for argv in argvs for v in _argv_values(argv, flag))
            if ok:
                continue
            shown = f"{flag} '{raw}'" if raw is not None else flag
            title = f"changelog claims `{shown}` but no changed point launches it"
            findings.append(finding("launch-claims", "warning", f"{flag}={raw}", title,
                                    f"{title} ({len(argvs)} changed launch(es) checked)",
                                    locations=[Location(path=rel, line=n)],
                                    evidence={"flag": flag, "value": raw, "changed_launches": len(argvs),
                                              "launched_values": sorted({str(v) for argv in argvs
                                                                          for v in _argv_values(argv, flag)})},
                                    template=f"claims {flag}"))
    if not claims:
        return Outcome("n/a", "the new changelog entries quote no engine flag")
    return status_of(findings, f"{claims} quoted flag(s), each launched by a changed point")
