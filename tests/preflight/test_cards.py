"""Model and hardware cards: the repo's cards load, bad cards give FILE:LINE:COL diagnostics, and
the tinyllama card matches the model the engines stage builds."""

from __future__ import annotations

import json
import struct

import pytest

from infx.diagnostics import InfxError
from infx.preflight.cards import load_cards, load_model_card
from infx.preflight.units import GB, GIB, parse_bytes


def test_repo_cards_cover_the_reference_skus(cards):
    for sku, gbs in {"mi300x": 192, "mi325x": 256, "mi355x": 288, "h100": 80, "h200": 141, "b200": 180,
                     "b300": 288, "gb200": 186, "gb300": 279}.items():
        hw = cards.hardware[sku]
        assert hw.memory == gbs * GB and hw.citation.startswith("https://")
    assert cards.hardware["cpu"].kind == "cpu"
    assert set(cards.models) >= {"dsv41flash", "tinyllama"}


@pytest.mark.parametrize("runner,sku", [("cluster:mi355x-amds", "mi355x"), ("mi355x", "mi355x"), ("gb200-nv", "gb200"),
                                        ("b200-dsv4", "b200"), ("cluster:b300-nv", "b300"), ("h200-multinode", "h200"),
                                        ("local", "cpu"), ("cluster:local", "cpu")])
def test_runner_to_sku(cards, runner, sku):
    assert cards.hardware_for_runner(runner).name == sku


def test_seed_card_facts(cards):
    c = cards.models["dsv41flash"]
    assert c.weights.total_bytes("fp4") == 511 * GB
    assert c.tables[0].total == round(188.8 * GIB)
    assert c.tables[0].offload.arg == "--engram-config" and c.tables[0].offload.json_key == "cpu_offload"
    assert c.speculative["mtp"].estimate  # marked as an estimate, with a note
    assert c.estimated


def test_parse_bytes():
    assert parse_bytes("511 GB") == 511 * 10**9
    assert parse_bytes("188.8 GiB") == round(188.8 * 2**30)
    assert parse_bytes(1024) == 1024 and parse_bytes("2_048") == 2048
    for bad in ("12 parsecs", -1, True, "GB"):
        with pytest.raises(ValueError):
            parse_bytes(bad)


def test_bad_model_card_reports_file_line_col(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("model-prefix: bad\nmodel: x\nweights:\n  checkpoint:\n    fp8: 12 parsecs\n"
                 "attention: {kind: gqa, layers: 2}\nbogus: 1\n")
    with pytest.raises(InfxError) as exc:
        load_model_card(f)
    msgs = [str(d) for d in exc.value.diagnostics]
    assert any(m.startswith(f"{f}:5:10: error: invalid byte size") for m in msgs), msgs
    assert any(m.startswith(f"{f}:6:") and "kv-heads" in m for m in msgs), msgs
    assert any(m.startswith(f"{f}:7:1: error: unknown key 'bogus'") for m in msgs), msgs


def test_estimate_needs_a_note(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("model-prefix: m\nmodel: x\nweights:\n  checkpoint: {bf16: 1 GB}\n  estimate: true\n")
    with pytest.raises(InfxError, match="needs a 'note'"):
        load_model_card(f)


def test_hardware_card_needs_citation(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "x.yaml").write_text("name: x1\nvendor: nvidia\nmemory: 80 GB\n")
    with pytest.raises(InfxError, match="citation"):
        load_cards(tmp_path)


def test_tinyllama_card_matches_built_model(tiny_model_dir, cards):
    card = cards.models["tinyllama"]
    cfg = json.loads((tiny_model_dir / "config.json").read_text())
    att = card.attention
    assert (att.layers, att.kv_heads, att.head_dim) == (cfg["num_hidden_layers"], cfg["num_key_value_heads"],
                                                        cfg["head_dim"])
    assert card.max_context == cfg["max_position_embeddings"]
    raw = (tiny_model_dir / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    params = 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for d in t["shape"]:
            count *= d
        params += count
    assert card.weights.parameters == params
    assert card.weights.total_bytes("bf16") == len(raw) - 8 - n  # bf16 tensor bytes
    assert att.kv_bytes_per_token(2) == 1024  # 2 layers x K,V x 2 heads x 64 x 2 B


def test_buffer_expr_equals_typed_product(seed_points, cards):
    """A buffer formula in the engines' expression language gives the same bytes as the typed
    product, and a formula naming an unknown quantity is rejected when the card loads."""
    from pfhelpers import hand_launch

    from infx.preflight.cards import Buffer
    from infx.preflight.launchargs import engine_settings
    from infx.preflight.memory import buffer_bytes

    p = seed_points[0]
    s = engine_settings("vllm", hand_launch(p).argv, {}, capacity_bytes=288 * GB, point_tp=p.tp)
    typed = cards.models["dsv41flash"].buffers[0]
    expr = Buffer(name="logits", expr="2 * max_num_batched_tokens * max_model_len")
    assert buffer_bytes(expr, s, 1)[0] == buffer_bytes(typed, s, 1)[0] == 32 * GIB
    with pytest.raises(ValueError, match="unknown name"):
        Buffer(name="x", expr="2 * hidden_size")
    with pytest.raises(ValueError, match="not allowed"):
        Buffer(name="x", expr="tp.real")
