"""What the three recipe rules share: the changed single-node vLLM/SGLang points, the recipe links of
each config key (recognised by :func:`infx.recipes.rules.parse_links`, with where they were found and
their recorded merge state), the upstream recipes checkout (``--recipes-repo`` or ``[recipes] path``),
and, per config key, which recipe commit and selection the links point at. Computed once per review."""

from __future__ import annotations

import fnmatch
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from infx.diagnostics import Diagnostic, InfxError
from infx.recipes.check import Pin
from infx.recipes.rules import RecipeLink, parse_links

if TYPE_CHECKING:
    from infx.recipes.check import PointFacts, PointLaunchArgs, VariantIndex
    from infx.recipes.source import RecipeRepo
    from infx.review.context import ReviewContext

FRAMEWORKS = ("vllm", "sglang")
MULTI = ("dynamo-trt", "dynamo-sglang", "sglang-disagg", "dynamo-vllm")
PAGES = ("vllm-recipes-page", "sglang-page")
NO_CHECKOUT = "no recipes checkout: give --recipes-repo or [recipes] path"
MULTI_ONLY = "disaggregated/multi-node submission (no single-node vLLM/SGLang change)"

Source = Literal["signoff", "body", "comment", "links-file"]


@dataclass(frozen=True)
class FoundLink:
    """A recognised link, where it was found, and the canonical URL its merge state is recorded under."""

    link: RecipeLink
    source: Source
    commit: str | None = None  # recipe-links.yaml's optional pin

    @property
    def url(self) -> str:
        if self.link.kind == "vllm-recipes-pr" and self.link.pr is not None:
            return f"https://github.com/vllm-project/recipes/pull/{self.link.pr}"
        if self.link.kind == "sglang-pr" and self.link.pr is not None:
            return f"https://github.com/sgl-project/sglang/pull/{self.link.pr}"
        return self.link.url

    @property
    def kind(self) -> str:
        return self.link.kind


def signoff_section(text: str) -> str:
    """The text after ``### Additional detail section:`` up to ``Signed:`` (the checklist template)."""
    m = re.search(r"###\s*Additional detail section:?(.*?)(?:^\s*\**Signed:|\Z)", text, re.S | re.M)
    return m.group(1) if m else ""


def found_links(text: str, source: Source, commit: str | None = None) -> list[FoundLink]:
    return [FoundLink(link, source, commit) for link in parse_links(text)]


def links_for(ctx: ReviewContext, key: str) -> list[FoundLink]:
    """Every link for a config key, sign-off first, then body, comments and recipe-links.yaml; one per URL."""
    links = found_links(signoff_section(ctx.pr.signoff or ""), "signoff")
    links += found_links(ctx.pr.body, "body")
    for c in ctx.pr.comments:
        links += found_links(c, "comment")
    links += _links_file(ctx, key)
    seen: set[str] = set()
    out = []
    for x in links:
        if x.url not in seen:
            seen.add(x.url)
            out.append(x)
    return out


def _links_file(ctx: ReviewContext, key: str) -> list[FoundLink]:
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
        commit = item.get("commit")
        if commit is not None and not (isinstance(commit, str) and re.fullmatch(r"[0-9a-fA-F]{7,40}", commit)):
            raise InfxError(src.diag((i, "commit"), "'commit' must be a hex commit id"))
        if fnmatch.fnmatchcase(key, item["config-key"]):
            out += found_links(item["link"], "links-file", commit)
    return out


def link_states(ctx: ReviewContext) -> dict[str, dict[str, Any]]:
    """``--link-state``: URL -> the recorded ``gh pr view`` fields."""
    u = state(ctx)
    if u.states is None:
        u.states = {}
        if ctx.request.link_state is not None:
            from infx import jsonio

            data = jsonio.load(ctx.request.link_state, what="--link-state file")
            if not isinstance(data, list) or not all(isinstance(x, dict) and isinstance(x.get("url"), str)
                                                     for x in data):
                raise InfxError(Diagnostic("--link-state must be a JSON list of objects with 'url'",
                                           str(ctx.request.link_state), 1, 1))
            u.states = {x["url"].rstrip("/"): x for x in data}
    return u.states


def applicable(ctx: ReviewContext) -> dict[str, list[str]]:
    """config key -> its changed single-node vLLM/SGLang points (head point ids)."""
    out: dict[str, list[str]] = {}
    for c in ctx.changed:
        if c.head_pid is None:
            continue
        p = ctx.head_point(c.head_pid)
        if p.multinode or p.disagg or p.framework in MULTI or p.framework not in FRAMEWORKS:
            continue
        out.setdefault(c.key, []).append(c.head_pid)
    return out


# ---- the recipes checkout and what each key's link points at


@dataclass
class Target:
    """The recipe commit and selection a config key's link names, and how much it can be trusted."""

    label: str  # merged | published page | linked file | unmerged preview | unverified link | no link | ...
    link: FoundLink | None = None
    commit: str | None = None  # None: the checkout's default
    pin: Pin | None = None
    state: dict[str, Any] | None = None
    manual: bool = False  # an SGLang cookbook: the major-args check is manual


@dataclass
class Upstream:
    """Per review: the checkout, the merge states, and the recipes read per commit."""

    checkout: Path | None = None
    default_commit: str | None = None
    problem: str | None = None  # why the workspace's [recipes] path gives no checkout
    states: dict[str, dict[str, Any]] | None = None
    repos: dict[str | None, Any] = field(default_factory=dict)  # commit -> (RecipeRepo, VariantIndex) | reason
    launches: dict[str, Any] | None = None  # point id -> (PointFacts, PointLaunchArgs | reason)


def state(ctx: ReviewContext) -> Upstream:
    """The recipe rules' shared state for this review, made on first use."""
    if ctx._upstream is None:
        path, commit = checkout(ctx)
        ctx._upstream = Upstream(checkout=path, default_commit=commit if path is not None else None,
                                 problem=commit if path is None else None)
    return cast(Upstream, ctx._upstream)


def checkout(ctx: ReviewContext) -> tuple[Path | None, str | None]:
    """``--recipes-repo`` (read at HEAD when it is a git repository), else the workspace's ``[recipes] path``
    (and ``[recipes] commit``), relative to the workspace root. A ``[recipes] path`` that is not there
    gives no checkout and, as the commit, the reason."""
    if ctx.request.recipes_repo is not None:
        path: Path | None = ctx.request.recipes_repo
        commit = None
    else:
        ws = ctx.head.ws
        rel = ws.upstream.path if ws is not None else None
        path = (ctx.workspace_root / rel) if rel else None
        commit = ws.upstream.commit if ws is not None else None
    if path is None:
        return None, None
    if not path.is_dir():
        if ctx.request.recipes_repo is not None:  # asked for on the command line: bad input
            raise InfxError(Diagnostic(f"recipes checkout '{path}' is not a directory", str(path)))
        return None, f"[recipes] path {path} is not a directory"
    if commit is None and _is_git(path):
        commit = "HEAD"
    return path, commit


def _is_git(path: Path) -> bool:
    r = subprocess.run(["git", "-C", str(path), "rev-parse", "--is-inside-work-tree", "--is-bare-repository"],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        return False
    top = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                         check=False).stdout.strip()
    return "true" in r.stdout.split()[1:] or (bool(top) and Path(top).resolve() == path.resolve())


def repo_at(ctx: ReviewContext, commit: str | None) -> tuple[RecipeRepo, VariantIndex] | str:
    """The checkout at ``commit`` (None: its default) and its variant index, or why it cannot be read."""
    from infx.recipes.check import VariantIndex
    from infx.recipes.source import RecipeRepo

    u = state(ctx)
    assert u.checkout is not None
    want = commit or u.default_commit
    if want not in u.repos:
        try:
            repo = RecipeRepo(u.checkout, want)
            u.repos[want] = (repo, VariantIndex(repo))
        except InfxError as exc:
            u.repos[want] = f"cannot read the recipes checkout {u.checkout} at {want or 'its files'}: " + \
                exc.diagnostics[0].message
    return cast("tuple[RecipeRepo, VariantIndex] | str", u.repos[want])


def target(ctx: ReviewContext, key: str) -> Target:
    """Which recipe commit and selection a key's first link names (spec 5.2, 5.3)."""
    links = links_for(ctx, key)
    if not links:
        return Target("no link")
    x = links[0]
    pin = Pin(recipe_path=x.link.recipe_path) if x.link.recipe_path else None
    if x.kind == "vllm-recipes-page":
        pin = x.link.pin
    if x.kind in ("sglang-pr", "sglang-page"):
        return Target("sglang cookbook", x, manual=True)
    if x.kind == "vllm-recipes-commit":
        return Target("bare commit", x, commit=x.link.ref, pin=pin)
    if x.kind == "vllm-recipes-file":
        return Target("linked file", x, commit=x.commit or x.link.ref, pin=pin)
    if x.kind == "vllm-recipes-page":
        return Target("published page", x, commit=x.commit, pin=pin)
    st = link_states(ctx).get(x.url)
    if st is None:
        return Target("unverified link", x, commit=x.commit, pin=pin)
    merged = st.get("state") == "MERGED" and bool(st.get("mergedAt"))
    mc = st.get("mergeCommit")
    merge_commit = mc.get("oid") if isinstance(mc, dict) and isinstance(mc.get("oid"), str) else None
    if merged:
        return Target("merged", x, commit=x.commit or merge_commit, pin=pin, state=st)
    head = st.get("headRefOid")
    return Target("unmerged preview", x, commit=head if isinstance(head, str) else None, pin=pin, state=st)


def point_launches(ctx: ReviewContext, pids: list[str]) -> dict[str, tuple[PointFacts, PointLaunchArgs | str]]:
    """The facts and launch argv of changed head points (rendered once for both recipe rules)."""
    from infx.recipes.check import point_launches as launches_of

    u = state(ctx)
    if u.launches is None:
        u.launches = {}
    todo = [p for p in pids if p not in u.launches]
    if todo:
        u.launches.update(launches_of([ctx.head.points[p] for p in todo], ctx.head.ws))
    return {p: u.launches[p] for p in pids}


@dataclass
class Item:
    """One changed single-node vLLM point ready for the recipe library: its key, facts and launch, and the
    recipes checkout its key's link selects (or why none can be read)."""

    key: str
    pid: str
    target: Target
    facts: PointFacts
    launch: PointLaunchArgs | str
    repo: tuple[RecipeRepo, VariantIndex] | str


def items(ctx: ReviewContext) -> list[Item] | str:
    """The changed single-node vLLM points with their recipes, or the N/A reason."""
    if not ctx.changed:
        return "no changed point"
    keys = applicable(ctx)
    if not keys:
        return MULTI_ONLY
    vllm = {k: [p for p in pids if ctx.head_point(p).framework == "vllm"] for k, pids in keys.items()}
    vllm = {k: v for k, v in vllm.items() if v}
    if not vllm:
        return "no single-node vLLM change (SGLang cookbooks are checked by hand)"
    u = state(ctx)
    if u.checkout is None:
        return f"{NO_CHECKOUT} ({u.problem})" if u.problem else NO_CHECKOUT
    launches = point_launches(ctx, [p for pids in vllm.values() for p in pids])
    out = []
    for key, pids in sorted(vllm.items()):
        t = target(ctx, key)
        repo = repo_at(ctx, t.commit)
        for pid in pids:
            facts, launch = launches[pid]
            out.append(Item(key, pid, t, facts, launch, repo))
    return out


def arm_label(ctx: ReviewContext, pid: str) -> str:
    """A short, stable name for a point's arm inside its config key (``tp=2``, ``tp=8/ep=8/dpa``)."""
    p = ctx.head_point(pid)
    label = f"tp={p.tp}" + (f"/ep={p.ep}" if p.ep not in (None, 1) else "") + ("/dpa" if p.dp_attn else "")
    return label + (f"/spec={p.spec_decoding}" if p.spec_decoding not in (None, "none") else "")


def upstream_path(ctx: ReviewContext, file: str, launch: PointLaunchArgs | str) -> str:
    """A finding's file as a review location path: a workspace file as is; an upstream recipe file under
    the checkout's path when the checkout lies inside the workspace, else as the recipes repository names it."""
    if not isinstance(launch, str) and file == launch.source:
        return file
    co = state(ctx).checkout
    if co is not None:
        try:
            return (co.resolve().relative_to(ctx.workspace_root.resolve()) / file).as_posix()
        except ValueError:
            pass
    return file
