"""`infx cards derive MODEL_DIR`: a model card from a local config.json (+ safetensors index or headers),
on the tiny Llama infx builds and on synthetic configs shaped like the catalog's families."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.preflight.cards import load_cards, load_model_card
from infx.preflight.cli import derive
from infx.preflight.derive import derive_card, safetensors_header
from infx.workspace import BUILTIN_CARDS_DIR


def _safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> int:
    """Write a safetensors file whose tensors hold zero bytes of the right sizes; return the data bytes."""
    header, off = {}, 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + nbytes]}
        off += nbytes
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * off)
    return off


def test_tiny_llama_matches_its_hand_written_card(tmp_path: Path) -> None:
    from infx.engines.tiny_model import build_tiny_model

    d = build_tiny_model(tmp_path / "tiny")
    card = derive_card(d, prefix="tinyllama")
    ref = load_cards([BUILTIN_CARDS_DIR]).models["tinyllama"]
    assert card.weights.parameters == ref.weights.parameters == 1_705_216
    assert card.weights.total_bytes("bf16") == ref.weights.total_bytes("bf16") == 2 * 1_705_216
    assert card.attention is not None and ref.attention is not None
    got = card.attention.model_dump(exclude={"source", "note"})
    assert got == ref.attention.model_dump(exclude={"source", "note"})
    assert card.max_context == ref.max_context and card.moe is None


def test_deepseek_shaped_config_with_index_only(tmp_path: Path) -> None:
    cfg = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
           "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128, "kv_lora_rank": 512,
           "qk_rope_head_dim": 64, "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1,
           "moe_intermediate_size": 2048, "intermediate_size": 18432, "first_k_dense_replace": 3, "vocab_size": 129280,
           "max_position_embeddings": 163840, "num_nextn_predict_layers": 1, "torch_dtype": "bfloat16",
           "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 688_586_727_753},
         "weight_map": {"model.embed_tokens.weight": "model-00001-of-000163.safetensors"}}))
    card = derive_card(tmp_path, prefix="dsr1x", model="deepseek-ai/DeepSeek-R1-0528")
    assert card.weights.total_bytes("fp8", "deepseek-ai/DeepSeek-R1-0528") == 688_586_727_753
    a = card.attention
    assert a is not None and (a.kind, a.layers, a.kv_lora_rank, a.qk_rope_head_dim) == ("mla", 61, 512, 64)
    assert a.kv_bytes_per_token(1, 8) == 576 * 61
    m = card.moe
    assert m is not None and (m.experts, m.experts_per_token, m.shared_experts) == (256, 8, 1)
    assert m.estimate and 0.9 < m.expert_fraction < 0.99  # shards absent: worked out from config.json
    assert card.max_context == 163840 and "mtp" in card.speculative and card.speculative["mtp"].in_checkpoint


def test_qwen35_shaped_multimodal_config_and_exact_expert_share_from_shards(tmp_path: Path) -> None:
    layers = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 15
    cfg = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
           "text_config": {"hidden_size": 4096, "num_hidden_layers": 60, "num_attention_heads": 32,
                           "num_key_value_heads": 2, "head_dim": 256, "layer_types": layers, "num_experts": 512,
                           "num_experts_per_tok": 10,
                           "moe_intermediate_size": 1024, "shared_expert_intermediate_size": 1024, "vocab_size": 248320,
                           "max_position_embeddings": 262144, "dtype": "bfloat16"},
           "quantization_config": {"quant_method": "fp8"}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    n1 = _safetensors(tmp_path / "model-00001-of-00002.safetensors", {
        "model.language_model.embed_tokens.weight": ("BF16", [1000, 8], 16_000),
        "model.language_model.layers.3.self_attn.q_proj.weight": ("F8_E4M3", [100, 40], 4_000)})
    n2 = _safetensors(tmp_path / "model-00002-of-00002.safetensors", {
        "model.language_model.layers.0.mlp.experts.0.gate_proj.weight": ("F8_E4M3", [100, 500], 50_000),
        "model.language_model.layers.0.mlp.experts.1.up_proj.weight": ("F8_E4M3", [100, 300], 30_000),
        "model.language_model.layers.0.mlp.shared_expert.gate_proj.weight": ("F8_E4M3", [100, 0], 0)})
    assert set(safetensors_header(tmp_path / "model-00001-of-00002.safetensors")) == {
        "model.language_model.embed_tokens.weight", "model.language_model.layers.3.self_attn.q_proj.weight"}
    card = derive_card(tmp_path, prefix="qwen3.5x")
    assert card.weights.total_bytes("fp8") == n1 + n2 == 100_000
    a = card.attention
    assert a is not None and (a.kind, a.layers, a.kv_layers, a.kv_heads, a.head_dim) == ("gqa", 60, 15, 2, 256)
    assert a.kv_bytes_per_token(2, 8) == 2 * 1 * 256 * 2 * 15
    m = card.moe
    assert m is not None and not m.estimate and m.expert_fraction == pytest.approx(0.8)  # 80,000 of 100,000 bytes
    assert m.experts == 512 and m.shared_experts == 1


def test_cli_writes_the_workspace_card_and_bad_input_names_the_file(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    (ws / "configs").mkdir(parents=True)
    (ws / "infx.toml").write_text("")
    monkeypatch.chdir(ws)
    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                                                   "num_key_value_heads": 4, "vocab_size": 100,
                                                   "torch_dtype": "float16"}))
    from infx.workspace import set_override

    set_override(ws)
    try:
        assert derive(model, None, "me/my-model", None, False) == 0
        written = ws / "cards" / "models" / "my-model.yaml"
        card = load_model_card(written)
        assert card.model == "me/my-model" and card.dtype == "fp16" and card.weights.estimate  # no shards: estimated
        assert "my-model" in load_cards().models  # the gate picks the workspace card up
        assert derive(tmp_path / "nowhere", None, None, None, False) == 2
        assert "nowhere/config.json" in capsys.readouterr().err
        (model / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}}))
        assert derive(model, None, None, None, True) == 2
        err = capsys.readouterr().err
        assert "model.safetensors.index.json" in err and "metadata.total_size" in err
        (model / "config.json").write_text(json.dumps({"hidden_size": 64}))
        with pytest.raises(InfxError) as exc:
            derive_card(model)
        assert "num_hidden_layers" in str(exc.value.diagnostics[0])
    finally:
        set_override(None)


@pytest.mark.parametrize("family, cfg, attention, moe", [
    ("kimik2.6", {"architectures": ["KimiK25ForConditionalGeneration"], "text_config": {
        "model_type": "kimi_k2", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 64,
        "kv_lora_rank": 512, "qk_rope_head_dim": 64, "n_routed_experts": 384, "num_experts_per_tok": 8,
        "n_shared_experts": 1, "moe_intermediate_size": 2048, "first_k_dense_replace": 1, "vocab_size": 163840,
        "max_position_embeddings": 262144}}, ("mla", 61, None), (384, 8, 1)),
    ("glm5.2", {"architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa", "hidden_size": 6144,
                "num_hidden_layers": 78, "num_attention_heads": 64, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "moe_intermediate_size": 2048,
                "first_k_dense_replace": 3, "vocab_size": 154880, "max_position_embeddings": 1048576,
                "num_nextn_predict_layers": 1}, ("mla", 78, None), (256, 8, 1)),
    ("minimaxm3", {"architectures": ["MiniMaxM3SparseForConditionalGeneration"], "text_config": {
        "hidden_size": 3072, "num_hidden_layers": 62, "num_attention_heads": 64, "num_key_value_heads": 4,
        "head_dim": 128, "num_local_experts": 128, "num_experts_per_tok": 4, "shared_intermediate_size": 1536,
        "n_shared_experts": 1, "moe_intermediate_size": 1536, "vocab_size": 200064,
        "max_position_embeddings": 1048576}},
     ("gqa", 62, None), (128, 4, 1)),
    ("kimik3", {"model_type": "kimi_k3", "hidden_size": 7168, "num_hidden_layers": 64, "num_attention_heads": 64,
                "kv_lora_rank": 512, "qk_rope_head_dim": 64, "num_experts": 896, "num_experts_per_token": 16,
                "num_shared_experts": 1, "moe_intermediate_size": 1024, "vocab_size": 163840,
                "linear_attn_config": {"full_attn_layers": list(range(3, 64, 4)), "kda_layers": []}},
     ("mla", 64, 16), (896, 16, 1)),
])
def test_family_shaped_configs(tmp_path: Path, family: str, cfg: dict, attention: tuple, moe: tuple) -> None:  # type: ignore[type-arg]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    card = derive_card(tmp_path, prefix=family)
    a = card.attention
    assert a is not None and (a.kind, a.layers, a.kv_layers) == attention
    m = card.moe
    assert m is not None and (m.experts, m.experts_per_token, m.shared_experts) == moe and m.estimate
    assert card.weights.estimate and card.weights.parameters  # no index, no shards: parameters from the config


def test_deepseek_v4_compressed_attention_is_left_for_a_hand_figure(tmp_path: Path) -> None:
    cfg = {"model_type": "deepseek_v4", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
           "num_key_value_heads": 1, "head_dim": 512, "compress_ratios": [0, 0, 4, 128], "n_routed_experts": 384,
           "num_experts_per_tok": 6, "n_shared_experts": 1, "moe_intermediate_size": 3072, "vocab_size": 129280,
           "max_position_embeddings": 1048576}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    card = derive_card(tmp_path, prefix="dsv4x")
    assert card.attention is None and card.note and "bytes-per-token" in card.note
    assert card.moe is not None and card.moe.experts == 384
