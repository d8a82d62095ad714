"""``recipe-link``: a changed single-node vLLM/SGLang point needs a link to its upstream recipe, and the
link must be merged (InferenceX's sign-off check 3, done here without an LLM). Links are recognised by
:func:`infx.recipes.rules.parse_links` in the sign-off's "Additional detail section", the PR body and
comments, and the workspace's ``recipe-links.yaml``; merge state comes from ``--link-state`` (offline;
without it the link is unverified). With a recipes checkout, the linked recipe file is read at the commit
the link names (:func:`infx.recipes.rules.resolve_link`): a file absent there, or one that does not parse,
is an error."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING, Any

from infx.recipes.rules import resolve_link
from infx.review.models import Finding, Location, Severity, finding
from infx.review.rules import Outcome, RuleInfo, status_of
from infx.review.upstream import MULTI_ONLY, PAGES, FoundLink, Target, applicable, state, target

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("recipe-link", "Changed single-node vLLM/SGLang points link a merged upstream recipe",
                "A link to a merged vllm-project/recipes PR, an SGLang cookbook PR, or a published recipes page, in "
                "the sign-off (or, under the infx policy, the PR body, comments or recipe-links.yaml).", "error")


def check(ctx: ReviewContext) -> Outcome:
    keys = applicable(ctx)
    if not ctx.changed:
        return Outcome("n/a", "no changed point")
    if not keys:
        return Outcome("n/a", MULTI_ONLY)
    policy = ctx.request.link_policy
    findings: list[Finding] = []
    for key, pids in sorted(keys.items()):
        place = ctx.head.places[key]
        loc = [Location(path=place.file, line=place.key_line)]
        names = [ctx.head_point(p).exp_name for p in pids]
        t = target(ctx, key)
        if t.link is None:
            title = f"no upstream recipe link for {key} ({len(pids)} changed single-node point(s))"
            findings.append(finding("recipe-link", "error", f"{key}/missing", title,
                                    f"{title}: link a merged vllm-project/recipes PR or a published recipes page in "
                                    "the sign-off's Additional detail section", locations=loc, points=names,
                                    evidence={"scope": "pr", "sources_checked": ["signoff", "body", "comments",
                                                                                 "recipe-links.yaml"]},
                                    template="missing"))
            continue
        findings += _judge(ctx, key, pids, t, loc, names, policy)
    return status_of(findings, f"{len(keys)} entr(ies) link a merged recipe")


def _judge(ctx: ReviewContext, key: str, pids: list[str], t: Target, loc: list[Location], names: list[str],
           policy: str) -> list[Finding]:
    link = t.link
    assert link is not None
    ev: dict[str, Any] = {"kind": link.kind, "url": link.url, "source": link.source, "policy": policy}
    if link.link.pin.hardware or link.link.pin.variant or link.link.pin.strategy or link.link.pin.features:
        ev["pin"] = link.link.pin.model_dump(exclude_none=True)

    def one(sev: Severity, tag: str, title: str, message: str | None = None, template: str | None = None,
            **extra: Any) -> list[Finding]:
        return [finding("recipe-link", sev, f"{key}/{tag}", title, message or title, locations=loc,
                        points=names if sev != "note" else [], evidence={**ev, **extra}, template=template or tag)]

    if policy == "inferencex" and link.source != "signoff":
        title = "link is not in the sign-off's Additional detail section"
        return one("error", "placement", title, f"{title} ({link.url}, found in the {link.source})", title)
    if link.kind == "vllm-recipes-commit":
        title = "bare commit does not satisfy the rule" if policy == "inferencex" else \
            "a bare commit link: merge state not verifiable"
        return one("error" if policy == "inferencex" else "warning", "commit", title, f"{title} ({link.url})")
    state: dict[str, Any] = {}
    if link.kind in PAGES:
        state = {"state": "published"}
    elif link.kind == "vllm-recipes-file":
        on_default = _on_default_branch(ctx, t.commit)
        if on_default is None:
            sev: Severity = "error" if policy == "inferencex" else "warning"
            title = f"link {link.url} unverified (its ref cannot be checked without a recipes checkout)"
            return one(sev, "unverified", title, state="unverified")
        if not on_default:
            title = f"linked file's ref {t.commit} is not a commit on the recipes default branch"
            return one("error", "unmerged", title, template="file-unmerged", state="unmerged")
        state = {"state": "on default branch"}
    elif t.state is None:
        sev = "error" if policy == "inferencex" else "warning"
        title = f"link {link.url} unverified (no merge state; give --link-state)"
        return one(sev, "unverified", title, state="unverified")
    else:
        st = t.state
        mc = st.get("mergeCommit")
        commit = mc.get("oid") if isinstance(mc, dict) else None
        state = {"state": st.get("state"), "mergedAt": st.get("mergedAt"), "merge_commit": commit}
        if t.label != "merged":
            title = f"upstream PR is {str(st.get('state', 'unknown')).lower()} (not merged): {link.url}"
            return one("error", "unmerged", title, **state)
    recipe = _recipe_half(ctx, key, pids, t, link)
    if isinstance(recipe, str):
        return one("error", "recipe", f"{key}: {recipe}", template="recipe", **state)
    state.update(recipe)
    what = "published recipe page" if link.kind in PAGES else "merged"
    title = f"{key}: {link.url} {what}" + (f" ({state['merge_commit']})" if state.get("merge_commit") else "")
    return one("note", "ok", title, title + ("; counts as merged documentation" if link.kind in PAGES else ""),
               "ok", **state)


def _on_default_branch(ctx: ReviewContext, ref: str | None) -> bool | None:
    """Whether a linked file's ref is a commit on the checkout's default branch (None: no checkout)."""
    u = state(ctx)
    if u.checkout is None or ref is None or u.default_commit is None or ref.startswith("-"):
        return None
    r = subprocess.run(["git", "-C", str(u.checkout), "merge-base", "--is-ancestor", ref, u.default_commit],
                       capture_output=True, check=False)
    return r.returncode == 0


def _recipe_half(ctx: ReviewContext, key: str, pids: list[str], t: Target, link: FoundLink) -> dict[str, Any] | str:
    """The linked recipe file read at the link's commit: its path and commit, or why it cannot be read."""
    u = state(ctx)
    if u.checkout is None or t.manual:
        return {}
    model = ctx.head_point(pids[0]).model
    res = resolve_link(str(u.checkout), link.link, t.commit or u.default_commit, model=model)
    errors = [f for f in res.findings if f.severity == "error"]
    if errors:
        return errors[0].message
    return {"recipe_path": res.recipe_path, "recipe_commit": res.commit}
