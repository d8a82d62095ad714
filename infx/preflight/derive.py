"""``infx cards derive MODEL_DIR``: a model card from a local checkpoint's own files.

Reads ``config.json`` (a multimodal config's ``text_config`` is the language model) and, for the
checkpoint bytes, ``model.safetensors.index.json`` (``metadata.total_size``) or the safetensors
headers themselves. The safetensors format starts with an 8-byte little-endian header length and a
JSON header of ``{name: {dtype, shape, data_offsets}}``; reading that JSON needs only the standard
library (the tensors are never loaded), so no dependency is added for it.

What is read exactly: attention shape (MLA ranks, KV heads, head dim, layers, full-attention layers of
hybrid models), expert counts, context length, checkpoint bytes (index or headers), and, when the
shards are present, the bytes held by routed experts (tensor names with ``experts.`` but no
``shared``). What is worked out is marked ``estimate: true`` with a note: the expert share from the
config when only the index is present, bytes from a parameter count when no size is known.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

from infx.diagnostics import Diagnostic, InfxError
from infx.preflight.cards import ModelCard

# safetensors dtype names -> bytes per element (F4/E2M1 packed two per byte appear as U8/I8).
_ST_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
             "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1, "F4": 0.5, "F6_E2M3": 0.75,
             "F6_E3M2": 0.75}
_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32", "bf16": "bf16",
          "fp16": "fp16", "fp32": "fp32"}
_MAX_HEADER = 100 * 2**20


def _err(msg: str, file: Path, field: str | None = None) -> InfxError:
    return InfxError(Diagnostic(msg + (f" (at {field})" if field else ""), str(file), 1, 1))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _err(f"cannot read: {exc.strerror or exc}", path) from None
    except json.JSONDecodeError as exc:
        raise InfxError(Diagnostic(f"not valid JSON: {exc.msg}", str(path), exc.lineno, exc.colno)) from None
    except UnicodeDecodeError:
        raise _err("not UTF-8 text", path) from None


def safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of one ``.safetensors`` file (tensor name -> dtype, shape, offsets)."""
    try:
        with path.open("rb") as f:
            raw = f.read(8)
            if len(raw) != 8:
                raise _err("not a safetensors file: shorter than its 8-byte header length", path)
            (n,) = struct.unpack("<Q", raw)
            if n > _MAX_HEADER:
                raise _err(f"not a safetensors file: header length {n} is implausible", path)
            header = json.loads(f.read(n).decode("utf-8"))
    except OSError as exc:
        raise _err(f"cannot read: {exc.strerror or exc}", path) from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _err("not a safetensors file: its header is not JSON", path) from None
    if not isinstance(header, dict):
        raise _err("not a safetensors file: its header is not a JSON object", path)
    header.pop("__metadata__", None)
    return header


def _is_routed_expert(name: str) -> bool:
    n = name.lower()
    return ("experts." in n or ".experts_" in n or "block_sparse_moe.experts" in n) and "shared" not in n


def _tensor_stats(files: list[Path]) -> tuple[int, int, int]:
    """(bytes, routed-expert bytes, elements) over the tensors of ``files``."""
    total = expert = elements = 0
    for f in files:
        for name, t in safetensors_header(f).items():
            if not isinstance(t, dict) or "data_offsets" not in t:
                continue
            start, end = t["data_offsets"]
            size = int(end) - int(start)
            total += size
            count = 1
            for d in t.get("shape", []):
                count *= int(d)
            elements += count
            if _is_routed_expert(name):
                expert += size
    return total, expert, elements


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The language model's config: a multimodal config's ``text_config`` (or ``llm_config``) over the top level."""
    for key in ("text_config", "llm_config", "language_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict):
            merged = {k: v for k, v in cfg.items() if k != key}
            merged.update(sub)
            return merged
    return cfg


def _first(cfg: dict[str, Any], *names: str) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return None


def _precision(cfg: dict[str, Any], dtype: str) -> str:
    q = cfg.get("quantization_config") or cfg.get("quantization") or {}
    if isinstance(q, dict) and q:
        text = json.dumps(q).lower()
        if any(k in text for k in ("nvfp4", "mxfp4", "fp4", '"num_bits": 4', '"bits": 4', "e2m1")):
            return "fp4"
        if any(k in text for k in ("fp8", "e4m3", "mxfp8", '"num_bits": 8')):
            return "fp8"
        if "int4" in text or "awq" in text or "gptq" in text:
            return "int4"
    return dtype


def _kv_layers(cfg: dict[str, Any], layers: int) -> tuple[int | None, str | None]:
    types = cfg.get("layer_types")
    if isinstance(types, list) and types and any(str(t) != "full_attention" for t in types):
        full = sum(1 for t in types if str(t) in ("full_attention", "attention"))
        if 0 < full < layers:
            return full, f"layer_types: {full} full_attention of {len(types)}"
    interval = cfg.get("full_attention_interval")
    if isinstance(interval, int) and interval > 1:
        return layers // interval, f"full_attention_interval {interval}: {layers // interval} of {layers} layers"
    lin = cfg.get("linear_attn_config")
    if isinstance(lin, dict) and isinstance(lin.get("full_attn_layers"), list):
        n = len(lin["full_attn_layers"])
        return n, f"linear_attn_config.full_attn_layers: {n} of {layers}"
    return None, None


def derive_card(model_dir: str | Path, *, prefix: str | None = None, model: str | None = None) -> ModelCard:
    """A validated :class:`ModelCard` for the checkpoint in ``model_dir``. Bad input raises
    :class:`InfxError` naming the file and the field."""
    root = Path(model_dir)
    cfg_path = root / "config.json"
    if not cfg_path.is_file():
        raise _err("no config.json in the model directory", cfg_path)
    raw = _read_json(cfg_path)
    if not isinstance(raw, dict):
        raise _err("config.json must be a JSON object", cfg_path)
    cfg = _text_config(raw)
    notes: list[str] = []

    def need(*names: str) -> int:
        v = _first(cfg, *names)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise _err(f"needs a positive integer '{names[0]}'", cfg_path, names[0])
        return v

    layers = need("num_hidden_layers", "n_layers", "num_layers")
    hidden = need("hidden_size", "d_model")
    heads = need("num_attention_heads", "n_heads")
    dtype = _DTYPE.get(str(_first(cfg, "torch_dtype", "dtype") or "bfloat16").lower(), "bf16")
    precision = _precision(raw if "quantization_config" in raw else cfg, dtype)
    name = model or str(raw.get("_name_or_path") or root.resolve().name)
    key = prefix or re.sub(r"[^a-z0-9._-]+", "-", root.resolve().name.lower()).strip("-") or "model"

    # Attention shape.
    attention = _attention(cfg, layers, hidden, heads, cfg_path, notes)

    # Mixture of experts.
    experts = _first(cfg, "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")
    per_tok = _first(cfg, "num_experts_per_tok", "num_experts_per_token", "moe_topk", "top_k")
    shared = _first(cfg, "n_shared_experts", "num_shared_experts", "shared_expert_count") or (
        1 if cfg.get("shared_expert_intermediate_size") else 0)
    moe_inter = _first(cfg, "moe_intermediate_size", "expert_intermediate_size", "intermediate_size")
    dense_layers = int(cfg.get("first_k_dense_replace") or 0)
    mlp_only = cfg.get("mlp_only_layers")
    moe_layers = max(layers - dense_layers - (len(mlp_only) if isinstance(mlp_only, list) else 0), 0)

    # Checkpoint bytes: the index's total_size, else the shards' headers.
    total_bytes, expert_bytes, elements, bytes_source = _checkpoint_bytes(root)

    weights: dict[str, Any]
    if total_bytes is not None:
        weights = {"checkpoint": {precision: total_bytes},
                   "checkpoints": {name: {"precision": precision, "bytes": total_bytes, "source": bytes_source}},
                   "source": bytes_source}
        if elements and precision in ("bf16", "fp16", "fp32"):  # packed fp4/int4 elements are not parameters
            weights["parameters"] = elements
    else:
        params = _estimate_params(cfg, layers, hidden, heads, experts, moe_inter, moe_layers, dense_layers)
        per = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1.03, "fp4": 0.56, "int4": 0.56}[precision]
        weights = {"parameters": params, "bytes-per-param": {precision: per}, "estimate": True,
                   "note": f"no safetensors index or shards in {root}: parameters counted from config.json "
                           f"(embeddings, attention, MLP/experts), {per:g} B per parameter at {precision}"}

    moe = _moe(cfg, cfg_path, experts, per_tok, shared, moe_inter, layers, hidden, heads, moe_layers, dense_layers,
               expert_bytes, total_bytes)

    spec: dict[str, Any] = {}
    if int(_first(cfg, "num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers") or 0) > 0:
        spec["mtp"] = {"bytes": 0, "in-checkpoint": True, "note": "the MTP layer ships in the checkpoint (config.json)"}

    data: dict[str, Any] = {
        "model-prefix": key,
        "model": name,
        "dtype": dtype,
        "sources": [f"derived by `infx cards derive` from {cfg_path}"
                    + (f" and {bytes_source}" if bytes_source else "")],
        "weights": weights,
    }
    if moe:
        data["moe"] = moe
    if attention:
        data["attention"] = attention
    data["kv-dtypes"] = sorted({"auto", dtype, "fp8"})
    mpe = _first(cfg, "max_position_embeddings", "max_sequence_length", "seq_length")
    if isinstance(mpe, int) and mpe > 0:
        data["max-context"] = mpe
    if spec:
        data["speculative"] = spec
    if notes:
        data["note"] = "; ".join(notes)
    try:
        return ModelCard.model_validate(data)
    except Exception as exc:  # a config whose values the schema rejects: name it, never a traceback
        raise _err(f"the derived card does not validate: {exc}", cfg_path) from None


def _moe(cfg: dict[str, Any], cfg_path: Path, experts: Any, per_tok: Any, shared: Any, moe_inter: Any, layers: int,
         hidden: int, heads: int, moe_layers: int, dense_layers: int, expert_bytes: int | None,
         total_bytes: int | None) -> dict[str, Any] | None:
    """The card's mixture-of-experts section: the routed experts' share of the checkpoint (from the tensors'
    bytes, else estimated from config.json); None for a dense model."""
    moe: dict[str, Any] | None = None
    if isinstance(experts, int) and experts > 1 and isinstance(per_tok, int) and per_tok > 0:
        if expert_bytes and total_bytes:
            frac, est = expert_bytes / total_bytes, False
            how = "routed-expert tensor bytes / checkpoint bytes (safetensors headers)"
        else:
            params = _estimate_params(cfg, layers, hidden, heads, experts, moe_inter, moe_layers, dense_layers)
            exp_params = moe_layers * experts * 3 * hidden * int(moe_inter or 0)
            frac, est = (exp_params / params if params else 0.0), True
            how = (f"{moe_layers} MoE layers x {experts} experts x 3 x {hidden} x {moe_inter} parameters / "
                   f"{params:,} (config.json; assumes experts and the rest share one precision)")
        frac = min(max(frac, 0.001), 0.999)
        moe = {"experts": experts, "experts-per-token": per_tok, "shared-experts": int(shared),
               "expert-fraction": round(frac, 4), "note": how, "source": cfg_path.name}
        if est:
            moe["estimate"] = True

    return moe


def _attention(cfg: dict[str, Any], layers: int, hidden: int, heads: int, cfg_path: Path,
               notes: list[str]) -> dict[str, Any] | None:
    """The card's attention shape (MLA, GQA or MHA) from config.json; None for compressed attention."""
    attention: dict[str, Any] | None
    kv_layers, kv_how = _kv_layers(cfg, layers)
    if cfg.get("compress_ratios") or str(cfg.get("model_type", "")).startswith("deepseek_v4"):
        attention = None
        notes.append("compressed attention (compress_ratios): its KV bytes per token are not derived; add "
                     "attention.bytes-per-token by hand")
    elif cfg.get("kv_lora_rank"):
        attention = {"kind": "mla", "layers": layers, "kv-lora-rank": int(cfg["kv_lora_rank"]),
                     "qk-rope-head-dim": int(cfg.get("qk_rope_head_dim") or 0)}
    else:
        kv_heads = _first(cfg, "num_key_value_heads", "n_kv_heads", "multi_query_group_num") or heads
        head_dim = _first(cfg, "head_dim") or hidden // heads
        attention = {"kind": "gqa" if kv_heads < heads else "mha", "layers": layers, "kv-heads": int(kv_heads),
                     "head-dim": int(head_dim)}
    if attention is not None:
        attention["source"] = f"{cfg_path.name}"
        if kv_layers is not None:
            attention["kv-layers"] = kv_layers
            attention["note"] = kv_how

    return attention


def _checkpoint_bytes(root: Path) -> tuple[int | None, int | None, int | None, str | None]:
    """(checkpoint bytes, routed-expert bytes, elements, where the bytes were read) of the directory."""
    index_path = root / "model.safetensors.index.json"
    shards = sorted(root.glob("*.safetensors"))
    total_bytes: int | None = None
    expert_bytes: int | None = None
    elements: int | None = None
    bytes_source = None
    if index_path.is_file():
        index = _read_json(index_path)
        meta = index.get("metadata") if isinstance(index, dict) else None
        size = meta.get("total_size") if isinstance(meta, dict) else None
        if not isinstance(size, (int, float)) or size <= 0:
            raise _err("needs a positive 'metadata.total_size'", index_path, "metadata.total_size")
        total_bytes, bytes_source = int(size), f"{index_path.name} metadata.total_size"
        listed = sorted({str(v) for v in (index.get("weight_map") or {}).values()})
        if listed and all((root / f).is_file() for f in listed):
            _, expert_bytes, elements = _tensor_stats([root / f for f in listed])
    elif shards:
        total_bytes, expert_bytes, elements = _tensor_stats(shards)
        bytes_source = f"safetensors headers of {len(shards)} file(s)"

    return total_bytes, expert_bytes, elements, bytes_source


def _estimate_params(cfg: dict[str, Any], layers: int, hidden: int, heads: int, experts: Any, moe_inter: Any,
                     moe_layers: int, dense_layers: int) -> int:
    vocab = int(cfg.get("vocab_size") or 0)
    head_dim = int(cfg.get("head_dim") or hidden // heads)
    kv = int(cfg.get("num_key_value_heads") or heads)
    attn = hidden * head_dim * (heads + 2 * kv) + heads * head_dim * hidden
    inter = int(cfg.get("intermediate_size") or 4 * hidden)
    embed = vocab * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
    if isinstance(experts, int) and experts > 1:
        mlp = dense_layers * 3 * hidden * inter + moe_layers * experts * 3 * hidden * int(moe_inter or inter)
    else:
        mlp = layers * 3 * hidden * inter
    return embed + layers * attn + mlp


def card_yaml(card: ModelCard, head: str | None = None) -> str:
    """The card as YAML in the built-in cards' key spelling and order (``head``: the comment on top)."""
    import yaml

    data = card.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    head = head or ("# Derived by `infx cards derive` from the checkpoint's own files; values marked estimate: true\n"
                    "# were worked out (see their note). Review before trusting a gate verdict on it.\n")
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


def write_card(card: ModelCard, out: Path, head: str | None = None) -> Path:
    from infx import atomic

    out.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out, card_yaml(card, head))
    return out
