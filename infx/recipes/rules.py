"""Library functions a review gate calls for its recipe rules; each returns typed :class:`RecipeFinding`s
(file, line, severity, rule id, message, evidence).

* :func:`recipe_args`: the launch against its recipe (severities of spec 4.3: must-match in the launch and
  not in the recipe = error, must-match only in the recipe = warning, unclassified = warning, harness and
  functional differences = one note).
* :func:`recipe_hardware`: ``meta.hardware[<hw>]`` (unsupported = warning, absent = note, verified = pass).
* :func:`parse_links` and :func:`resolve_link`: the recipe half of ``recipe-link``: which links a text holds
  (spec 5.2), and the recipe file and selection a link names, read from a recipes checkout at a commit. The
  merge-state half (is the PR merged, which commit) belongs to the caller.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, Field

from infx.diagnostics import InfxError
from infx.recipes.check import (
    ArgTable,
    Pin,
    PointFacts,
    PointLaunchArgs,
    RecipeFinding,
    VariantIndex,
    arg_table,
    check_point,
    hardware_finding,
)
from infx.recipes.source import RecipeRepo

LinkKind = Literal["vllm-recipes-pr", "vllm-recipes-file", "vllm-recipes-commit", "vllm-recipes-page", "sglang-pr",
                   "sglang-page"]

_PATTERNS: list[tuple[LinkKind, re.Pattern[str]]] = [
    ("vllm-recipes-pr", re.compile(r"https?://github\.com/vllm-project/recipes/pull/(?P<num>\d+)[^\s)>\]]*")),
    ("vllm-recipes-pr", re.compile(r"(?<![\w/])vllm-project/recipes#(?P<num>\d+)\b")),
    ("vllm-recipes-file", re.compile(
        r"https?://github\.com/vllm-project/recipes/(?:blob|tree)/(?P<ref>[^/\s]+)/(?P<path>models/[^/\s]+/[^/\s?#]+"
        r"\.yaml)")),
    ("vllm-recipes-commit", re.compile(r"https?://github\.com/vllm-project/recipes/commit/(?P<sha>[0-9a-fA-F]{7,40})")),
    ("vllm-recipes-page", re.compile(r"https?://recipes\.vllm\.ai/(?P<org>[\w.-]+)/(?P<repo>[\w.-]+)(?P<query>\?[^\s)>\]]*)?")),
    ("sglang-pr", re.compile(r"https?://github\.com/sgl-project/sglang/pull/(?P<num>\d+)")),
    ("sglang-page", re.compile(r"https?://(?:docs\.sglang\.io/cookbook|cookbook\.sglang\.io|lmsysorg\.mintlify\.app/"
                               r"cookbook)[^\s)>\]]*")),
]
_TRAILING = ".,;:!?'\""


class RecipeLink(BaseModel):
    """A recognised recipe link and what it names."""

    kind: LinkKind
    url: str
    pr: int | None = None
    ref: str | None = None  # a blob/tree ref or a bare commit
    recipe_path: str | None = None  # models/<org>/<repo>.yaml, when the link names a file
    pin: Pin = Field(default_factory=Pin)  # the page query's hardware, variant, strategy, features, modes


def parse_links(text: str) -> list[RecipeLink]:
    """Every recipe link in ``text``, in order of appearance (spec 5.2)."""
    found: list[tuple[int, RecipeLink]] = []
    taken: list[tuple[int, int]] = []
    for kind, pat in _PATTERNS:
        for m in pat.finditer(text):
            if any(a <= m.start() < b for a, b in taken):
                continue
            end = m.end()
            while end > m.start() and text[end - 1] in _TRAILING:  # sentence punctuation ends a link
                end -= 1
            if end != m.end():
                cut = pat.match(text, m.start(), end)
                if cut is None:
                    continue
                m = cut
            taken.append((m.start(), m.end()))
            g = m.groupdict()
            link = RecipeLink(kind=kind, url=m.group(0))
            if g.get("num"):
                link.pr = int(g["num"])
            if kind == "vllm-recipes-file":
                link.ref, link.recipe_path = g["ref"], g["path"]
            if kind == "vllm-recipes-commit":
                link.ref = g["sha"]
            if kind == "vllm-recipes-page":
                link.recipe_path = f"models/{g['org']}/{g['repo']}.yaml"
                link.pin = _pin(link.recipe_path, g.get("query") or "")
            found.append((m.start(), link))
    return [link for _, link in sorted(found, key=lambda x: x[0])]


def _pin(path: str, query: str) -> Pin:
    q = {k: v[-1] for k, v in parse_qs(urlsplit(query).query if query.startswith("?") else query).items()}
    modes = {}
    for item in (q.get("fmode") or "").split(","):
        f, sep, m = item.partition(":")
        if sep and f and m:
            modes[f] = m
    feats = [f for f in q["features"].split(",") if f] if "features" in q else None
    return Pin(recipe_path=path, hardware=q.get("hardware"), variant=q.get("variant"), strategy=q.get("strategy"),
               features=feats, modes=modes)


class LinkTarget(BaseModel):
    """The recipe a link resolves to at a commit, or why it does not."""

    link: RecipeLink
    commit: str | None
    recipe_path: str | None
    pin: Pin = Field(default_factory=Pin)
    findings: list[RecipeFinding] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.recipe_path is not None and not any(f.severity == "error" for f in self.findings)


def resolve_link(recipes_repo: str, link: RecipeLink, commit: str | None = None,
                 model: str | None = None) -> LinkTarget:
    """The recipe half of ``recipe-link``: read the file a link names from ``recipes_repo`` at ``commit``
    (a PR's merge commit, a pinned commit; default: the link's own ref, else the checkout on disk). A PR link
    names no file: ``model`` (the catalog point's) picks ``models/<model>.yaml`` or the recipe whose variant
    serves it. Errors: the file is absent at the commit, it does not parse, or the link is a bare commit."""
    out = LinkTarget(link=link, commit=commit, recipe_path=link.recipe_path, pin=link.pin)

    def err(msg: str, sev: Literal["error", "warning", "note"] = "error", file: str | None = None,
            line: int | None = None) -> None:
        out.findings.append(RecipeFinding(rule="recipe-link", severity=sev, file=file, line=line, message=msg,
                                          evidence={"url": link.url, "kind": link.kind, "commit": commit}))

    if link.kind == "vllm-recipes-commit":
        err("bare commit does not satisfy the rule (InferenceX: link a merged recipes PR or a published page)")
        return out
    if link.kind in ("sglang-pr", "sglang-page"):
        err("SGLang cookbook: the major-args check is manual", "note")
        out.recipe_path = None
        return out
    try:
        repo = RecipeRepo(recipes_repo, commit or link.ref)
    except InfxError as exc:
        err(f"cannot read the recipes checkout: {exc.diagnostics[0].message}")
        return out
    out.commit = repo.commit
    path = link.recipe_path
    if path is None and model is not None:
        direct = f"models/{model}.yaml"
        if repo.tree.exists(direct):
            path = direct
        else:
            try:
                hit = VariantIndex(repo).find(model, "")
            except InfxError as exc:
                err(str(exc.diagnostics[0]))
                return out
            path = hit[0].rel if not isinstance(hit, str) else None
    if path is None:
        err("the link names no recipe file and no recipe variant serves the point's model")
        return out
    out.recipe_path = path
    if not repo.tree.exists(path):
        err(f"{path} does not exist in the recipes repository" + (f" at {repo.commit[:12]}" if repo.commit else ""))
        return out
    try:
        repo.recipe(path)
    except InfxError as exc:
        d = exc.diagnostics[0]
        err(f"the linked recipe does not parse: {d.message}", file=path, line=d.line)
    return out


def recipe_args(repo: RecipeRepo, facts: PointFacts, launch: PointLaunchArgs, *, table: ArgTable | None = None,
                index: VariantIndex | None = None, pin: Pin | None = None) -> list[RecipeFinding]:
    """``recipe-args`` for one point: its launch against the recipe rendering its selection picks (``pin``:
    a link's recipe file and query). A point no recipe serves is one warning saying why."""
    c = check_point(repo, index or VariantIndex(repo), facts, launch, table or arg_table(), pin)
    found = [f for f in c.findings if f.rule == "recipe-args"]
    if not c.matched and not found:
        found.append(RecipeFinding(rule="recipe-args", severity="warning", file=c.recipe_file or launch.source,
                                   line=None, message=f"not compared with a recipe: {c.reason}",
                                   point_id=facts.point_id, config_key=facts.config_key))
    return found


def recipe_hardware(repo: RecipeRepo, facts: PointFacts, *, table: ArgTable | None = None,
                    index: VariantIndex | None = None, pin: Pin | None = None) -> list[RecipeFinding]:
    """``recipe-hardware`` for one point: the recipe's status for the point's hardware (spec 4.5)."""
    index = index or VariantIndex(repo)
    found = index.find(facts.model, facts.precision, pin.recipe_path if pin else None)
    if isinstance(found, str):
        return []
    hw = (pin.hardware if pin and pin.hardware else None) or (table or arg_table()).taxonomy_id(facts.hardware)
    return [hardware_finding(found[0], hw, facts.point_id, facts.config_key)]
