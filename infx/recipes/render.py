"""Render an upstream recipe selection into the ``vllm serve`` argv, env and image the recipes site
shows, each token with the file:line that contributed it.

The rules (the recipes site's semantics, as the spec's section 3 states them):

* parallel size: ``single_node_tp`` takes the variant's ``tp``, else ``strategy_overrides.single_node_tp.tp``,
  else auto-fit (1 when ``vram_minimum_gb`` fits one GPU, else the node's GPU count); a map is looked up
  exact GPU id > generation > lower-case brand > ``default``; clamped to the GPU count except on CPUs.
  Every other single-node strategy uses the GPU count.
* args in order: base args; variant args and the variant's exact-GPU args; the strategy's args and its
  parallel flag with the size; the strategy override's args; hardware args (a strategy-level generation
  block REPLACES the recipe's and the variant's generation blocks, which are otherwise both applied),
  then the strategy override's exact-GPU args; the features. Then each flag's last unit wins.
* env: the same layers merged later-wins; image: exact-GPU variant image > variant image > model image
  (a string is NVIDIA-only; a brand map falls through per brand) > the brand's default.

Single-node strategies only: multi-node and prefill/decode renderings are not built yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from infx.diagnostics import Diagnostic, InfxError, PathElem
from infx.recipes.model import Feature, HardwareProfile, Override, Recipe, Strategy, Variant
from infx.recipes.source import LoadedFile, LoadedRecipe, RecipeRepo

DERIVED = "<derived>"
#: Precisions upstream restricts to NVIDIA Blackwell unless the variant says otherwise.
PRECISION_HARDWARE = {"nvfp4": {"brand": "NVIDIA", "generation": "blackwell"},
                      "fp4": {"brand": "NVIDIA", "generation": "blackwell"}}


class TokenSource(BaseModel):
    """Where a rendered token came from: a YAML location, or ``<derived>`` for a computed value."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int | None = None
    key_path: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


class RecipeSelection(BaseModel):
    """What to render: a recipe, its variant, a strategy, a hardware id, the features and modes."""

    recipe_path: str
    recipe_commit: str | None = None
    variant: str = "default"
    strategy: str
    hardware: str
    features: list[str] | None = None  # None: the site's defaults
    modes: dict[str, str] = Field(default_factory=dict)
    node_count: int = 1


class RecipeRendering(BaseModel):
    selection: RecipeSelection
    argv: list[str]
    env: dict[str, str]
    docker_image: str | None
    deploy_type: str
    features: list[str]  # the features that contributed (after the strategy allowlists)
    modes: dict[str, str]  # the mode each modes-feature resolved to
    provenance: list[TokenSource]  # one per argv token
    env_provenance: dict[str, TokenSource]
    image_provenance: TokenSource
    warnings: list[str] = Field(default_factory=list)

    @property
    def model(self) -> str:
        return self.argv[2]


def js_string(v: Any) -> str:
    """A YAML scalar as the site's JavaScript would print it (``true``, ``1``, ``0.9``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def keyed(mapping: Any, hw_id: str, hw: HardwareProfile) -> tuple[Any, str | None]:
    """A hardware-keyed map's value: exact GPU id > generation > lower-case brand > ``default``
    (a key holding null counts as absent). Returns the value and the key it came from."""
    if not isinstance(mapping, dict):
        return None, None
    brand = hw.brand.lower() if isinstance(hw.brand, str) else None
    for k in (hw_id, hw.gen, brand, "default"):
        if k is not None and mapping.get(k) is not None:
            return mapping[k], k
    return None, None


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def default_features(recipe: Recipe, variant: str, hardware: str) -> list[str]:
    """The site's default features: all, minus ``opt_in_features`` and the hardware's opt-ins, plus
    every feature the variant's ``default_modes`` names; in the recipe's order."""
    v = recipe.variants.get(variant)
    forced = set(v.default_modes) if v else set()
    off = set(recipe.opt_in_features) | set(recipe.hardware_opt_in_features.get(hardware, []))
    return [f for f in recipe.features if f not in off or f in forced]


def precision_compatible(hw: HardwareProfile, variant: Variant) -> bool:
    c: dict[str, str] = variant.precision_hardware or PRECISION_HARDWARE.get(variant.precision or "") or {}
    if not c:
        return True
    if c.get("brand") and hw.brand != c["brand"]:
        return False
    return not (c.get("generation") and c["generation"] not in hw.gens)


def strategy_supported(recipe: Recipe, strategy: str, hw_id: str, hw: HardwareProfile) -> bool:
    gate, _ = keyed(recipe.strategy_hardware.get(strategy), hw_id, hw)
    if gate is not None:
        return bool(gate != "unsupported")
    return strategy in recipe.compatible_strategies


def offered_strategies(recipe: Recipe) -> list[str]:
    """``compatible_strategies`` plus the strategies ``strategy_hardware`` grants somewhere."""
    listed = list(recipe.compatible_strategies)
    extra = [s for s, m in recipe.strategy_hardware.items()
             if s not in listed and isinstance(m, dict) and "supported" in m.values()]
    return listed + extra


def resolve_mode(feature: Feature, fkey: str, variant: Variant, vkey: str, hw_id: str, hw: HardwareProfile,
                 wanted: str | None) -> str | None:
    """The mode a modes-feature takes: among the modes allowed for the variant and the hardware, the
    requested one, else the variant's ``default_modes``, else ``default_mode``, else the first."""
    if not feature.modes:
        return None
    allowed = [k for k, m in feature.modes.items() if mode_allowed(m, vkey, hw_id, hw)]
    for c in (wanted, variant.default_modes.get(fkey), feature.default_mode):
        if c and c in allowed:
            return c
    return allowed[0] if allowed else None


def mode_allowed(mode: Any, vkey: str, hw_id: str, hw: HardwareProfile) -> bool:
    if mode.variants and vkey not in mode.variants:
        return False
    gates = mode.hardware or {}
    return not ((hw.gen and gates.get(hw.gen) == "unsupported") or gates.get(hw_id) == "unsupported")


@dataclass
class _Tok:
    text: str
    src: TokenSource


class _Builder:
    def __init__(self, lr: LoadedRecipe) -> None:
        self.lr = lr
        self.toks: list[_Tok] = []
        self.env: dict[str, str] = {}
        self.env_src: dict[str, TokenSource] = {}

    def src(self, path: tuple[PathElem, ...], f: LoadedFile | None = None) -> TokenSource:
        f = f or self.lr
        return TokenSource(file=f.rel, line=f.line(path), key_path=".".join(str(p) for p in path))

    def args(self, values: list[str] | None, path: tuple[PathElem, ...], f: LoadedFile | None = None) -> None:
        for i, a in enumerate(values or []):
            if a:  # the site drops empty tokens
                self.toks.append(_Tok(js_string(a), self.src(path + (i,), f)))

    def envs(self, values: dict[str, Any] | None, path: tuple[PathElem, ...], f: LoadedFile | None = None) -> None:
        for k, v in (values or {}).items():
            self.env[k] = js_string(v)
            self.env_src[k] = self.src(path + (k,), f)


def _block(overrides: dict[str, Override], key: str | None, nvidia: bool) -> tuple[Override | None, str]:
    """``overrides[gen]``, else ``overrides[nvidia]`` on NVIDIA hardware (an empty block counts)."""
    if key is not None and key in overrides and overrides[key] is not None:
        return overrides[key], key
    if nvidia and overrides.get("nvidia") is not None:
        return overrides["nvidia"], "nvidia"
    return None, ""


def dedupe(toks: list[_Tok]) -> list[_Tok]:
    """Each flag's last unit (the flag and its value, when the next token is not a flag) wins;
    positionals all stay; the original order is kept."""
    units: list[tuple[str | None, list[_Tok]]] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.text.startswith("-"):
            if i + 1 < len(toks) and not toks[i + 1].text.startswith("-"):
                units.append((t.text, [t, toks[i + 1]]))
                i += 2
                continue
            units.append((t.text, [t]))
        else:
            units.append((None, [t]))
        i += 1
    last = {flag: n for n, (flag, _) in enumerate(units) if flag is not None}
    return [t for n, (flag, ts) in enumerate(units) if flag is None or last[flag] == n for t in ts]


def _fail(f: LoadedFile, path: tuple[PathElem, ...], msg: str) -> InfxError:
    return InfxError(f.diag(path, msg))


def single_node_parallel(lr: LoadedRecipe, vkey: str, strategy: str, hw_id: str,
                         hw: HardwareProfile) -> tuple[int, TokenSource]:
    """The parallel size of a single-node strategy and where it came from."""
    recipe = lr.recipe
    v = recipe.variants[vkey]
    n = hw.gpus
    cpu = hw.generation == "cpu"
    if strategy != "single_node_tp":
        return n, TokenSource(file=DERIVED, key_path=f"taxonomy.hardware_profiles.{hw_id}.gpu_count")
    so = recipe.strategy_overrides.get(strategy)
    declared: list[tuple[Any, tuple[PathElem, ...]]] = [(v.tp, ("variants", vkey, "tp")),
                                                        (so.tp if so else None, ("strategy_overrides", strategy, "tp"))]
    for raw, path in declared:
        at: tuple[PathElem, ...] = path
        if _num(raw):
            tp: Any = raw
        else:
            tp, k = keyed(raw, hw_id, hw)
            if k is not None:
                at = path + (k,)
        if _num(tp) and tp > 0:
            src = TokenSource(file=lr.rel, line=lr.line(at), key_path=".".join(str(p) for p in at))
            return (int(tp) if cpu else int(min(tp, n))), src
    per_gpu = (hw.vram_gb / n) if hw.vram_gb and n else 0
    need = recipe.variants[vkey].vram_minimum_gb or 0
    tp = n if (not need or not per_gpu or per_gpu <= 0) else (1 if need <= per_gpu else n)
    return tp, TokenSource(file=DERIVED, key_path=f"auto-fit: vram_minimum_gb {need} vs {per_gpu:g} GB per GPU")


def docker_image(lr: LoadedRecipe, vkey: str, hw_id: str, hw: HardwareProfile) -> tuple[str | None, TokenSource]:
    recipe = lr.recipe
    v = recipe.variants[vkey]
    tpu = hw.generation == "tpu"
    amd = hw.brand == "AMD"
    xpu = hw.generation == "xpu"
    intel = hw.generation == "cpu" or xpu or hw.brand == "Intel"
    brand = "tpu" if tpu else "amd" if amd else "intel" if intel else "nvidia"
    pinned: tuple[str, tuple[PathElem, ...]] | None = None
    cuda: tuple[Any, tuple[PathElem, ...]] | None = None
    exact = v.hardware_overrides.get(hw_id)
    if exact is not None and isinstance(exact.docker_image, str) and exact.docker_image:
        pinned = (exact.docker_image, ("variants", vkey, "hardware_overrides", hw_id, "docker_image"))

    def is_cuda(x: Any) -> bool:
        return isinstance(x, dict) and ("cu129" in x or "cu130" in x)

    for value, path in ((v.docker_image, ("variants", vkey, "docker_image")),
                        (recipe.model.docker_image, ("model", "docker_image"))):
        if not value or pinned or cuda:
            continue
        if isinstance(value, str):
            if brand == "nvidia":
                pinned = (value, path)
        elif isinstance(value, dict):
            if any(b in value for b in ("nvidia", "amd", "tpu", "intel")):
                bv = value.get(brand)
                if isinstance(bv, str):
                    pinned = (bv, path + (brand,))
                elif brand == "nvidia" and is_cuda(bv):
                    cuda = (bv, path + (brand,))
            elif brand == "nvidia" and is_cuda(value):
                cuda = (value, path)

    def at(path: tuple[PathElem, ...]) -> TokenSource:
        return TokenSource(file=lr.rel, line=lr.line(path), key_path=".".join(str(p) for p in path))

    if xpu and not pinned:
        return "vllm/vllm-openai-xpu:latest", TokenSource(file=DERIVED, key_path="default image (xpu)")
    if pinned:
        return pinned[0], at(pinned[1])
    if cuda:
        img = cuda[0].get("cu130") or cuda[0].get("cu129")
        if img:
            return img, at(cuda[1] + ("cu130" if cuda[0].get("cu130") else "cu129",))
    nightly = recipe.model.nightly_required is True
    defaults = ({"nvidia": "vllm/vllm-openai:nightly", "amd": "vllm/vllm-openai-rocm:nightly",
                 "tpu": "vllm/vllm-tpu:nightly"} if nightly else
                {"nvidia": "vllm/vllm-openai:latest", "amd": "vllm/vllm-openai-rocm:latest",
                 "tpu": "vllm/vllm-tpu:latest", "intel": "vllm/vllm-openai-cpu:latest-x86_64"})
    return defaults.get(brand), TokenSource(file=DERIVED, key_path=f"default image ({brand}"
                                                                     f"{', nightly' if nightly else ''})")


def check_selection(repo: RecipeRepo, lr: LoadedRecipe, sel: RecipeSelection,
                    ) -> tuple[Variant, Strategy, LoadedFile, HardwareProfile, list[str]]:
    """The selection's parts, or a one-line error at the file:line that rules it out."""
    recipe = lr.recipe
    if sel.variant not in recipe.variants:
        raise _fail(lr, ("variants",), f"unknown variant '{sel.variant}' (the recipe has: "
                                       f"{', '.join(recipe.variants)})")
    variant = recipe.variants[sel.variant]
    strategies = repo.strategies
    if sel.strategy not in strategies:
        raise _fail(lr, ("compatible_strategies",),
                    f"unknown strategy '{sel.strategy}' (strategies/ has: {', '.join(sorted(strategies))})")
    sfile, strategy = strategies[sel.strategy]
    profiles = repo.taxonomy.hardware_profiles
    if sel.hardware not in profiles:
        raise InfxError(repo.taxonomy_file.diag(("hardware_profiles",),
                                                f"unknown hardware '{sel.hardware}' (taxonomy.yaml has: "
                                                f"{', '.join(profiles)})"))
    hw = profiles[sel.hardware]
    if strategy.deploy_type != "single_node" or sel.node_count != 1:
        raise _fail(sfile, ("deploy_type",), f"strategy '{sel.strategy}' is {strategy.deploy_type}: only single-node "
                                             "renderings are built (multi-node and PD are not yet)")
    if not strategy_supported(recipe, sel.strategy, sel.hardware, hw):
        path: tuple[PathElem, ...] = (("strategy_hardware", sel.strategy) if sel.strategy in recipe.strategy_hardware
                                      else ("compatible_strategies",))
        raise _fail(lr, path, f"the recipe offers no {sel.strategy} on {sel.hardware}")
    if variant.supported_hardware and sel.hardware not in variant.supported_hardware:
        raise _fail(lr, ("variants", sel.variant, "supported_hardware"),
                    f"variant '{sel.variant}' does not run on {sel.hardware} (supported_hardware)")
    warnings = []
    if not precision_compatible(hw, variant):
        warnings.append(f"{lr.rel}:{lr.line(('variants', sel.variant, 'precision'))}: precision "
                        f"'{variant.precision}' is restricted to NVIDIA Blackwell upstream; {sel.hardware} is not")
    if recipe.meta.hardware.get(sel.hardware) == "unsupported":
        warnings.append(f"{lr.rel}:{lr.key_line(('meta', 'hardware', sel.hardware))}: upstream recipe marks "
                        f"{sel.hardware} unsupported")
    if sel.features is not None:
        for f in sel.features:
            if f not in recipe.features:
                raise _fail(lr, ("features",), f"unknown feature '{f}' (the recipe has: {', '.join(recipe.features)})")
            feat = recipe.features[f]
            if feat.strategies and sel.strategy not in feat.strategies:
                raise _fail(lr, ("features", f, "strategies"),
                            f"feature '{f}' is not offered with {sel.strategy} (strategies: "
                            f"{', '.join(feat.strategies)})")
            if feat.modes and not any(mode_allowed(m, sel.variant, sel.hardware, hw) for m in feat.modes.values()):
                raise _fail(lr, ("features", f, "modes"),
                            f"feature '{f}' has no mode for variant '{sel.variant}' on {sel.hardware}")
    for f, m in sel.modes.items():
        mf = recipe.features.get(f)
        if mf is None or not mf.modes:
            raise _fail(lr, ("features", f) if mf else ("features",), f"feature '{f}' has no modes")
        if m not in mf.modes:
            raise _fail(lr, ("features", f, "modes"), f"feature '{f}' has no mode '{m}' (modes: "
                                                      f"{', '.join(mf.modes)})")
        if not mode_allowed(mf.modes[m], sel.variant, sel.hardware, hw):
            raise _fail(lr, ("features", f, "modes", m), f"mode '{m}' of feature '{f}' is excluded for variant "
                                                         f"'{sel.variant}' on {sel.hardware}")
    return variant, strategy, sfile, hw, warnings


def _feature_args(b: _Builder, recipe: Recipe, variant: Variant, sel: RecipeSelection,
                  hw: HardwareProfile) -> tuple[list[str], dict[str, str]]:
    """Step 7: the selected features' args (a mode's, or the hardware block's, or the feature's own), in order;
    the features used and the mode chosen for each moded feature."""
    vkey, sname, hw_id = sel.variant, sel.strategy, sel.hardware
    nvidia, gen = hw.brand == "NVIDIA", hw.gen
    feats = default_features(recipe, vkey, hw_id) if sel.features is None else list(sel.features)
    used: list[str] = []
    modes: dict[str, str] = {}
    for f in feats:
        feat = recipe.features.get(f)
        if feat is None or (feat.strategies and sname not in feat.strategies):
            continue
        fpath: tuple[PathElem, ...] = ("features", f)
        if feat.modes is not None:
            m = resolve_mode(feat, f, variant, vkey, hw_id, hw, sel.modes.get(f))
            if m is None:
                continue
            modes[f] = m
            mode = feat.modes[m]
            mpath = fpath + ("modes", m)
            ho, hk = keyed(mode.hardware_overrides, hw_id, hw)
            if ho is not None and ho.args is not None and hk is not None:
                b.args(ho.args, mpath + ("hardware_overrides", hk, "args"))
            else:
                b.args(mode.args, mpath + ("args",))
            used.append(f)
            continue
        fho = feat.hardware_overrides or {}
        blk = fho.get(gen) if gen is not None and fho.get(gen) is not None else None
        bkey = gen or ""
        if blk is None and nvidia and fho.get("nvidia") is not None:
            blk, bkey = fho["nvidia"], "nvidia"
        if blk is not None and blk.args is not None:
            b.args(blk.args, fpath + ("hardware_overrides", bkey, "args"))
        else:
            b.args(feat.args, fpath + ("args",))
        used.append(f)
    return used, modes


def render(repo: RecipeRepo, sel: RecipeSelection, lr: LoadedRecipe | None = None) -> RecipeRendering:
    """Render ``sel`` (single-node strategies only). Bad selections raise :class:`InfxError`."""
    lr = lr or repo.recipe(sel.recipe_path)
    recipe = lr.recipe
    vkey, sname, hw_id = sel.variant, sel.strategy, sel.hardware
    variant, strategy, sfile, hw, warnings = check_selection(repo, lr, sel)
    nvidia = hw.brand == "NVIDIA"
    gen = hw.gen
    b = _Builder(lr)
    vpath: tuple[PathElem, ...] = ("variants", vkey)
    exact = variant.hardware_overrides.get(hw_id)
    so = recipe.strategy_overrides.get(sname)
    sopath: tuple[PathElem, ...] = ("strategy_overrides", sname)

    # 1-2: base, variant, the variant's exact-GPU block
    b.args(recipe.model.base_args, ("model", "base_args"))
    b.args(variant.extra_args, vpath + ("extra_args",))
    if exact is not None:
        b.args(exact.extra_args, vpath + ("hardware_overrides", hw_id, "extra_args"))
    # 3: strategy args and its parallel flag
    b.args(strategy.vllm_args, ("vllm_args",), sfile)
    size, size_src = single_node_parallel(lr, vkey, sname, hw_id, hw)
    flag = strategy.parallel_flag or "--tensor-parallel-size"
    flag_src = (b.src(("parallel_flag",), sfile) if strategy.parallel_flag
                else TokenSource(file=DERIVED, key_path="default parallel flag"))
    b.toks += [_Tok(flag, flag_src), _Tok(str(size), size_src)]
    # 4: strategy override args
    if so is not None:
        b.args(so.extra_args, sopath + ("extra_args",))
        b.args(so.vllm_args, sopath + ("vllm_args",))
    # 5: hardware
    so_gen, so_gen_key = _block(so.hardware_overrides, gen, nvidia) if so else (None, "")
    if so_gen is not None:
        b.args(so_gen.extra_args, sopath + ("hardware_overrides", so_gen_key, "extra_args"))
    else:
        r_gen, r_key = _block(recipe.hardware_overrides, gen, nvidia)
        if r_gen is not None:
            b.args(r_gen.extra_args, ("hardware_overrides", r_key, "extra_args"))
        v_gen, v_key = _block(variant.hardware_overrides, gen, nvidia)
        if v_gen is not None:
            b.args(v_gen.extra_args, vpath + ("hardware_overrides", v_key, "extra_args"))
    so_exact = so.hardware_overrides.get(hw_id) if so else None
    if so_exact is not None:
        b.args(so_exact.extra_args, sopath + ("hardware_overrides", hw_id, "extra_args"))
    # 7: features
    used, modes = _feature_args(b, recipe, variant, sel, hw)

    toks = dedupe(b.toks)
    names = {t.text.split("=", 1)[0] for t in toks if t.text.startswith("--") and "=" in t.text}
    for t in toks:
        if t.text in names:
            warnings.append(f"{t.src}: both {t.text}=... and {t.text} ... survive (upstream dedupes exact tokens)")

    # env
    b.envs(recipe.model.base_env, ("model", "base_env"))
    b.envs(variant.extra_env, vpath + ("extra_env",))
    if exact is not None:
        b.envs(exact.extra_env, vpath + ("hardware_overrides", hw_id, "extra_env"))
    b.envs(strategy.env, ("env",), sfile)
    if so is not None:
        b.envs(so.env, sopath + ("env",))
        b.envs(so.extra_env, sopath + ("extra_env",))
    if so_gen is not None:
        b.envs(so_gen.extra_env, sopath + ("hardware_overrides", so_gen_key, "extra_env"))
    else:
        r_gen, r_key = _block(recipe.hardware_overrides, gen, nvidia)
        if r_gen is not None:
            b.envs(r_gen.extra_env, ("hardware_overrides", r_key, "extra_env"))
        v_gen, v_key = _block(variant.hardware_overrides, gen, nvidia)
        if v_gen is not None:
            b.envs(v_gen.extra_env, vpath + ("hardware_overrides", v_key, "extra_env"))
    if so_exact is not None:
        b.envs(so_exact.extra_env, sopath + ("hardware_overrides", hw_id, "extra_env"))

    image, image_src = docker_image(lr, vkey, hw_id, hw)
    model = variant.model_id or recipe.model.model_id or "unknown"
    model_path: tuple[PathElem, ...] = vpath + ("model_id",) if variant.model_id else ("model", "model_id")
    head = [TokenSource(file=DERIVED, key_path="vllm"), TokenSource(file=DERIVED, key_path="serve"), b.src(model_path)]
    return RecipeRendering(
        selection=sel.model_copy(update={"recipe_commit": repo.commit}),
        argv=["vllm", "serve", model, *(t.text for t in toks)],
        env=b.env, docker_image=image, deploy_type=strategy.deploy_type, features=used, modes=modes,
        provenance=head + [t.src for t in toks], env_provenance=b.env_src, image_provenance=image_src,
        warnings=[str(w) for w in warnings],
    )


def listed_hardware(repo: RecipeRepo, recipe: Recipe, vkey: str) -> list[str]:
    """The hardware a variant renders on: the ids the recipe lists (``meta.hardware``; every taxonomy
    profile when it lists none) that the taxonomy knows, not ``unsupported``, precision-compatible
    and in the variant's ``supported_hardware``."""
    profiles = repo.taxonomy.hardware_profiles
    v = recipe.variants[vkey]
    ids = list(recipe.meta.hardware) or list(profiles)
    return [h for h in ids if h in profiles and recipe.meta.hardware.get(h) != "unsupported"
            and precision_compatible(profiles[h], v)
            and (not v.supported_hardware or h in v.supported_hardware)]


def single_node_combinations(repo: RecipeRepo, lr: LoadedRecipe) -> list[RecipeSelection]:
    """Every (variant, offered single-node strategy, listed hardware) of a recipe, default features."""
    out = []
    recipe = lr.recipe
    profiles = repo.taxonomy.hardware_profiles
    for vkey in recipe.variants:
        for hw in listed_hardware(repo, recipe, vkey):
            for s in offered_strategies(recipe):
                st = repo.strategies.get(s)
                if st is None or st[1].deploy_type != "single_node":
                    continue
                if not strategy_supported(recipe, s, hw, profiles[hw]):
                    continue
                out.append(RecipeSelection(recipe_path=lr.rel, recipe_commit=repo.commit, variant=vkey, strategy=s,
                                           hardware=hw))
    return out


def render_error_line(exc: InfxError) -> Diagnostic:
    return exc.diagnostics[0]
