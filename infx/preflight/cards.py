"""Model and hardware cards: the memory facts the preflight gate reasons with, kept as data.

``cards/models/<model-prefix>.yaml`` describes one model: resident weight bytes per precision,
attention shape (for KV bytes per token), extra resident tables (and which engine argument moves
them to host memory), buffers that scale with launch arguments, speculative-decoding draft weights.
``cards/hardware/<sku>.yaml`` gives the memory of one accelerator SKU, with the datasheet it came
from. GPUs per node and host memory are not here: they come from ``runners.yaml``.

Both are loaded with :mod:`infx.yamlsource` and validated with pydantic, so a bad card is reported
as ``FILE:LINE:COL: error: MESSAGE (at path)``. Every value that is not read from a config file
or datasheet carries ``estimate: true`` and a ``note`` saying where it came from; reports mark it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from infx.diagnostics import Diagnostic, InfxError
from infx.preflight.units import ByteSize
from infx.yamlsource import load_yaml

# Element sizes of KV-cache / weight dtypes, as the engines spell them.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4, "float32": 4, "float": 4,
    "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "half": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "int8": 1,
    "fp4": 0.5, "nvfp4": 0.5, "mxfp4": 0.5, "int4": 0.5,
}

# Launch quantities a buffer formula may multiply (resolved from the rendered argv, else the
# engine's default; see infx.preflight.launchargs).
LaunchQuantity = Literal[
    "max_num_batched_tokens", "max_model_len", "max_num_seqs", "tp", "pp", "ep", "conc", "spec_tokens",
]


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class _Card(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True, alias_generator=_kebab,
                              populate_by_name=True)


class Provenance(_Card):
    """Whether a value is measured/published (``estimate: false``) or worked out, and how."""

    estimate: bool = False
    note: str | None = None
    source: str | None = None  # the public page (config.json, model card, datasheet) the value comes from

    @model_validator(mode="after")
    def _estimate_needs_note(self) -> Provenance:
        if self.estimate and not self.note:
            raise ValueError("a value marked 'estimate: true' needs a 'note' saying how it was estimated")
        return self


class Checkpoint(Provenance):
    """The bytes of one published checkpoint (an HF repository), with where the figure comes from."""

    precision: str
    bytes: ByteSize = Field(gt=0)
    # share of these bytes held by routed experts, when it differs from the family's (experts packed
    # tighter than the rest in FP4 re-quantisations)
    expert_fraction: float | None = Field(None, gt=0.0, lt=1.0)


class Weights(Provenance):
    """Resident weight bytes: the checkpoint size per precision, or a parameter count times
    bytes per parameter. Tables marked ``in-checkpoint`` are part of these bytes.

    ``checkpoints`` names published checkpoints by repository (``nvidia/DeepSeek-R1-0528-NVFP4-v2``):
    a point whose ``model`` is one of them uses its bytes first, since two fp4 checkpoints of one
    family (NVFP4, MXFP4) differ in size; then ``checkpoint[precision]``, then parameters x bytes."""

    checkpoint: dict[str, ByteSize] = Field(default_factory=dict)
    checkpoints: dict[str, Checkpoint] = Field(default_factory=dict)
    parameters: int | None = Field(None, gt=0, le=10**15)
    # no number format stores a parameter in more than 8 bytes; a larger figure is a typo (or hostile)
    bytes_per_param: dict[str, Annotated[float, Field(gt=0, le=8)]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source(self) -> Weights:
        if not self.checkpoint and not self.checkpoints and not (self.parameters and self.bytes_per_param):
            raise ValueError("weights need 'checkpoint' bytes per precision, 'checkpoints' by repository, "
                             "or 'parameters' with 'bytes-per-param'")
        return self

    def checkpoint_for(self, model: str | None) -> Checkpoint | None:
        if not model:
            return None
        ck = self.checkpoints.get(model)
        if ck is None:
            same = [c for name, c in self.checkpoints.items() if name.lower() == model.lower()]
            ck = same[0] if same else None
        return ck

    def resolve(self, precision: str, model: str | None = None) -> tuple[int, str, bool] | None:
        """(bytes, how, estimate) for a point's checkpoint, or None when the card has no figure."""
        ck = self.checkpoint_for(model)
        if ck is not None:
            return ck.bytes, f"checkpoint {model}", ck.estimate
        if precision in self.checkpoint:
            return self.checkpoint[precision], f"{precision} checkpoint", self.estimate
        if self.parameters and precision in self.bytes_per_param:
            b = self.bytes_per_param[precision]
            how = f"{self.parameters / 1e9:,.1f}B params x {b:g} B ({precision})"
            return int(round(self.parameters * b)), how, self.estimate
        by_prec = [c for c in self.checkpoints.values() if c.precision == precision]
        if by_prec:  # another checkpoint of the same precision: the largest, so the gate never under-counts
            c = max(by_prec, key=lambda c: c.bytes)
            return c.bytes, f"largest {precision} checkpoint of the family", True
        return None

    def total_bytes(self, precision: str, model: str | None = None) -> int | None:
        r = self.resolve(precision, model)
        return r[0] if r else None

    @property
    def precisions(self) -> list[str]:
        named = {c.precision for c in self.checkpoints.values()}
        return sorted(set(self.checkpoint) | set(self.bytes_per_param) | named)


class Moe(Provenance):
    """Mixture-of-experts facts. ``expert-fraction`` is the share of the weight bytes held by routed
    experts: those are split over every GPU of a server (EP, or TP inside each expert), while the rest
    (attention, dense layers, embeddings, shared experts) follows the attention parallelism, which DP
    attention replicates."""

    experts: int = Field(gt=0)
    experts_per_token: int = Field(gt=0)
    shared_experts: int = Field(0, ge=0)
    expert_fraction: float = Field(gt=0.0, lt=1.0)
    # Share of the bytes in attention and embeddings: what SGLang's / TRT-LLM's DP attention replicates
    # on every attention rank (dense MLP layers and shared experts stay TP-sharded there). Absent:
    # every non-expert byte counts as replicated (the conservative reading). vLLM's data-parallel
    # ranks replicate every non-expert byte either way.
    attention_fraction: float | None = Field(None, gt=0.0, lt=1.0)

    @model_validator(mode="after")
    def _fractions(self) -> Moe:
        if self.attention_fraction is not None and self.attention_fraction + self.expert_fraction > 1:
            raise ValueError("'attention-fraction' + 'expert-fraction' cannot exceed 1")
        return self


class Attention(Provenance):
    """Attention shape, enough for KV bytes per token.

    ``gqa``/``mha``: K and V of ``kv-heads`` x ``head-dim`` per layer, KV heads split across TP.
    ``mla``: one latent of ``kv-lora-rank + qk-rope-head-dim`` per layer, replicated on every TP rank.
    """

    kind: Literal["mha", "gqa", "mla"]
    layers: int = Field(gt=0)
    # Layers that keep a per-token KV cache, when fewer than ``layers`` (hybrid models: Qwen3.5's
    # gated-attention layers between Gated DeltaNet ones, Kimi's MLA layers between KDA ones).
    kv_layers: int | None = Field(None, gt=0)
    kv_heads: int | None = Field(None, gt=0)
    head_dim: int | None = Field(None, gt=0)
    kv_lora_rank: int | None = Field(None, gt=0)
    qk_rope_head_dim: int | None = Field(None, ge=0)
    # Per-token KV bytes of all layers as the engine stores them (the cache's own dtype is part of the
    # figure, so --kv-cache-dtype does not rescale it), for attention the formulas do not cover
    # (DeepSeek-V4's compressed CSA/HCA caches); replicated on every GPU.
    bytes_per_token: int | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _shape(self) -> Attention:
        if self.kv_layers is not None and self.kv_layers > self.layers:
            raise ValueError("'kv-layers' cannot exceed 'layers'")
        if self.bytes_per_token is not None:
            return self
        if self.kind == "mla":
            if self.kv_lora_rank is None or self.qk_rope_head_dim is None:
                raise ValueError("mla attention needs 'kv-lora-rank' and 'qk-rope-head-dim'")
        elif self.kv_heads is None or self.head_dim is None:
            raise ValueError(f"{self.kind} attention needs 'kv-heads' and 'head-dim'")
        return self

    def kv_bytes_per_token(self, dtype_bytes: float, tp: int = 1, model_dtype_bytes: float = 2) -> int:
        """KV-cache bytes one token occupies on one GPU (all layers). ``tp``: the attention TP size
        (KV heads are split over it; an MLA latent is replicated)."""
        if self.bytes_per_token is not None:
            return self.bytes_per_token
        if self.kind == "mla":
            assert self.kv_lora_rank is not None and self.qk_rope_head_dim is not None
            per_layer = (self.kv_lora_rank + self.qk_rope_head_dim) * dtype_bytes
        else:
            assert self.kv_heads is not None and self.head_dim is not None
            heads = max(1, -(-self.kv_heads // max(tp, 1)))  # ceil; replicated when tp > kv heads
            per_layer = 2 * heads * self.head_dim * dtype_bytes
        return int(round(per_layer * (self.kv_layers or self.layers)))


class Offload(_Card):
    """The engine argument that moves a table to host memory, as the launch argv spells it.

    With ``json-key`` the argument's value is a JSON object and the table is on the host when
    that key is true (``--engram-config '{"cpu_offload":true}'``); without it, the flag's presence
    (or a true value) offloads. When the argument is absent the table is where ``default`` says:
    the gate trusts only what is launched, never what a comment or changelog claims.
    """

    arg: str = Field(pattern=r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")
    json_key: str | None = None
    default: Literal["gpu", "host"] = "gpu"
    note: str | None = None


class Table(Provenance):
    """An extra resident table (lookup/embedding tables beyond the transformer weights)."""

    name: str
    total: ByteSize
    in_checkpoint: bool = True
    shard: Literal["tp", "replicated"] = "tp"
    offload: Offload | None = None


LAUNCH_QUANTITIES: tuple[str, ...] = get_args(LaunchQuantity)


class Buffer(Provenance):
    """A buffer whose size follows the launch: ``bytes-per-element x dims`` (a typed product), or
    ``expr``, a formula of the launch quantities in the engines' safe expression language
    (``2 * max_num_batched_tokens * max_model_len``).

    ``per: gpu`` buffers are allocated whole on every GPU; ``per: tp-shard`` are divided by TP.
    """

    name: str
    bytes_per_element: float | None = Field(None, gt=0)
    dims: list[LaunchQuantity | int] | None = Field(None, min_length=1)
    expr: str | None = None
    per: Literal["gpu", "tp-shard"] = "gpu"

    @model_validator(mode="after")
    def _one_formula(self) -> Buffer:
        if self.expr is not None:
            if self.dims is not None or self.bytes_per_element is not None:
                raise ValueError("a buffer has either 'expr' or 'bytes-per-element' with 'dims', not both")
            from infx.engines.expr import Expr, ExprError

            try:
                e = Expr(self.expr)
            except ExprError as exc:
                raise ValueError(str(exc)) from None
            names = e.names
            unknown = sorted(set(names) - set(LAUNCH_QUANTITIES))
            if unknown:
                raise ValueError(f"unknown name(s) {', '.join(unknown)} in buffer formula "
                                 f"(known: {', '.join(LAUNCH_QUANTITIES)})")
            # Evaluated here, on sample launch values, so a formula that can never work (1/0, a
            # string, an overflow) names its line in the card, not the gate that uses it.
            try:
                sample = e.evaluate({n: 7 for n in names})
            except ExprError as exc:
                raise ValueError(str(exc)) from None
            if isinstance(sample, (bool, str)):
                raise ValueError(f"buffer formula {self.expr!r} gives {sample!r}, not a number of bytes")
        elif self.dims is None or self.bytes_per_element is None:
            raise ValueError("a buffer needs 'expr', or 'bytes-per-element' with 'dims'")
        return self


class Draft(Provenance):
    """Speculative-decoding draft weights for one method (``mtp``, ``eagle``, ...). With ``in-checkpoint``
    the bytes are part of the checkpoint's and are loaded only when the launch decodes speculatively: a
    launch without it holds the checkpoint less these bytes (DeepSeek's MTP layer)."""

    bytes: ByteSize = 0
    in_checkpoint: bool = False


class ModelCard(_Card):
    model_prefix: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    model: str
    dtype: str = "bf16"
    sources: list[str] = Field(default_factory=list)
    weights: Weights
    moe: Moe | None = None
    attention: Attention | None = None
    kv_dtypes: list[str] = Field(default_factory=lambda: ["auto"])
    max_context: int | None = Field(None, gt=0)
    tables: list[Table] = Field(default_factory=list)
    buffers: list[Buffer] = Field(default_factory=list)
    speculative: dict[str, Draft] = Field(default_factory=dict)
    # accuracy-eval thresholds by lm-eval task (override the task defaults in infx/evals/thresholds.py)
    eval_thresholds: dict[str, Annotated[float, Field(ge=0.0, le=1.0)]] = Field(default_factory=dict)
    note: str | None = None

    @model_validator(mode="after")
    def _known_dtypes(self) -> ModelCard:
        for name in [self.dtype, *[d for d in self.kv_dtypes if d != "auto"]]:
            if name not in DTYPE_BYTES:
                raise ValueError(f"unknown dtype '{name}' (known: {', '.join(sorted(DTYPE_BYTES))})")
        names = [t.name for t in self.tables] + [b.name for b in self.buffers]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"table/buffer names must be unique: {', '.join(dup)}")
        return self

    @property
    def estimated(self) -> bool:
        parts: list[Provenance] = [self.weights, *self.tables, *self.buffers, *self.speculative.values(),
                                   *self.weights.checkpoints.values()]
        if self.attention:
            parts.append(self.attention)
        if self.moe:
            parts.append(self.moe)
        return any(p.estimate for p in parts)


class HardwareCard(_Card):
    """One accelerator SKU (or the CPU). ``memory`` is per device, as the vendor's datasheet states."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    vendor: Literal["amd", "nvidia", "cpu"]
    kind: Literal["gpu", "cpu"] = "gpu"
    memory: ByteSize | None = None
    memory_type: str | None = None
    bandwidth_tbps: float | None = Field(None, gt=0)  # memory bandwidth per device, TB/s, from the same datasheet
    match: list[str] = Field(default_factory=list)
    citation: str | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _gpu_facts(self) -> HardwareCard:
        if self.kind == "gpu":
            if not self.memory:
                raise ValueError("a gpu card needs 'memory' (per device, from the vendor datasheet)")
            if not self.citation or not re.match(r"^https?://", self.citation):
                raise ValueError("a gpu card needs a 'citation' URL of the datasheet its memory figure comes from")
        return self

    @property
    def tokens(self) -> list[str]:
        return [self.name, *self.match]


class CardSet(BaseModel):
    """All cards of a cards directory."""

    model_config = ConfigDict(frozen=True)

    models: dict[str, ModelCard] = Field(default_factory=dict)
    hardware: dict[str, HardwareCard] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)  # card key -> file it came from

    def model_for(self, model_prefix: str) -> ModelCard | None:
        return self.models.get(model_prefix)

    def hardware_for_runner(self, runner: str) -> HardwareCard | None:
        """Map a runner label to its SKU by whole tokens: ``cluster:mi355x-amds`` -> mi355x,
        ``gb200-nv`` -> gb200 (never b200), ``local`` -> cpu."""
        tokens = [t for t in re.split(r"[:_\-/.]", runner.lower()) if t]
        for card in self.hardware.values():
            if any(tok in tokens for tok in card.tokens):
                return card
        return None


def _load_one(path: Path, model: type[_Card]) -> _Card:
    src = load_yaml(path)
    if not isinstance(src.data, dict):
        raise InfxError(Diagnostic("a card must be a mapping", str(path), 1, 1))
    try:
        return model.model_validate(src.data)
    except ValidationError as exc:
        raise InfxError(src.diags_from_validation(exc)) from None


def load_model_card(path: str | Path) -> ModelCard:
    card = _load_one(Path(path), ModelCard)
    assert isinstance(card, ModelCard)
    return card


def load_hardware_card(path: str | Path) -> HardwareCard:
    card = _load_one(Path(path), HardwareCard)
    assert isinstance(card, HardwareCard)
    return card


_C = TypeVar("_C", bound=_Card)


def _load_kind(
    folder: Path, kind: str, load: Callable[[Path], _C], key: Callable[[_C], str], diags: list[Diagnostic],
    files: dict[str, str],
) -> dict[str, _C]:
    """Every ``*.y*ml`` card in ``folder`` by its key (file order); each load error or repeated key
    goes to ``diags``, each card's file to ``files["KIND:KEY"]``."""
    cards: dict[str, _C] = {}
    for path in sorted(folder.glob("*.y*ml")):
        try:
            card = load(path)
        except InfxError as exc:
            diags.extend(exc.diagnostics)
            continue
        name = key(card)
        if name in cards:
            first = files[f"{kind}:{name}"]
            diags.append(Diagnostic(f"{kind} card '{name}' already defined in {first}", str(path), 1, 1))
            continue
        cards[name] = card
        files[f"{kind}:{name}"] = str(path)
    return cards


def load_cards(cards_dirs: str | Path | Sequence[str | Path] | None = None) -> CardSet:
    """Load ``models/*.yaml`` and ``hardware/*.yaml`` under each of ``cards_dirs`` in order, a card in a
    later directory replacing one of the same name from an earlier one (default: the built-in cards, then
    the current workspace's ``cards/``). Every bad card is reported, not only the first."""
    if cards_dirs is None:
        from infx.workspace import current

        roots = current().card_dirs()
    else:
        roots = [Path(cards_dirs)] if isinstance(cards_dirs, (str, Path)) else [Path(d) for d in cards_dirs]
    diags: list[Diagnostic] = []
    files: dict[str, str] = {}
    models: dict[str, ModelCard] = {}
    hardware: dict[str, HardwareCard] = {}
    for root in roots:
        if not root.is_dir():
            raise InfxError(Diagnostic(f"cards directory '{root}' does not exist", str(root)))
        models.update(_load_kind(root / "models", "model", load_model_card, lambda c: c.model_prefix, diags, files))
        hardware.update(_load_kind(root / "hardware", "hardware", load_hardware_card, lambda c: c.name, diags, files))
    if diags:
        raise InfxError(diags)
    # Longest names first, so a token check never lets 'b200' shadow 'gb200'-style names.
    hardware = dict(sorted(hardware.items(), key=lambda kv: -len(kv[0])))
    return CardSet(models=models, hardware=hardware, files=files)
