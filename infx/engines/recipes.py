"""Typed, layered engine recipes (``recipes/*.yaml``).

A recipe says *how* to serve the points it matches (by model-prefix, precision, framework,
scenario and optionally hardware): which engine adapter, which arguments and environment. Arguments
and environment are data, applied in layers, in this order::

    base  ->  vendor[amd|nvidia|cpu]  ->  hardware[mi355x|b200|cpu...]  ->  rules (when: ...)

A later layer overrides a key of an earlier one; ``null`` (or ``false`` for a flag) removes it;
mappings (JSON-valued flags such as ``compilation-config``) merge key by key.

Values: a string starting with ``=`` is an expression of point fields evaluated by
:mod:`infx.engines.expr` (``"= max(2 * conc, 128) * (1 + spec_tokens)"``); ``true`` renders a
bare flag; a mapping renders as compact JSON; a list renders as several values after one flag.
Everything is validated when loaded, with ``FILE:LINE:COL`` diagnostics.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infx.diagnostics import Diagnostic, InfxError, PathElem, Severity
from infx.engines.expr import Expr, ExprError
from infx.matrix.point import Point
from infx.workspace import Workspace
from infx.workspace import current as current_workspace
from infx.yamlsource import YamlSource, load_yaml

Scalar = str | int | float | bool | None
ArgValue = Scalar | list[Any] | dict[str, Any]

#: Point fields by their row names (``dp-attn``), as recipes and diagnostics spell them.
POINT_FIELDS: tuple[str, ...] = tuple(f.alias or n for n, f in Point.model_fields.items())

#: Names usable in expressions: point fields in snake_case plus derived values.
DERIVED_NAMES = {
    "spec_tokens": ("spec-decoding",),  # the recipe's speculative tokens when spec-decoding != none, else 0
    "gpus": ("tp", "pp", "pcp-size"),  # GPUs per engine instance
}
EXPR_NAMES: dict[str, tuple[str, ...]] = {
    f.replace("-", "_"): (f,)
    for f in POINT_FIELDS
    if f not in ("prefill", "decode", "router", "kv-offload-backend", "point-id", "exp-name", "recipe-fingerprint")
}
EXPR_NAMES.update(DERIVED_NAMES)

ENGINES = ("vllm", "sglang", "trt")


def is_expr(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("=") and not value.startswith("==")


def unescape(value: Any) -> Any:
    """``"==x"`` is the literal string ``"=x"``."""
    if isinstance(value, str) and value.startswith("=="):
        return value[1:]
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", populate_by_name=True, frozen=True)


class Layer(_Strict):
    """Engine arguments, environment and (TRT-LLM) options contributed by one layer."""

    args: dict[str, ArgValue] = Field(default_factory=dict)
    env: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("args")
    @classmethod
    def _flag_names(cls, v: dict[str, ArgValue]) -> dict[str, ArgValue]:
        for k in v:
            name = k.lstrip("-")
            if not name or any(c.isspace() for c in name) or "=" in name:
                raise ValueError(f"'{k}' is not a flag name (write it without '--', e.g. max-model-len)")
        return v

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k in v:
            if not k or not (k[0].isalpha() or k[0] == "_") or not all(c.isalnum() or c == "_" for c in k):
                raise ValueError(f"'{k}' is not an environment variable name")
        return v


class Rule(Layer):
    """A layer applied only to points that satisfy ``when``.

    ``when`` is either a mapping of point fields to a value (or a list of accepted values), all of
    which must hold, e.g. ``{tp: 2}`` / ``{conc: [64, 128]}``, or an expression string such as
    ``"tp >= 4 and conc > 8"``.
    """

    when: dict[str, Scalar | list[Scalar]] | str

    @field_validator("when")
    @classmethod
    def _when_fields(cls, v: Any) -> Any:
        if isinstance(v, dict):
            if not v:
                raise ValueError("'when' needs at least one condition")
            for k in v:
                if k not in POINT_FIELDS:
                    raise ValueError(f"'when' names unknown point field '{k}' (known: {', '.join(POINT_FIELDS)})")
        return v


StrOrList = str | list[str]


class Match(_Strict):
    """Which points the recipe serves. Strings may be fnmatch globs; lists mean any-of."""

    model_prefix: StrOrList = Field(alias="model-prefix")
    precision: StrOrList = "*"
    framework: StrOrList
    scenario: StrOrList = "*"
    hardware: StrOrList = "*"

    def specificity(self) -> int:
        return sum(1 for v in (self.precision, self.scenario, self.hardware) if v != "*")


class ModelSource(_Strict):
    """Where the engine loads weights from: the point's hub model id, or a local directory.

    ``local`` is relative to the repository/run directory; ``builder: tiny-model`` says infx builds
    that directory itself (``infx engine build-tiny-model``) when it is missing.
    """

    hub: Literal["point"] | str | None = None
    local: str | None = None
    builder: Literal["tiny-model"] | None = None

    @model_validator(mode="after")
    def _one(self) -> ModelSource:
        if (self.hub is None) == (self.local is None):
            raise ValueError("model-source needs exactly one of 'hub' or 'local'")
        if self.builder and not self.local:
            raise ValueError("'builder' only applies to a 'local' model-source")
        return self


class Recipe(_Strict):
    name: str | None = None
    description: str | None = None
    match: Match
    engine: Literal["vllm", "sglang", "trt"]
    entrypoint: list[str] | None = None  # default per engine; "python" means this interpreter
    model_source: ModelSource = Field(default_factory=lambda: ModelSource(hub="point"), alias="model-source")
    served_model_name: str | None = Field(None, alias="served-model-name")
    spec_tokens: int | None = Field(None, alias="spec-tokens", ge=1)
    ignore: list[str] = Field(default_factory=list)
    base: Layer = Field(default_factory=Layer)
    vendor: dict[Literal["amd", "nvidia", "cpu"], Layer] = Field(default_factory=dict)
    hardware: dict[str, Layer] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)

    @field_validator("ignore")
    @classmethod
    def _ignore_fields(cls, v: list[str]) -> list[str]:
        for k in v:
            if k not in POINT_FIELDS:
                raise ValueError(f"'ignore' names unknown point field '{k}' (known: {', '.join(POINT_FIELDS)})")
        return v

    @field_validator("entrypoint")
    @classmethod
    def _entrypoint(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and not v:
            raise ValueError("entrypoint must not be empty")
        return v


@dataclass
class LoadedRecipe:
    """A validated recipe with the YAML source it came from (for diagnostics)."""

    name: str
    recipe: Recipe
    src: YamlSource

    @property
    def file(self) -> str:
        return self.src.file

    def diag(self, path: Iterable[PathElem], message: str, severity: Severity = "error") -> Diagnostic:
        return self.src.diag(tuple(path), message, severity)

    def layers(self) -> list[tuple[tuple[PathElem, ...], Layer]]:
        """All layers with their YAML paths (rules included, unconditioned)."""
        r = self.recipe
        out: list[tuple[tuple[PathElem, ...], Layer]] = [(("base",), r.base)]
        out += [(("vendor", k), v) for k, v in r.vendor.items()]
        out += [(("hardware", k), v) for k, v in r.hardware.items()]
        out += [(("rules", i), v) for i, v in enumerate(r.rules)]
        return out


def _glob_match(pattern: StrOrList, value: str | None) -> bool:
    pats = [pattern] if isinstance(pattern, str) else pattern
    return value is not None and any(fnmatch.fnmatchcase(value, p) for p in pats)


@dataclass
class RecipeSet:
    recipes: list[LoadedRecipe] = field(default_factory=list)
    #: InferenceX bench scripts of the workspace (infx.engines.scripts.source.ScriptSource): the
    #: recipe source of points that no typed recipe matches.
    scripts: Any = None

    def __iter__(self) -> Iterator[LoadedRecipe]:
        return iter(self.recipes)

    def __len__(self) -> int:
        return len(self.recipes)

    def by_name(self, name: str) -> LoadedRecipe:
        for r in self.recipes:
            if r.name == name:
                return r
        raise KeyError(name)

    def candidates(self, point: Point, hardware_sku: str) -> list[LoadedRecipe]:
        out = []
        for r in self.recipes:
            m = r.recipe.match
            if (
                _glob_match(m.model_prefix, point.model_prefix)
                and _glob_match(m.precision, point.precision)
                and _glob_match(m.framework, point.framework)
                and _glob_match(m.scenario, point.scenario_type)
                and _glob_match(m.hardware, hardware_sku)
            ):
                out.append(r)
        return out

    def match(self, point: Point, hardware_sku: str) -> LoadedRecipe:
        """The one recipe for ``point``: the most specific match; ties and no match are errors."""
        found = self.candidates(point, hardware_sku)
        if not found:
            raise InfxError(
                f"no recipe matches point {point.point_id} (model-prefix={point.model_prefix}, "
                f"precision={point.precision}, framework={point.framework}, scenario={point.scenario_type}, "
                f"hardware={hardware_sku}); recipes: {', '.join(r.name for r in self.recipes) or 'none'}"
            )
        best = max(r.recipe.match.specificity() for r in found)
        top = [r for r in found if r.recipe.match.specificity() == best]
        if len(top) > 1:
            names = ", ".join(f"{r.name} ({r.file})" for r in top)
            raise InfxError(f"point {point.point_id} matches several recipes equally well: {names}")
        return top[0]


# ---- loading -----------------------------------------------------------------------------------


def _walk_values(value: Any, path: tuple[PathElem, ...]) -> Iterable[tuple[tuple[PathElem, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk_values(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk_values(v, path + (i,))


def _names(source: str) -> set[str]:
    try:
        return Expr(source).names
    except ExprError:
        return set()


def _check_expressions(loaded: LoadedRecipe) -> list[Diagnostic]:
    """Parse every expression once at load time; unknown names are reported with file:line."""
    diags = []
    for lpath, layer in loaded.layers():
        items: list[tuple[tuple[PathElem, ...], Any]] = []
        for section in ("args", "env", "options"):
            for k, v in getattr(layer, section).items():
                items.extend(_walk_values(v, lpath + (section, k)))
        if isinstance(layer, Rule) and isinstance(layer.when, str):
            items.append((lpath + ("when",), "=" + layer.when))
        for path, v in items:
            if not is_expr(v):
                continue
            try:
                e = Expr(v[1:].strip())
            except ExprError as exc:
                diags.append(loaded.diag(path, str(exc)))
                continue
            unknown = sorted(n for n in e.names if n not in EXPR_NAMES)
            for n in unknown:
                diags.append(loaded.diag(path, f"unknown name '{n}' in expression {v[1:].strip()!r} "
                                               f"(known: {', '.join(sorted(EXPR_NAMES))})"))
    if loaded.recipe.spec_tokens is None:
        for lpath, layer in loaded.layers():
            for section in ("args", "env", "options"):
                for k, v in getattr(layer, section).items():
                    for path, x in _walk_values(v, lpath + (section, k)):
                        if is_expr(x) and "spec_tokens" in _names(x[1:]):
                            diags.append(loaded.diag(
                                path, "expression uses 'spec_tokens' but the recipe sets no 'spec-tokens'"))
    return diags


def parse_recipe(src: YamlSource) -> LoadedRecipe:
    if not isinstance(src.data, dict):
        raise InfxError(Diagnostic("a recipe file must hold a mapping", src.file, 1, 1))
    try:
        recipe = Recipe.model_validate(src.data)
    except ValidationError as exc:
        raise InfxError(src.diags_from_validation(exc)) from None
    name = recipe.name or Path(src.file).stem
    loaded = LoadedRecipe(name=name, recipe=recipe, src=src)
    diags = _check_expressions(loaded)
    if diags:
        raise InfxError(diags)
    return loaded


def _recipe_files(paths_or_dir: str | Path | Iterable[str | Path]) -> list[Path]:
    items = [paths_or_dir] if isinstance(paths_or_dir, (str, Path)) else list(paths_or_dir)
    files: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            files.extend(sorted(list(p.glob("*.yaml")) + list(p.glob("*.yml"))))
        else:
            files.append(p)
    return files


def load_recipes(paths_or_dir: str | Path | Iterable[str | Path]) -> RecipeSet:
    """Load and validate recipes from a directory (``*.yaml``), a file, or a list of either.

    Every file is checked; all diagnostics are raised together as one :class:`InfxError`.
    """
    diags: list[Diagnostic] = []
    out: list[LoadedRecipe] = []
    seen: dict[str, str] = {}
    for f in _recipe_files(paths_or_dir):
        try:
            loaded = parse_recipe(load_yaml(f))
        except InfxError as exc:
            diags.extend(exc.diagnostics)
            continue
        if loaded.name in seen:
            diags.append(loaded.diag(("name",), f"recipe '{loaded.name}' is also defined in {seen[loaded.name]}"))
            continue
        seen[loaded.name] = loaded.file
        out.append(loaded)
    if diags:
        raise InfxError(diags)
    return RecipeSet(out)


def load_layered_recipes(dirs: Sequence[str | Path]) -> RecipeSet:
    """Recipes from several directories in order; a recipe in a later directory replaces one of the
    same name from an earlier one (a workspace recipe overrides a built-in one)."""
    by_name: dict[str, LoadedRecipe] = {}
    for d in dirs:
        for r in load_recipes(d):
            by_name[r.name] = r
    return RecipeSet(list(by_name.values()))


def workspace_recipes(recipes: str | Path | None = None, workspace: Workspace | None = None) -> RecipeSet:
    """The recipes a command uses: ``recipes`` when given (a directory, a file), else the built-in
    recipes overlaid with the workspace's ``recipes/`` (default: the current workspace)."""
    ws = workspace or current_workspace()
    out = load_recipes(recipes) if recipes is not None else load_layered_recipes(ws.recipe_dirs())
    out.scripts = workspace_scripts(ws)
    return out


def workspace_scripts(ws: Workspace) -> Any:
    """The workspace's bench scripts (``benchmarks/single_node/``), or None when it has none."""
    if not (ws.benchmarks_dir / "single_node").is_dir():
        return None
    from infx.engines.scripts.source import ScriptSource

    return ScriptSource(root=ws.root, benchmarks=ws.paths.benchmarks)


def recipe_files(recipes: str | Path | None = None, workspace: Workspace | None = None) -> list[Path]:
    """The recipe files behind :func:`workspace_recipes` (for the placeholder scan and hashes)."""
    if recipes is not None:
        return _recipe_files(recipes)
    return _recipe_files((workspace or current_workspace()).recipe_dirs())
