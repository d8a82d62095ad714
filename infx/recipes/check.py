"""Check a catalog point's launch against the upstream recipe it claims to run.

For each point: pick the recipe variant that serves the point's model, the taxonomy hardware of its
runner, the single-node strategy its rendered argv implies and the features its row implies; render
the recipe; normalise both argvs (:mod:`infx.recipes.argv`); and classify every differing flag and
environment variable with the data table ``data/recipe-args.yaml`` (must-match, harness, functional,
unknown; engine defaults count as absence). The verdicts:

* must-match, set by the point and absent or different in the recipe: error;
* must-match, set only by the recipe: warning ("the benchmark does not run what the recipe documents");
* unknown on either side: warning ("unclassified; add it to recipe-args.yaml");
* harness and functional differences: notes, listed once per point.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from infx.diagnostics import InfxError
from infx.recipes.argv import NormalisedArgv, normalise
from infx.recipes.render import (
    DERIVED,
    RecipeRendering,
    RecipeSelection,
    TokenSource,
    default_features,
    mode_allowed,
    offered_strategies,
    render,
    strategy_supported,
)
from infx.recipes.source import LoadedRecipe, RecipeRepo
from infx.yamlsource import load_yaml

DATA_TABLE = Path(__file__).resolve().parent / "data" / "recipe-args.yaml"
ArgClass = Literal["must-match", "harness", "functional", "unknown"]
Severity = Literal["error", "warning", "note", "pass"]


# ---- the classification table ---------------------------------------------------------------------


class TableEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    class_: ArgClass = Field(alias="class")
    keys: list[str]
    source: str


class DefaultEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    value: Any = None
    any: bool = False
    source: str


class ArgTable(BaseModel):
    """``recipe-args.yaml``: how each flag and variable is classified, and the engine defaults."""

    model_config = ConfigDict(extra="forbid")

    schema_: str = Field("infx.recipe-args/1", alias="schema")
    engine: str = "vllm"
    flags: list[TableEntry] = Field(default_factory=list)
    env: list[TableEntry] = Field(default_factory=list)
    defaults: list[DefaultEntry] = Field(default_factory=list)
    hardware: dict[str, str] = Field(default_factory=dict)
    file: str = ""

    def _lookup(self, entries: list[TableEntry], key: str) -> tuple[ArgClass, str]:
        hit: tuple[ArgClass, str] | None = None
        for e in entries:  # later entries win
            if key in e.keys:
                hit = (e.class_, e.source)
        if hit is None:
            for e in entries:
                if any(k.endswith("*") and fnmatch.fnmatchcase(key, k) for k in e.keys):
                    hit = (e.class_, e.source)
        return hit or ("unknown", f"not in {Path(self.file).name or 'recipe-args.yaml'}")

    def flag_class(self, key: str) -> tuple[ArgClass, str]:
        return self._lookup(self.flags, key)

    def env_class(self, name: str) -> tuple[ArgClass, str]:
        return self._lookup(self.env, name)

    def has_subkeys(self, key: str) -> bool:
        return any(k.startswith(key + ".") for e in self.flags for k in e.keys)

    def default(self, key: str) -> DefaultEntry | None:
        found = None
        for d in self.defaults:
            if d.key == key:
                found = d
        return found

    def taxonomy_id(self, sku: str) -> str:
        return self.hardware.get(sku, sku)

    def extended(self, other: ArgTable) -> ArgTable:
        return ArgTable.model_validate({
            "schema": self.schema_, "engine": self.engine, "file": other.file or self.file,
            "flags": [e.model_dump(by_alias=True) for e in self.flags + other.flags],
            "env": [e.model_dump(by_alias=True) for e in self.env + other.env],
            "defaults": [d.model_dump() for d in self.defaults + other.defaults],
            "hardware": {**self.hardware, **other.hardware}})


def load_table(path: str | Path) -> ArgTable:
    from pydantic import ValidationError

    src = load_yaml(path)
    try:
        return ArgTable.model_validate({**(src.data or {}), "file": str(path)})
    except ValidationError as exc:
        raise InfxError(src.diags_from_validation(exc)) from None


@cache
def builtin_table() -> ArgTable:
    return load_table(DATA_TABLE)


def arg_table(workspace_table: str | Path | None = None) -> ArgTable:
    """The built-in table, extended by a workspace's ``recipe-args.yaml`` when given and present."""
    base = builtin_table()
    if workspace_table is not None and Path(workspace_table).is_file():
        return base.extended(load_table(workspace_table))
    return base


# ---- the typed results -----------------------------------------------------------------------------


class Where(BaseModel):
    model_config = ConfigDict(frozen=True)

    file: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


class ArgRow(BaseModel):
    """One compared flag or variable."""

    key: str  # normalised flag ("speculative-config.method") or "env:NAME"
    kind: Literal["model", "flag", "env"]
    cls: ArgClass
    source: str  # the table entry's citation
    point: Any = None
    recipe: Any = None
    point_has: bool = False
    recipe_has: bool = False
    verdict: Severity
    point_at: Where | None = None
    recipe_at: Where | None = None
    recipe_key: str | None = None  # the recipe key path (or how it was derived) that set the recipe's value
    display: str = ""  # the flag as the argv spells it


class RecipeFinding(BaseModel):
    """A typed finding of a recipe rule (``recipe-args``, ``recipe-hardware``, ``recipe-link``)."""

    rule: str
    severity: Severity
    file: str | None
    line: int | None
    message: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    point_id: str | None = None
    config_key: str | None = None


class PointLaunchArgs(BaseModel):
    """What a catalog point launches: its server argv and env, and where they were rendered from."""

    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    source: str  # the bench script or the infx recipe file
    kind: Literal["script", "typed"]
    text: str | None = None  # the source's text, to find the line a flag is set on


class PointFacts(BaseModel):
    """The catalog point's fields the matching reads."""

    config_key: str
    point_id: str
    model: str
    precision: str
    hardware: str  # the runner's hardware SKU (infx.engines.hardware)
    spec_decoding: str = "none"
    tp: int | None = None
    ep: int | None = None
    dp_attn: bool | None = None
    conc: int | None = None


class PointCheck(BaseModel):
    point: PointFacts
    matched: bool
    reason: str | None = None  # why no recipe rendering was compared
    selection: RecipeSelection | None = None
    recipe_file: str | None = None
    rendering: RecipeRendering | None = None
    launch_source: str | None = None
    rows: list[ArgRow] = Field(default_factory=list)
    findings: list[RecipeFinding] = Field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(f.severity == "error" for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.severity == "warning" for f in self.findings)


# ---- selecting the recipe ---------------------------------------------------------------------------


class Layout(BaseModel):
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: bool = False
    dcp: int = 1

    @property
    def strategy(self) -> str:
        if self.dp > 1:
            return "single_node_dep"
        return "single_node_tep" if self.ep else "single_node_tp"


def _int(v: Any, default: int = 1) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def layout_of(n: NormalisedArgv) -> Layout:
    return Layout(tp=_int(n.get("tensor-parallel-size")), pp=_int(n.get("pipeline-parallel-size")),
                  dp=_int(n.get("data-parallel-size")), ep=n.get("enable-expert-parallel") is True,
                  dcp=_int(n.get("decode-context-parallel-size")))


class VariantIndex:
    """Every (recipe, variant) of a checkout by the model id it serves."""

    def __init__(self, repo: RecipeRepo) -> None:
        self.by_model: dict[str, list[tuple[LoadedRecipe, str]]] = {}
        for lr in repo.all_recipes():
            for vk in lr.recipe.variants:
                self.by_model.setdefault(lr.served_model(vk), []).append((lr, vk))

    def find(self, model: str, precision: str, recipe_path: str | None = None) -> tuple[LoadedRecipe, str] | str:
        hits = [h for h in self.by_model.get(model, []) if recipe_path is None or h[0].rel == recipe_path]
        if not hits:
            return f"no recipe variant serves {model}" + (f" in {recipe_path}" if recipe_path else "")
        if len(hits) == 1:
            return hits[0]
        same = [h for h in hits if h[0].recipe.variants[h[1]].precision == precision]
        if len(same) == 1:
            return same[0]
        return (f"ambiguous: {len(hits)} recipe variants serve {model} ("
                + ", ".join(f"{lr.rel}:{vk}" for lr, vk in hits) + ")")


def features_for(lr: LoadedRecipe, vkey: str, hw_id: str, n: NormalisedArgv, spec: str,
                 repo: RecipeRepo) -> tuple[list[str], dict[str, str]]:
    """The features a point implies: ``spec_decoding`` iff it speculates (the mode whose
    ``--speculative-config`` method is the point's), ``text_only`` iff ``--language-model-only``,
    every other feature at its default."""
    recipe = lr.recipe
    feats = default_features(recipe, vkey, hw_id)
    modes: dict[str, str] = {}
    want = {"spec_decoding": spec != "none", "text_only": n.get("language-model-only") is True}
    for f, on in want.items():
        if f not in recipe.features:
            continue
        if on and f not in feats:
            feats.append(f)
        if not on and f in feats:
            feats.remove(f)
    order = list(recipe.features)
    feats.sort(key=order.index)
    sd = recipe.features.get("spec_decoding")
    method = n.get("speculative-config")
    method = method.get("method") if isinstance(method, dict) else None
    if "spec_decoding" in feats and sd is not None and sd.modes and method:
        hw = repo.taxonomy.hardware_profiles[hw_id]
        for mk, mode in sd.modes.items():
            if not mode_allowed(mode, vkey, hw_id, hw):
                continue
            for a in mode.args or []:
                if isinstance(a, str) and f'"{method}"' in a.replace(" ", "") and '"method"' in a:
                    modes["spec_decoding"] = mk
            if "spec_decoding" in modes:
                break
    return feats, modes


# ---- comparing ---------------------------------------------------------------------------------------

_MISSING = object()


def _items(n: NormalisedArgv, table: ArgTable) -> dict[str, tuple[Any, list[int], str]]:
    """Settings as comparable items: a JSON-valued flag the table classifies by key is split into
    ``flag.key`` items (the rest under ``flag.*`` rules); values with the token indices that set them."""
    out: dict[str, tuple[Any, list[int], str]] = {}
    for key, s in n.settings.items():
        if isinstance(s.value, dict) and table.has_subkeys(key):
            for sub, v in s.value.items():
                out[f"{key}.{sub}"] = (v, s.tokens, s.spelling)
        else:
            out[key] = (s.value, s.tokens, s.spelling)
    return out


def _same(a: Any, b: Any) -> bool:
    nums = (int, float)
    if isinstance(a, nums) and isinstance(b, nums) and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    return bool(a == b)


_LINES: dict[tuple[int, tuple[str, ...]], int | None] = {}


def _line_in(text: str | None, needles: Sequence[str]) -> int | None:
    """The first non-comment line of ``text`` naming one of ``needles`` as a word (memoised: many points
    share one script)."""
    if not text:
        return None
    key = (hash(text), tuple(needles))
    if key not in _LINES:
        _LINES[key] = _find_line(text, needles)
    return _LINES[key]


def _find_line(text: str, needles: Sequence[str]) -> int | None:
    pats = [re.compile(rf"(^|[^\w-]){re.escape(n)}($|[^\w-])") for n in needles if n]
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        if any(p.search(line) for p in pats):
            return i
    return None


def _flag_needles(key: str, spelling: str) -> list[str]:
    base = key.split(".")[0]
    return [spelling, f"--{base}", f"--{base.replace('-', '_')}", base.replace("-", "_") + ":", base + ":"]


def compare(point: PointLaunchArgs, model: str, rendering: RecipeRendering, table: ArgTable) -> list[ArgRow]:
    """Every flag and variable of the point's launch and the recipe's rendering, classified."""
    pn, rn = normalise(point.argv), normalise(rendering.argv)
    pi, ri = _items(pn, table), _items(rn, table)
    rows: list[ArgRow] = []

    def recipe_at(tokens: list[int]) -> Where | None:
        for t in reversed(tokens):
            src: TokenSource = rendering.provenance[t]
            if src.file != DERIVED:
                return Where(file=src.file, line=src.line)
        return Where(file=DERIVED) if tokens else None

    def recipe_key(tokens: list[int]) -> str | None:
        return rendering.provenance[tokens[-1]].key_path if tokens else None

    model_at = rendering.provenance[2]
    rows.append(ArgRow(key="model", kind="model", cls="must-match", source="IX prompt lines 162-170 (model)",
                       point=model, recipe=rendering.model, point_has=True, recipe_has=True,
                       verdict="pass" if model == rendering.model else "error",
                       point_at=Where(file=point.source), recipe_at=Where(file=model_at.file, line=model_at.line)))
    for key in list(pi) + [k for k in ri if k not in pi]:
        pv, ptoks, pspell = pi.get(key, (_MISSING, [], ""))
        rv, rtoks, rspell = ri.get(key, (_MISSING, [], ""))
        if key.split(".")[0] == "served-model-name" or key in ("host", "port"):
            cls, why = table.flag_class(key)
        elif "." in key:
            cls, why = table.flag_class(key)
            if cls == "unknown":
                cls, why = table.flag_class(key.split(".")[0] + ".*")
        else:
            cls, why = table.flag_class(key)
        d = table.default(key)
        pe, re_ = pv, rv
        if d is not None and not d.any:
            pe = d.value if pv is _MISSING else pv
            re_ = d.value if rv is _MISSING else rv
        if d is not None and d.any and (pv is _MISSING or rv is _MISSING):
            same = True
        else:
            same = pe is not _MISSING and re_ is not _MISSING and _same(pe, re_)
        if same:
            verdict: Severity = "pass"
        elif cls == "must-match":
            verdict = "error" if pv is not _MISSING else "warning"
        elif cls == "unknown":
            verdict = "warning"
        else:
            verdict = "note"
        spelling = pspell or rspell
        rows.append(ArgRow(
            key=key, kind="flag", cls=cls, source=why + (f"; default: {d.source}" if d is not None else ""),
            point=None if pv is _MISSING else pv, recipe=None if rv is _MISSING else rv,
            point_has=pv is not _MISSING, recipe_has=rv is not _MISSING, verdict=verdict,
            point_at=(Where(file=point.source, line=_line_in(point.text, _flag_needles(key, pspell)))
                      if pv is not _MISSING else None),
            recipe_at=recipe_at(rtoks), recipe_key=recipe_key(rtoks),
            display=spelling + ("." + key.split(".", 1)[1] if "." in key else "")))
    for name in list(point.env) + [k for k in rendering.env if k not in point.env]:
        pv = point.env.get(name, _MISSING)
        rv = rendering.env.get(name, _MISSING)
        cls, why = table.env_class(name)
        if pv is not _MISSING and rv is not _MISSING and pv == rv:
            verdict = "pass"
        elif cls == "must-match":
            verdict = "error" if pv is not _MISSING else "warning"
        elif cls == "unknown":
            verdict = "warning"
        else:
            verdict = "note"
        rsrc = rendering.env_provenance.get(name)
        rows.append(ArgRow(
            key=f"env:{name}", kind="env", cls=cls, source=why, point=None if pv is _MISSING else pv,
            recipe=None if rv is _MISSING else rv, point_has=pv is not _MISSING, recipe_has=rv is not _MISSING,
            verdict=verdict, display=name,
            point_at=Where(file=point.source, line=_line_in(point.text, [name])) if pv is not _MISSING else None,
            recipe_at=Where(file=rsrc.file, line=rsrc.line) if rsrc else None))
    return rows


def _show(v: Any) -> str:
    import json

    if v is None:
        return "-"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def args_findings(check: PointCheck) -> list[RecipeFinding]:
    """The ``recipe-args`` findings of a compared point: one per error and warning, the notes together."""
    out: list[RecipeFinding] = []
    assert check.rendering is not None
    sel = check.rendering.selection
    where = f"{sel.recipe_path} ({sel.variant}, {sel.strategy}, {sel.hardware})"
    notes: list[ArgRow] = []
    for r in check.rows:
        if r.verdict == "note":
            notes.append(r)
            continue
        if r.verdict == "pass":
            continue
        name = r.display or r.key
        if r.verdict == "error" and not r.recipe_has:
            msg = f"{r.cls} {name} {_show(r.point)} is set by the launch and absent from the recipe"
            if "default:" in r.source:
                msg += " (its engine default differs)"
        elif r.verdict == "error":
            msg = f"{r.cls} {name}: launch {_show(r.point)} vs recipe {_show(r.recipe)}"
            if r.recipe_key:
                msg += (f" (the recipe renders {_show(r.recipe)} for {sel.strategy} on {sel.hardware}: "
                        f"{r.recipe_key}" + (f", {r.recipe_at}" if r.recipe_at else "") + ")")
        elif r.cls == "must-match":
            msg = (f"{r.cls} {name} {_show(r.recipe)} is set by the recipe and not by the launch: "
                   "the benchmark does not run what the recipe documents")
        else:
            side = "both" if r.point_has and r.recipe_has else ("launch only" if r.point_has else "recipe only")
            msg = (f"unclassified {name} ({side}: launch {_show(r.point)}, recipe {_show(r.recipe)}); "
                   "add it to recipe-args.yaml")
        at = r.recipe_at if r.recipe_at and r.recipe_at.file != DERIVED else r.point_at
        out.append(RecipeFinding(
            rule="recipe-args", severity=r.verdict, file=at.file if at else None, line=at.line if at else None,
            message=msg, point_id=check.point.point_id, config_key=check.point.config_key,
            evidence={"key": r.key, "class": r.cls, "source": r.source, "launch": r.point, "recipe": r.recipe,
                      "launch_at": str(r.point_at) if r.point_at else None,
                      "recipe_at": str(r.recipe_at) if r.recipe_at else None, "selection": where,
                      "recipe_value": r.recipe, "recipe_commit": sel.recipe_commit}))
    if notes:
        out.append(RecipeFinding(
            rule="recipe-args", severity="note", file=sel.recipe_path, line=None,
            message="harness/functional differences: " + "; ".join(
                f"{r.display or r.key} {_show(r.point)} vs {_show(r.recipe)}" for r in notes),
            point_id=check.point.point_id, config_key=check.point.config_key,
            evidence={"keys": [r.key for r in notes], "recipe": where}))
    return out


def hardware_finding(lr: LoadedRecipe, hw_id: str, point_id: str | None = None,
                     config_key: str | None = None) -> RecipeFinding:
    """The ``recipe-hardware`` rule: ``meta.hardware[hw]`` unsupported = warning, absent = note,
    verified = pass."""
    status = lr.recipe.meta.hardware.get(hw_id)
    if status == "unsupported":
        sev: Severity = "warning"
        msg = f"upstream recipe marks {hw_id} unsupported"
        line = lr.key_line(("meta", "hardware", hw_id))
    elif status is None:
        sev, msg = "note", f"{hw_id} is not verified upstream (absent from meta.hardware)"
        line = lr.key_line(("meta", "hardware")) if lr.recipe.meta.hardware else lr.key_line(("meta",))
    else:
        sev, msg = "pass", f"upstream recipe marks {hw_id} {status}"
        line = lr.key_line(("meta", "hardware", hw_id))
    return RecipeFinding(rule="recipe-hardware", severity=sev, file=lr.rel, line=line, message=msg,
                         point_id=point_id, config_key=config_key,
                         evidence={"key_path": f"meta.hardware.{hw_id}", "status": status})


class Pin(BaseModel):
    """A selection a recipe link makes (``recipes.vllm.ai/<org>/<repo>?hardware=...``): the recipe file and
    whatever its query names; the rest is chosen as for any point."""

    recipe_path: str | None = None
    hardware: str | None = None
    variant: str | None = None
    strategy: str | None = None
    features: list[str] | None = None
    modes: dict[str, str] = Field(default_factory=dict)


def check_point(repo: RecipeRepo, index: VariantIndex, facts: PointFacts, launch: PointLaunchArgs,
                table: ArgTable, pin: Pin | None = None) -> PointCheck:
    """Select, render and compare one point (spec section 4.1-4.3, 4.5); ``pin`` narrows the selection."""
    pin = pin or Pin()
    found = index.find(facts.model, facts.precision, pin.recipe_path)
    if isinstance(found, str) or pin.variant is None:
        pass
    elif pin.variant in found[0].recipe.variants:
        found = (found[0], pin.variant)
    if isinstance(found, str):
        return PointCheck(point=facts, matched=False, reason=found, launch_source=launch.source, findings=[
            RecipeFinding(rule="recipe-args", severity="warning", file=launch.source, line=None, message=found,
                          point_id=facts.point_id, config_key=facts.config_key)])
    lr, vkey = found
    hw_id = pin.hardware or table.taxonomy_id(facts.hardware)
    profiles = repo.taxonomy.hardware_profiles
    base = PointCheck(point=facts, matched=False, recipe_file=lr.rel, launch_source=launch.source)
    if hw_id not in profiles:
        base.reason = f"hardware {facts.hardware} has no recipes taxonomy id (add it to recipe-args.yaml hardware:)"
        return base
    n = normalise(launch.argv)
    lay = layout_of(n)
    strategy = pin.strategy or lay.strategy
    hw = profiles[hw_id]
    hw_find = hardware_finding(lr, hw_id, facts.point_id, facts.config_key)
    if strategy not in offered_strategies(lr.recipe) or not strategy_supported(lr.recipe, strategy, hw_id, hw):
        msg = f"recipe offers no {strategy} on {hw_id}"
        base.reason = msg
        base.findings = [hw_find, RecipeFinding(
            rule="recipe-args", severity="error", file=lr.rel, line=lr.key_line(("compatible_strategies",)),
            message=msg, point_id=facts.point_id, config_key=facts.config_key,
            evidence={"layout": lay.model_dump(), "offered": offered_strategies(lr.recipe)})]
        return base
    feats, modes = features_for(lr, vkey, hw_id, n, facts.spec_decoding, repo)
    if pin.features is not None:
        feats = list(pin.features)
    modes.update(pin.modes)
    sel = RecipeSelection(recipe_path=lr.rel, recipe_commit=repo.commit, variant=vkey, strategy=strategy,
                          hardware=hw_id, features=feats, modes=modes)
    try:
        rendering = render(repo, sel, lr)
    except InfxError as exc:
        base.reason = str(exc.diagnostics[0])
        return base
    check = PointCheck(point=facts, matched=True, selection=sel, recipe_file=lr.rel, rendering=rendering,
                       launch_source=launch.source, rows=compare(launch, facts.model, rendering, table))
    check.findings = [hw_find, *args_findings(check)]
    return check


# ---- catalog points and their launches ---------------------------------------------------------------


class CheckRequest(BaseModel):
    """``infx recipes check``: which catalog points, which recipes checkout."""

    recipes_repo: Path
    recipes_commit: str | None = None
    config_files: list[Path] = Field(default_factory=list)
    runner_config: Path | None = None
    config_keys: list[str] | None = None
    table: Path | None = None


def point_launches(points: Sequence[tuple[str, Any]], workspace: Any) -> dict[str, tuple[PointFacts,
                                                                                  PointLaunchArgs | str]]:
    """For each ``(config key, Point)``: its facts and what it launches (a typed infx recipe rendered by
    ``engines.render``, else its InferenceX bench script rendered in the sandbox; all scripts are
    rendered together first), or why nothing can be compared. Keyed by point id."""
    from infx.engines.hardware import UnknownHardware, hardware_for_runner
    from infx.engines.recipes import workspace_recipes
    from infx.engines.render import render_launch
    from infx.engines.scripts.locate import workflow_env
    from infx.engines.scripts.source import server_env

    ws = workspace
    recipes = workspace_recipes(None, ws)
    scripts = recipes.scripts
    typed: set[str] = set()
    hw_of: dict[str, str] = {}
    for _, p in points:
        try:
            hw_of[p.point_id] = hardware_for_runner(p.runner).sku
        except UnknownHardware:
            hw_of[p.point_id] = p.runner
        if recipes.candidates(p, hw_of[p.point_id]):
            typed.add(p.point_id)
    if scripts is not None:
        scripts.prefetch([p for _, p in points if p.point_id not in typed])
    texts: dict[str, str | None] = {}

    def text_of(path: Path) -> str | None:
        if str(path) not in texts:
            try:
                texts[str(path)] = path.read_text(errors="replace")
            except OSError:
                texts[str(path)] = None
        return texts[str(path)]

    out: dict[str, tuple[PointFacts, PointLaunchArgs | str]] = {}
    for key, p in points:
        facts = PointFacts(config_key=key, point_id=p.point_id, model=p.model, precision=p.precision,
                           hardware=hw_of[p.point_id], spec_decoding=p.spec_decoding, tp=p.tp, ep=p.ep,
                           dp_attn=p.dp_attn, conc=p.concs[0])
        try:
            if p.point_id in typed:
                launch = render_launch(p, recipes, runtime="local")
                file = Path(launch.recipe_file) if launch.recipe_file else None
                rel = (str(file.relative_to(ws.root)) if file is not None and file.is_relative_to(ws.root)
                       else (launch.recipe_file or launch.recipe))
                out[p.point_id] = (facts, PointLaunchArgs(argv=launch.argv, env=launch.env, source=rel, kind="typed",
                                                          text=text_of(file) if file is not None else None))
                continue
            lookup = scripts.lookup(p) if scripts is not None else None
            if lookup is None or lookup.path is None:
                out[p.point_id] = (facts, "no infx recipe and no bench script renders this point")
                continue
            sr = scripts.render(p, lookup, p.concs[0])
            if sr.error or sr.server is None:
                out[p.point_id] = (facts, f"bench script {lookup.path} failed: {sr.error or 'no server launched'}")
                continue
            env = server_env(sr, workflow_env(p, p.concs[0], lookup.path))
            out[p.point_id] = (facts, PointLaunchArgs(argv=[sr.server.name, *sr.server.argv], env=env,
                                                      source=lookup.path, kind="script",
                                                      text=text_of(ws.root / lookup.path)))
        except InfxError as exc:
            out[p.point_id] = (facts, str(exc.diagnostics[0]))
    return out


def catalog_checks(req: CheckRequest, workspace: Any = None) -> list[PointCheck]:
    """Check every single-node vLLM point of the selected catalog entries."""
    from infx.matrix.select import keyed_points
    from infx.workspace import current

    ws = workspace or current()
    config_files = req.config_files or ws.require_config_files()
    keyed = keyed_points(config_files, req.runner_config or ws.runner_config, req.config_keys)
    keyed = [(k, p) for k, p in keyed if p.framework == "vllm" and not p.multinode and not p.disagg]
    repo = RecipeRepo(req.recipes_repo, req.recipes_commit)
    table = arg_table(req.table if req.table is not None else ws.root / "recipe-args.yaml")
    index = VariantIndex(repo)
    out: list[PointCheck] = []
    for facts, launch in point_launches(keyed, ws).values():
        if isinstance(launch, str):
            out.append(PointCheck(point=facts, matched=False, reason=launch))
        else:
            out.append(check_point(repo, index, facts, launch, table))
    return out
