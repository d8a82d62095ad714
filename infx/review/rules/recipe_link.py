"""``recipe-link``: a changed single-node vLLM/SGLang point needs a link to its upstream recipe, and the
link must be merged (InferenceX's sign-off check 3, done here without an LLM). Links are recognised by
pattern from the sign-off's "Additional detail section", the PR body and comments, and the workspace's
``recipe-links.yaml``; merge state comes from ``--link-state`` (offline; without it the link is
unverified)."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from infx.diagnostics import Diagnostic, InfxError
from infx.review.models import Finding, Location, Severity, finding
from infx.review.rules import Outcome, RuleInfo, status_of

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("recipe-link", "Changed single-node vLLM/SGLang points link a merged upstream recipe",
                "A link to a merged vllm-project/recipes PR, an SGLang cookbook PR, or a published recipes page, in "
                "the sign-off (or, under the infx policy, the PR body, comments or recipe-links.yaml).", "error")

FRAMEWORKS = ("vllm", "sglang")
MULTI = ("dynamo-trt", "dynamo-sglang", "sglang-disagg", "dynamo-vllm")

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("vllm-recipes-pr", re.compile(r"https://github\.com/vllm-project/recipes/pull/(\d+)")),
    ("vllm-recipes-pr", re.compile(r"(?<![\w/.-])vllm-project/recipes#(\d+)")),
    ("vllm-recipes-file", re.compile(r"https://github\.com/vllm-project/recipes/(?:blob|tree)/([^/\s]+)/models/"
                                     r"[\w.-]+/[\w.-]+\.yaml")),
    ("vllm-recipes-commit", re.compile(r"https://github\.com/vllm-project/recipes/commit/([0-9a-f]{7,40})")),
    ("vllm-recipes-page", re.compile(r"https://recipes\.vllm\.ai/[\w.-]+/[\w.-]+(?:\?[^\s)>\]]*)?")),
    ("sglang-pr", re.compile(r"https://github\.com/sgl-project/sglang/pull/(\d+)")),
    ("sglang-page", re.compile(r"https://(?:docs\.sglang\.io|cookbook\.sglang\.io|lmsysorg\.mintlify\.app)/"
                               r"[^\s)>\]]*")),
]
PAGES = ("vllm-recipes-page", "sglang-page")


@dataclass(frozen=True)
class Link:
    kind: str
    url: str
    source: str  # signoff | body | comment | links-file


def recognise(text: str, source: str) -> list[Link]:
    """Every recipe link in ``text``, in order of appearance (deduplicated)."""
    found: list[tuple[int, Link]] = []
    for kind, pat in _PATTERNS:
        for m in pat.finditer(text):
            url = m.group(0).rstrip(".,;:!?'\"")  # sentence punctuation is not part of a link
            if kind == "vllm-recipes-pr" and not url.startswith("http"):
                url = f"https://github.com/vllm-project/recipes/pull/{m.group(1)}"
            found.append((m.start(), Link(kind, url, source)))
    seen: set[str] = set()
    out = []
    for _, link in sorted(found, key=lambda x: x[0]):
        if link.url not in seen:
            seen.add(link.url)
            out.append(link)
    return out


def signoff_section(text: str) -> str:
    """The text after ``### Additional detail section:`` up to ``Signed:`` (the checklist template)."""
    m = re.search(r"###\s*Additional detail section:?(.*?)(?:^\s*\**Signed:|\Z)", text, re.S | re.M)
    return m.group(1) if m else ""


def _links(ctx: ReviewContext, key: str) -> list[Link]:
    links = recognise(signoff_section(ctx.pr.signoff or ""), "signoff")
    links += recognise(ctx.pr.body, "body")
    for c in ctx.pr.comments:
        links += recognise(c, "comment")
    links += _links_file(ctx, key)
    return links


def _links_file(ctx: ReviewContext, key: str) -> list[Link]:
    data = ctx.head.file_bytes("recipe-links.yaml")
    if data is None:
        return []
    from infx.yamlsource import parse_yaml

    src = parse_yaml(data, "recipe-links.yaml")
    if not isinstance(src.data, list):
        raise InfxError(Diagnostic("recipe-links.yaml must be a list of {config-key, link} items",
                                   "recipe-links.yaml", 1, 1))
    out = []
    for i, item in enumerate(src.data):
        if not isinstance(item, dict) or not isinstance(item.get("config-key"), str) or \
                not isinstance(item.get("link"), str):
            raise InfxError(src.diag((i,), "each item needs 'config-key' and 'link' strings"))
        if fnmatch.fnmatchcase(key, item["config-key"]):
            out += recognise(item["link"], "links-file")
    return out


def _state(ctx: ReviewContext) -> dict[str, dict[str, Any]]:
    if ctx.request.link_state is None:
        return {}
    from infx import jsonio

    data = jsonio.load(ctx.request.link_state, what="--link-state file")
    if not isinstance(data, list) or not all(isinstance(x, dict) and isinstance(x.get("url"), str) for x in data):
        raise InfxError(Diagnostic("--link-state must be a JSON list of objects with 'url'",
                                   str(ctx.request.link_state), 1, 1))
    return {x["url"].rstrip("/"): x for x in data}


def _applies(ctx: ReviewContext) -> dict[str, list[str]]:
    """config key -> changed single-node vLLM/SGLang points."""
    out: dict[str, list[str]] = {}
    for c in ctx.changed:
        if c.head_pid is None:
            continue
        p = ctx.head_point(c.head_pid)
        if p.multinode or p.disagg or p.framework in MULTI or p.framework not in FRAMEWORKS:
            continue
        out.setdefault(c.key, []).append(c.head_pid)
    return out


def check(ctx: ReviewContext) -> Outcome:
    keys = _applies(ctx)
    if not ctx.changed:
        return Outcome("n/a", "no changed point")
    if not keys:
        return Outcome("n/a", "disaggregated/multi-node submission (no single-node vLLM/SGLang change)")
    policy = ctx.request.link_policy
    states = _state(ctx)
    findings: list[Finding] = []
    for key, pids in sorted(keys.items()):
        place = ctx.head.places[key]
        loc = [Location(path=place.file, line=place.key_line)]
        names = [ctx.head_point(p).exp_name for p in pids]
        links = _links(ctx, key)
        if not links:
            t = f"no upstream recipe link for {key} ({len(pids)} changed single-node point(s))"
            findings.append(finding("recipe-link", "error", f"{key}/missing", t,
                                    f"{t}: link a merged vllm-project/recipes PR or a published recipes page in the "
                                    "sign-off's Additional detail section", locations=loc, points=names,
                                    evidence={"scope": "pr", "sources_checked": ["signoff", "body", "comments",
                                                                                 "recipe-links.yaml"]},
                                    template="missing"))
            continue
        link = links[0]
        ev: dict[str, Any] = {"kind": link.kind, "url": link.url, "source": link.source, "policy": policy}
        if policy == "inferencex" and link.source != "signoff":
            t = "link is not in the sign-off's Additional detail section"
            findings.append(finding("recipe-link", "error", f"{key}/placement", t, f"{t} ({link.url}, found in the "
                                    f"{link.source})", locations=loc, points=names, evidence=ev, template=t))
            continue
        if link.kind == "vllm-recipes-commit":
            t = "bare commit does not satisfy the rule" if policy == "inferencex" else \
                "a bare commit link: merge state not verifiable"
            findings.append(finding("recipe-link", "error" if policy == "inferencex" else "warning",
                                    f"{key}/commit", t, f"{t} ({link.url})", locations=loc, points=names, evidence=ev,
                                    template="commit"))
            continue
        if link.kind in PAGES:
            t = f"{key}: published recipe page ({link.url})"
            findings.append(finding("recipe-link", "note", f"{key}/ok", t, t + "; counts as merged documentation",
                                    locations=loc, evidence=dict(ev, state="published"), template="ok"))
            continue
        st = states.get(link.url.rstrip("/"))
        if st is None:
            sev: Severity = "error" if policy == "inferencex" else "warning"
            t = f"link {link.url} unverified (no merge state; give --link-state)"
            findings.append(finding("recipe-link", sev, f"{key}/unverified", t, t, locations=loc, points=names,
                                    evidence=dict(ev, state="unverified"), template="unverified"))
            continue
        merged = st.get("state") == "MERGED" and st.get("mergedAt")
        commit = (st.get("mergeCommit") or {}).get("oid") if isinstance(st.get("mergeCommit"), dict) else None
        ev.update(state=st.get("state"), mergedAt=st.get("mergedAt"), merge_commit=commit)
        if not merged:
            t = f"upstream PR is {str(st.get('state', 'unknown')).lower()} (not merged): {link.url}"
            findings.append(finding("recipe-link", "error", f"{key}/unmerged", t, t, locations=loc, points=names,
                                    evidence=ev, template="unmerged"))
            continue
        t = f"{key}: {link.url} merged ({commit or 'merge commit unknown'})"
        findings.append(finding("recipe-link", "note", f"{key}/ok", t, t, locations=loc, evidence=ev, template="ok"))
    return status_of(findings, f"{len(keys)} entr(ies) link a merged recipe")
