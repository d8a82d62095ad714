"""The memory gate on the seed scenario, with launches built by hand (the recipe-rendered
acceptance checks are in test_seed_acceptance.py)."""

from __future__ import annotations

import pytest
from pfhelpers import hand_launch

from infx.preflight.gate import PreflightOptions, node_facts, predict_kv_capacity, preflight_points
from infx.preflight.launchargs import engine_settings
from infx.preflight.memory import NodeFacts, check_memory, table_on_host
from infx.preflight.units import GB, GIB


def _tp(points, tp):
    return [p for p in points if p.tp == tp]


def _memory(point, launch, cards, runners):
    v = preflight_points([point], runners=runners, cards=cards, launches={point.point_id: launch})[0]
    assert v.memory is not None
    return v, v.memory


def test_tp2_offloaded_breakdown_matches_seed_facts(seed_points, cards, runners):
    p = _tp(seed_points, 2)[0]
    v, m = _memory(p, hand_launch(p, offload=True), cards, runners)
    lines = {x.component: x for x in m.gpu}
    assert lines["weights"].bytes / GB == pytest.approx(154.1, rel=0.01)
    assert lines["indexer-logits buffer"].bytes == 32 * GIB
    assert "engram table" not in lines  # on the host, as the argv says
    assert m.budget_bytes / GB == pytest.approx(259.2, rel=1e-9)
    host = {x.component: x for x in m.host}
    assert host["engram table"].bytes / GIB == pytest.approx(188.8, rel=1e-6)
    assert m.servers_per_node == 4
    assert m.status == "ok" and m.margin_bytes > 0
    assert v.check("memory").status == "ok"


def test_tp2_without_offload_arg_fails_with_breakdown(seed_points, cards, runners):
    p = _tp(seed_points, 2)[0]
    v, m = _memory(p, hand_launch(p, offload=None), cards, runners)
    lines = {x.component: x for x in m.gpu}
    weights_and_tables = lines["weights"].bytes + lines["engram table"].bytes
    assert weights_and_tables / GB == pytest.approx(255.5, rel=0.01)
    assert lines["indexer-logits buffer"].bytes / GB == pytest.approx(34.4, rel=0.01)
    assert m.needed_bytes / GB == pytest.approx(289.9, rel=0.01)
    assert m.budget_bytes / GB == pytest.approx(259.2, rel=1e-9)
    assert m.status == "fail" and m.margin_bytes < 0
    assert v.status == "fail"
    assert "budget is 259.2 GB" in v.reason and "255.5 GB weights/tables + 34.4 GB buffers" in v.reason


def test_tp2_explicit_false_is_gpu_resident_and_fails(seed_points, cards, runners):
    p = _tp(seed_points, 2)[0]
    _, m = _memory(p, hand_launch(p, offload=False), cards, runners)
    assert m.status == "fail"


def test_tp4_gpu_resident_fits(seed_points, cards, runners):
    p = _tp(seed_points, 4)[-1]
    _, m = _memory(p, hand_launch(p, offload=False), cards, runners)
    lines = {x.component: x for x in m.gpu}
    assert (lines["weights"].bytes + lines["engram table"].bytes) / GB == pytest.approx(128, rel=0.01)
    assert lines["engram table"].bytes / GIB == pytest.approx(47.2, rel=1e-6)
    assert m.status == "ok" and not m.host


def test_offload_argument_forms(seed_points, cards):
    table = cards.models["dsv41flash"].tables[0]
    p = _tp(seed_points, 2)[0]

    def where(argv):
        s = engine_settings("vllm", ["vllm", "serve", "m", *argv], {}, point_tp=2)
        return table_on_host(table, s)[0]

    assert where(["--engram-config", '{"cpu_offload":true}']) is True
    assert where(['--engram-config={"cpu_offload": true}']) is True
    assert where(["--engram_config", '{"cpu_offload":false}']) is False
    assert where(["--engram-config", "{}"]) is False  # key missing: the card's default (gpu)
    assert where([]) is False
    with pytest.raises(ValueError, match="engram-config"):
        where(["--engram-config", "{not json"])
    assert p.tp == 2


def test_host_memory_over_node_dram_fails(seed_points, cards):
    p = _tp(seed_points, 2)[0]
    s = engine_settings("vllm", hand_launch(p).argv, {}, capacity_bytes=cards.hardware["mi355x"].memory, point_tp=2)
    small = NodeFacts(gpus_per_node=8, available_dram_bytes=700 * GIB)  # 4 x 188.8 GiB = 755.2 GiB needed
    m = check_memory(p, s, cards.models["dsv41flash"], cards.hardware["mi355x"], small)
    assert m.status == "fail"
    assert any("exceeds the node" in f for f in m.findings)


def test_offload_without_hardware_facts_fails(seed_points, cards):
    p = _tp(seed_points, 2)[0]
    s = engine_settings("vllm", hand_launch(p).argv, {}, capacity_bytes=cards.hardware["mi355x"].memory, point_tp=2)
    m = check_memory(p, s, cards.models["dsv41flash"], cards.hardware["mi355x"], None)
    assert m.status == "fail"
    assert any("no hardware facts" in f for f in m.findings)


def test_node_facts_from_label_nodes(runners):
    direct = node_facts(runners, "cluster:mi355x-amds")
    via_nodes = node_facts(runners, "mi355x")  # label -> mi355x-amds_NN -> cluster:mi355x-amds
    assert direct == via_nodes and direct.gpus_per_node == 8
    assert node_facts(runners, "no-such-runner") is None


def test_kv_capacity_and_max_length_sequence(cards, runners):
    """A GQA card on a GPU: KV tokens from the pool; a pool below one max-length sequence fails."""
    from infx.matrix.point import Point
    from infx.preflight.cards import CardSet, ModelCard

    card = ModelCard.model_validate({
        "model-prefix": "gqa8b", "model": "x/gqa8b", "dtype": "bf16",
        "weights": {"checkpoint": {"bf16": "16 GB"}},
        "attention": {"kind": "gqa", "layers": 32, "kv-heads": 8, "head-dim": 128},
    })
    cs = CardSet(models={"gqa8b": card}, hardware=cards.hardware)
    row = {"image": "vllm/vllm-openai:v0.11.0", "model": "x/gqa8b", "model-prefix": "gqa8b", "precision": "bf16",
           "framework": "vllm", "runner": "h100", "exp-name": "gqa8b_1k1k", "point-id": "p1", "isl": 1024, "osl": 1024,
           "max-model-len": 2304, "tp": 1, "conc": 64}
    p = Point.from_row(row)
    launch = hand_launch(p, offload=None)
    launch = launch.model_copy(update={"argv": ["vllm", "serve", "x", "--gpu-memory-utilization", "0.9",
                                                "--max-model-len", "2304"]})
    kv = predict_kv_capacity(p, launch, cs, runners=runners)
    # 80 GB x 0.9 - 16 GB - 1 GiB runtime; 32 layers x 2 x 8 heads x 128 x 2 B = 131072 B/token
    # vLLM reports whole 16-token blocks (2304 = 144 blocks, so no per-request rounding loss)
    pool = (int(80e9 * 0.9) - 16 * 10**9 - GIB) // 131072
    expected = pool // 16 * 16
    assert kv == expected
    m = preflight_points([p], cards=cs, runners=runners, launches={"p1": launch})[0].memory
    assert m.seqs_fit == pytest.approx(pool / 2048)
    tiny_pool = launch.model_copy(update={"argv": [*launch.argv[:4], "0.25", "--max-model-len", "1000000"]})
    m2 = preflight_points([p], cards=cs, runners=runners, launches={"p1": tiny_pool})[0].memory
    assert m2.status == "fail" and any("max-length sequence" in f for f in m2.findings)


def test_missing_card_warns_not_fails(seed_points, cards, runners):
    from infx.preflight.cards import CardSet

    p = seed_points[0]
    empty = CardSet(models={}, hardware=cards.hardware)
    v = preflight_points([p], cards=empty, runners=runners, launches={p.point_id: hand_launch(p)})[0]
    memory = v.check("memory")
    assert memory.status == "warn" and "memory unverifiable: no card for 'dsv41flash'" in memory.message


def test_options_default_fanout_and_runtime_override(seed_points, cards, runners):
    p = _tp(seed_points, 2)[0]
    base = preflight_points([p], cards=cards, runners=runners, launches={p.point_id: hand_launch(p)})[0].memory
    more = preflight_points([p], cards=cards, runners=runners, launches={p.point_id: hand_launch(p)},
                            options=PreflightOptions(runtime_overhead_bytes=5 * GIB))[0].memory
    assert base.needed_bytes + 4 * GIB == more.needed_bytes


def test_kv_dram_offload_counts_host_memory_and_needs_facts(seed_points, cards, runners):
    p = _tp(seed_points, 4)[0].model_copy(update={"kv_offloading": "dram", "total_cpu_dram_gb": 1499})
    s = engine_settings("vllm", hand_launch(p, offload=False).argv, {}, capacity_bytes=cards.hardware["mi355x"].memory,
                        point_tp=4)
    m = check_memory(p, s, cards.models["dsv41flash"], cards.hardware["mi355x"], node_facts(runners, p.runner))
    host = {x.component: x.bytes for x in m.host}
    assert host == {"KV offload (DRAM)": 1499 * GB} and m.servers_per_node == 2 and m.status == "ok"
    m = check_memory(p, s, cards.models["dsv41flash"], cards.hardware["mi355x"], None)
    assert m.status == "fail" and "no hardware facts" in m.problems[0]


def test_kv_dtype_outside_card_options_warns(seed_points, cards, runners):
    p = _tp(seed_points, 4)[0]
    launch = hand_launch(p, offload=False, extra=["--kv-cache-dtype", "fp8_e5m2"])
    v = preflight_points([p], cards=cards, runners=runners, launches={p.point_id: launch})[0]
    assert v.check("memory").status == "warn" and "fp8_e5m2" in v.check("memory").message
    v = preflight_points([p], cards=cards, runners=runners,
                         launches={p.point_id: hand_launch(p, offload=False, extra=["--kv-cache-dtype", "fp8"])})[0]
    assert v.check("memory").status == "ok"


def test_kv_dtype_spellings_of_the_scripts_match_card_options(seed_points, cards, runners):
    """The InferenceX scripts write bfloat16 and fp8_e4m3; cards write bf16 and fp8: the same dtypes."""
    p = _tp(seed_points, 4)[0]
    for dtype in ("fp8_e4m3", "FP8"):
        v = preflight_points([p], cards=cards, runners=runners,
                             launches={p.point_id: hand_launch(p, offload=False, extra=["--kv-cache-dtype", dtype])})[0]
        assert v.check("memory").status == "ok", dtype
    tiny = cards.models["tinyllama"]
    assert "bf16" in tiny.kv_dtypes
    from infx.preflight.memory import _dtype_family

    assert _dtype_family("bfloat16") == _dtype_family("bf16") and _dtype_family("fp8_e5m2") != _dtype_family("fp8")
