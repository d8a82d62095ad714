"""The built-in cards cover the real InferenceX catalog, and the memory model reads the launch arguments
those families are served with (vLLM / SGLang TP, EP, DP attention, FP8 KV cache, max model length).

Expected per-GPU figures are worked out here by hand from the card values, independently of
``check_memory``'s code paths."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from infx.engines.launch import Launch, fingerprint
from infx.matrix.point import Point
from infx.matrix.select import select_points
from infx.preflight.cards import load_cards
from infx.preflight.gate import preflight_points
from infx.preflight.launchargs import engine_settings
from infx.preflight.memory import check_memory
from infx.workspace import BUILTIN_CARDS_DIR

GB = 10**9
SKUS = ("h100", "h200", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x", "rtx6000pro")


@pytest.fixture(scope="module")
def cards():  # type: ignore[no-untyped-def]
    return load_cards([BUILTIN_CARDS_DIR])


@pytest.fixture(scope="module")
def catalog(compat: Path) -> list[dict]:
    out = []
    for f in ("amd-master.yaml", "nvidia-master.yaml"):
        out += list(yaml.safe_load((compat / f).read_text()).values())
    return out


def test_every_family_checkpoint_and_sku_of_the_catalog_has_a_card(cards, catalog) -> None:  # type: ignore[no-untyped-def]
    assert {e["model-prefix"] for e in catalog} <= set(cards.models)
    for e in catalog:
        card = cards.models[e["model-prefix"]]
        ck = card.weights.checkpoint_for(e["model"])
        assert ck is not None, f"{e['model-prefix']}: no checkpoint entry for {e['model']}"
        assert card.weights.total_bytes(e["precision"], e["model"]), (e["model"], e["precision"])
        assert cards.hardware_for_runner(e["runner"]) is not None, e["runner"]
    for sku in SKUS:
        hw = cards.hardware[sku]
        assert hw.memory and hw.bandwidth_tbps and hw.citation and hw.citation.startswith("https://")


def test_every_card_fact_names_its_source(cards) -> None:  # type: ignore[no-untyped-def]
    for name in ("dsr1", "dsv4", "qwen3.5", "minimaxm3", "kimik3", "glm5.2", "glm5.1", "kimik2.6"):
        card = cards.models[name]
        assert card.sources and all(re.search(r"https?://", s) for s in card.sources), name
        parts = [card.weights, *card.weights.checkpoints.values()] + [p for p in (card.moe, card.attention) if p]
        for part in parts:
            assert part.source or (part.estimate and part.note), (name, part)
        for ck in card.weights.checkpoints.values():
            assert ck.source or ck.note, name


def _point(compat: Path, key: str) -> Point:
    return select_points([str(compat / "amd-master.yaml"), str(compat / "nvidia-master.yaml")],
                         str(compat / "runners.yaml"), [key], evals="none", conc=None)[0]


def _launch(point: Point, engine: str, argv: list[str]) -> Launch:
    return Launch(engine=engine, recipe="hand", image=point.image, argv=argv, env={},
                  fingerprint=fingerprint(point.image, argv, {}), port=8000, served_model_name="m",
                  model_path=point.model)


def _memory(point: Point, engine: str, argv: list[str], cards, runner_hw: str):  # type: ignore[no-untyped-def]
    hw = cards.hardware[runner_hw]
    s = engine_settings(engine, argv, {}, capacity_bytes=hw.memory, point_tp=point.tp)
    return s, check_memory(point, s, cards.model_for(point.model_prefix), hw, None)


def _weights(m) -> int:  # type: ignore[no-untyped-def]
    return next(x.bytes for x in m.gpu if x.component == "weights")


def _resident(cards, prefix: str, precision: str, model: str) -> int:  # type: ignore[no-untyped-def]
    """Checkpoint bytes less the MTP layer, which a launch without speculative decoding never loads."""
    card = cards.models[prefix]
    return card.weights.total_bytes(precision, model) - card.speculative["mtp"].bytes


def test_sglang_tp_and_dp_attention_on_dsr1_fp8(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    p = _point(compat, "dsr1-fp8-h200-sglang")
    card = cards.models["dsr1"]
    assert card.weights.total_bytes("fp8", p.model) == int(688.6 * GB)
    total = _resident(cards, "dsr1", "fp8", p.model)
    base = ["python3", "-m", "sglang.launch_server", "--model-path", p.model, "--tp", "8",
            "--kv-cache-dtype", "fp8_e4m3", "--context-length", "9472", "--mem-fraction-static", "0.82"]
    s, m = _memory(p, "sglang", base, cards, "h200")
    assert _weights(m) == total // 8  # plain TP: everything split 8 ways
    assert m.kv_bytes_per_token == (512 + 64) * 1 * 61  # MLA latent, FP8, replicated on each TP rank
    assert m.status in ("ok", "warn") and m.margin_bytes > 0
    # DP attention: attention + embeddings (2.2%) replicated on each of the 8 attention ranks.
    s, m = _memory(p, "sglang", base + ["--enable-dp-attention", "--dp", "8", "--ep-size", "8"], cards, "h200")
    assert (s.attention_tp, s.attention_replicas, s.gpus) == (1, 8, 8)
    attn = int(total * 0.022)
    expert = int(total * 0.95)
    assert _weights(m) == attn + (total - expert - attn) // 8 + expert // 8
    assert any("x 8 ranks" in f for f in m.findings) and m.seqs_fit == pytest.approx(m.kv_tokens * 8 / (p.isl + p.osl))
    # With MTP decoding the draft layer is loaded: the whole checkpoint counts.
    spec = ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3", "--speculative-num-draft-tokens", "4"]
    s, m = _memory(p, "sglang", base + spec, cards, "h200")
    assert _weights(m) == card.weights.total_bytes("fp8", p.model) // 8


def test_vllm_data_parallel_expert_parallel_on_dsv4(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    p = _point(compat, "dsv4-fp4-b200-vllm")
    total = _resident(cards, "dsv4", "fp4", p.model)
    argv = ["vllm", "serve", p.model, "--tensor-parallel-size", "1", "--data-parallel-size", "8",
            "--enable-expert-parallel", "--kv-cache-dtype", "fp8", "--max-model-len", "9472",
            "--max-num-batched-tokens", "8192"]
    s, m = _memory(p, "vllm", argv, cards, "b200")
    assert (s.gpus, s.attention_tp, s.attention_replicas, s.expert_parallel.value) == (8, 1, 8, 8)
    expert = int(total * 0.97)
    assert _weights(m) == (total - expert) + expert // 8  # each DP rank holds every non-expert byte
    assert m.kv_bytes_per_token == 22229  # the compressed cache's own figure, not rescaled
    logits = next(x.bytes for x in m.gpu if x.component == "indexer-logits buffer")
    assert logits == 2 * 8192 * 9472
    assert m.status in ("ok", "warn")
    # Plain TP 8 of the same checkpoint: everything split 8 ways, less per GPU than DP (no replicas).
    s2, m2 = _memory(p, "vllm", ["vllm", "serve", p.model, "--tensor-parallel-size", "8", "--max-model-len", "9472"],
                     cards, "b200")
    assert _weights(m2) == total // 8 < _weights(m)


def test_hybrid_attention_kv_and_a_genuine_failure(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    p = _point(compat, "qwen3.5-fp8-h100-sglang")
    s, m = _memory(p, "sglang", ["python3", "-m", "sglang.launch_server", "--tp", "8"], cards, "h100")
    # 15 full-attention layers x 2 KV heads (ceil(2/8) = 1 per rank) x 256 x K and V x BF16
    assert m.kv_bytes_per_token == 15 * 2 * 1 * 256 * 2
    assert _weights(m) == int(405 * GB - 4.5 * GB) // 8
    # Kimi-K3 (1.49 TB) on 8 x H200 at TP 8: 186 GB of weights per GPU against 141 GB -> fail with the breakdown.
    k = _point(compat, "kimik3-fp4-h200-vllm-agentic")
    s, m = _memory(k, "vllm", ["vllm", "serve", k.model, "--tensor-parallel-size", "8", "--max-model-len", "131072"],
                   cards, "h200")
    assert m.status == "fail" and _weights(m) == int(1.49e12) // 8
    assert any("short by" in x for x in m.problems) and m.gpu and m.budget_bytes == int(141 * GB * 0.92)


def test_catalog_rows_get_a_verdict_with_a_reason(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    """Every multinode row of the real catalog renders to a memory verdict (never 'unverifiable'), and
    no row fails capacity."""
    from infx.catalog import load_runners
    from infx.engines.recipes import workspace_recipes

    points = select_points([str(compat / "amd-master.yaml"), str(compat / "nvidia-master.yaml")],
                           str(compat / "runners.yaml"), ["*"], evals="none", conc=None)
    assert len(points) == 1820
    verdicts = preflight_points(points, recipes=workspace_recipes(None), runners=load_runners(compat / "runners.yaml"),
                                cards=cards)
    assert len(verdicts) == 1820 and all(v.status == "ok" or v.reason for v in verdicts)
    assert not [v for v in verdicts if (c := v.check("capacity")) is not None and c.status == "fail"]
    multi = [v for v, p in zip(verdicts, points, strict=True) if p.multinode and v.check("launch") is None]
    assert len(multi) >= 476
    for v in multi:
        mem = [c for c in v.checks if c.name.startswith("memory:")]
        assert mem and not any("unverifiable" in c.message for c in mem), v.exp_name
        assert all(c.details["memory"]["gpu"] for c in mem if c.status == "fail"), v.exp_name


def test_atom_and_trt_dp_attention_read_like_sglang(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    """ATOM's vLLM-style server takes -tp N --enable-dp-attention (attention DP over the TP ranks, not
    N x N GPUs); TRT-LLM's enable_attention_dp in its options YAML does the same."""
    p = _point(compat, "dsv4-fp4-mi355x-atom")
    total = _resident(cards, "dsv4", "fp4", p.model)
    argv = ["python3", "-m", "atom.entrypoints.openai_server", "--model", p.model, "-tp", "8",
            "--enable-expert-parallel", "--enable-dp-attention", "--kv-cache-dtype", "fp8",
            "--max-num-batched-tokens", "16384", "--max-model-len", "9472"]
    s, m = _memory(p, "atom", argv, cards, "mi355x")
    assert (s.gpus, s.attention_tp, s.attention_replicas) == (8, 1, 8)
    attn, expert = int(total * 0.03), int(total * 0.97)
    assert _weights(m) == attn + (total - expert - attn) // 8 + expert // 8
    t = _point(compat, "dsr1-fp4-b200-trt")
    opts = "enable_attention_dp: true\nkv_cache_config:\n  dtype: fp8\n  free_gpu_memory_fraction: 0.8\n"
    hw = cards.hardware["b200"]
    s = engine_settings("trt", ["trtllm-serve", t.model, "--tp_size", "8", "--ep_size", "8",
                                "--extra_llm_api_options", "cfg.yaml"], {},
                        capacity_bytes=hw.memory, files={"cfg.yaml": opts})
    assert (s.gpus, s.attention_tp, s.attention_replicas, s.expert_parallel.value) == (8, 1, 8, 8)
    m = check_memory(t, s, cards.model_for("dsr1"), hw, None)
    ckpt = _resident(cards, "dsr1", "fp4", t.model)
    a2, e2 = int(ckpt * 0.022), int(ckpt * 0.92)  # the NVFP4 checkpoint's own expert share
    assert _weights(m) == a2 + (ckpt - e2 - a2) // 8 + e2 // 8
