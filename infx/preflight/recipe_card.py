"""A model card seeded from an upstream vLLM recipe (``infx cards derive --recipe MODEL``).

The recipe gives the architecture, the parameter count, the context length and the variant's precision;
the card records them with the recipe file (and commit) as their source and marks the weight bytes an
estimate (parameters x bytes per parameter; ``vram_minimum_gb`` is upstream's display hint and is only
quoted). When a checkpoint directory is given too, its own files decide every memory fact (the card is
:func:`infx.preflight.derive.derive_card`'s) and the recipe only fills a missing context length.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from infx.diagnostics import Diagnostic, InfxError
from infx.preflight.cards import ModelCard
from infx.recipes.source import LoadedRecipe, RecipeRepo

RECIPE_CARD_HEAD = (
    "# Seeded by `infx cards derive --recipe` from an upstream vLLM recipe, not from checkpoint files:\n"
    "# the weight bytes are an estimate. Derive from the checkpoint before trusting a memory verdict.\n")

#: recipe precision -> the card's weight dtype and bytes per parameter (packed formats carry scales)
_PRECISION = {"bf16": ("bf16", 2.0), "fp16": ("fp16", 2.0), "fp32": ("fp32", 4.0), "fp8": ("fp8", 1.03),
              "mxfp8": ("fp8", 1.03), "int8": ("int8", 1.03), "fp4": ("fp4", 0.56), "nvfp4": ("nvfp4", 0.56),
              "mxfp4": ("mxfp4", 0.56), "int4": ("int4", 0.56)}


def _count(v: Any) -> int | None:
    """``"284B"``, ``"1.6T"``, ``"70B"`` or a number -> parameters."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return int(v)
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMBT]?)\s*", str(v or ""), re.IGNORECASE)
    if not m:
        return None
    scale = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}[m.group(2).upper()]
    return int(float(m.group(1)) * scale)


def _pick(repo: RecipeRepo, model: str) -> tuple[LoadedRecipe, str]:
    for lr in repo.all_recipes():
        for vk in lr.recipe.variants:
            if lr.served_model(vk) == model:
                return lr, vk
    lr = repo.find_model(model)
    return lr, "default" if "default" in lr.recipe.variants else next(iter(lr.recipe.variants))


def card_from_recipe(repo: RecipeRepo, model: str, *, prefix: str | None = None,
                     model_dir: str | Path | None = None) -> ModelCard:
    """The card for ``model`` (a served model id or a recipe name) from its recipe; with ``model_dir``, the
    checkpoint's derived card with the recipe's context length filled in when config.json has none."""
    lr, vk = _pick(repo, model)
    r = lr.recipe
    v = r.variants[vk]
    where = f"{lr.rel}" + (f"@{repo.commit[:12]}" if repo.commit else "")
    served = lr.served_model(vk)
    if model_dir is not None:
        from infx.preflight.derive import derive_card

        card = derive_card(model_dir, prefix=prefix, model=served)
        if card.max_context is None and r.model.context_length:
            card = card.model_copy(update={
                "max_context": r.model.context_length,
                "sources": [*card.sources, f"max-context from the upstream recipe {where}:"
                                           f"{lr.line(('model', 'context_length'))} (model.context_length)"]})
        return ModelCard.model_validate(card.model_dump(by_alias=True))
    params = _count(r.model.parameter_count)
    if not params:
        raise InfxError(lr.diag(("model", "parameter_count"), "the recipe gives no parameter count a card can use"))
    dtype, per = _PRECISION.get((v.precision or "bf16").lower(), ("bf16", 2.0))
    line = lr.line(("model", "parameter_count"))
    hint = f"; variants.{vk}.vram_minimum_gb {v.vram_minimum_gb:g} GB is upstream's display hint" \
        if v.vram_minimum_gb else ""
    data: dict[str, Any] = {
        "model-prefix": prefix or re.sub(r"[^a-z0-9._-]+", "-", served.split("/")[-1].lower()).strip("-"),
        "model": served,
        "dtype": "bf16",
        "sources": [f"seeded by `infx cards derive --recipe` from the upstream recipe {where} (variant {vk}); "
                    "no checkpoint files were read: derive from the checkpoint directory before trusting a "
                    "memory verdict"],
        "weights": {"parameters": params, "bytes-per-param": {dtype: per}, "estimate": True,
                    "source": f"{where}:{line}",
                    "note": f"model.parameter_count {r.model.parameter_count} x {per:g} B per parameter at "
                            f"variants.{vk}.precision {v.precision}{hint}"},
        "kv-dtypes": sorted({"auto", "fp8"}),
    }
    if r.model.context_length:
        data["max-context"] = r.model.context_length
    if r.model.architecture:
        data["note"] = (f"architecture {r.model.architecture}"
                        + (f", {r.model.active_parameters} active parameters" if r.model.active_parameters else "")
                        + f" (upstream recipe {where}); expert and attention shapes are not in a recipe")
    try:
        return ModelCard.model_validate(data)
    except ValueError as exc:
        raise InfxError(Diagnostic(f"cannot seed a card from {where}: {exc}", lr.display)) from None
