"""Multinode rows of the real InferenceX catalog: rendered as InferenceX launches them, and their memory
verdicts say what is a real OOM risk.

Each case is one real catalog row of a class the gate used to fail falsely:
* vLLM data parallelism spelled ``tp < ep`` with ``dp-attn`` (``dep8`` = ``tp: 1, ep: 8``; ``TP4 x DP4 = EP16``;
  ``TP16 x DP2 with EP32`` as ``num-worker: 2``), once rendered onto 1 GPU or a quarter of its GPUs;
* SGLang prefill context parallelism (``pcp-size: 8``), once rendered ``--tp-size 1``;
* agentic vLLM roles without ``--max-model-len``: bounded by the native context, with the rule in the text;
* settings the row's recipe file sets and infx cannot read: a failure that depends only on the engine's
  defaults for them is a named warning, while weights that can never be resident stay a failure.

Expected figures are worked out here from the card values, independently of the memory code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.engines.disagg.render import render_deployment
from infx.matrix.point import Point
from infx.matrix.select import select_points
from infx.preflight.cards import load_cards
from infx.preflight.gate import preflight_points
from infx.workspace import BUILTIN_CARDS_DIR


@pytest.fixture(scope="module")
def cards():  # type: ignore[no-untyped-def]
    return load_cards([BUILTIN_CARDS_DIR])


def _points(compat: Path, key: str) -> list[Point]:
    return select_points([str(compat / "amd-master.yaml"), str(compat / "nvidia-master.yaml")],
                         str(compat / "runners.yaml"), [key], evals="none", conc=None)


def _verdicts(compat: Path, points: list[Point], cards):  # type: ignore[no-untyped-def]
    from infx.catalog import load_runners

    return preflight_points(points, runners=load_runners(compat / "runners.yaml"), cards=cards,
                            launches={p.point_id: render_deployment(p) for p in points})


def _mem(v, role: str) -> dict:  # type: ignore[no-untyped-def]
    c = v.check(f"memory:{role}")
    assert c is not None, [x.name for x in v.checks]
    return c


def _weights(check) -> int:  # type: ignore[no-untyped-def]
    return next(x["bytes"] for x in check.details["memory"]["gpu"] if x["component"] == "weights")


def test_kimik26_dep8_worker_is_eight_gpus(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    """kimik2.6-fp4-b200-dynamo-vllm, recipe disagg-b200-1p1d-dep8-tp8-c1.yaml: prefill ``tp: 1, ep: 8,
    dp-attn`` is DEP8, one 8-GPU B200 node: TP 1 x DP 8, experts over 8 GPUs, non-expert bytes on each rank."""
    p = next(x for x in _points(compat, "kimik2.6-fp4-b200-dynamo-vllm")
             if "dep8-tp8-c1" in " ".join(x.prefill.additional_settings))  # type: ignore[union-attr]
    dep = render_deployment(p)
    pre = dep.role("prefill")
    assert pre.gpus_per_instance == 8 and pre.count == 1
    argv = pre.launch.argv
    assert argv[argv.index("--tensor-parallel-size") + 1] == "1"
    assert argv[argv.index("--data-parallel-size") + 1] == "8" and "--enable-expert-parallel" in argv
    (v,) = _verdicts(compat, [p], cards)
    c = _mem(v, "prefill")
    assert c.status != "fail" and "(8 GPU each)" in c.message
    card = cards.model_for("kimik2.6")
    total = card.weights.total_bytes("fp4", p.model)
    expert = int(total * card.weights.checkpoint_for(p.model).expert_fraction)
    assert _weights(c) == (total - expert) + expert // 8
    assert v.check("capacity").details["gpus"] == 16  # prefill DEP8 + decode TP8


def test_kimik3_dp_spellings(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    """kimik3-fp4-h200-vllm-agentic 'TP16 x DP2 with EP32 across four H200 nodes' (num-worker 2, tp 16,
    ep 32): one server of 32 GPUs. kimik3-fp4-gb200-dynamo-vllm-agentic 'TP4 x DP4 = EP16' (num-worker 1,
    tp 4, ep 16): one server of 16 GPUs."""
    h200 = next(x for x in _points(compat, "kimik3-fp4-h200-vllm-agentic") if x.prefill.tp == 16)  # type: ignore[union-attr]
    role = render_deployment(h200).role("prefill")
    assert (role.count, role.gpus_per_instance) == (1, 32)
    a = role.launch.argv
    assert (a[a.index("--tensor-parallel-size") + 1], a[a.index("--data-parallel-size") + 1]) == ("16", "2")
    gb200 = next(x for x in _points(compat, "kimik3-fp4-gb200-dynamo-vllm-agentic") if x.prefill.ep == 16  # type: ignore[union-attr]
                 and x.prefill.dp_attn)  # type: ignore[union-attr]
    role = render_deployment(gb200).role("prefill")
    assert (role.count, role.gpus_per_instance) == (1, 16)
    a = role.launch.argv
    assert (a[a.index("--tensor-parallel-size") + 1], a[a.index("--data-parallel-size") + 1]) == ("4", "4")
    for v in _verdicts(compat, [h200, gb200], cards):
        c = _mem(v, "prefill")
        assert c.status != "fail", c.message
    card = cards.model_for("kimik3")
    total = card.weights.total_bytes("fp4", h200.model)
    ck = card.weights.checkpoint_for(h200.model)
    frac = ck.expert_fraction if ck and ck.expert_fraction else card.moe.expert_fraction
    expert = int(total * frac)
    (v,) = _verdicts(compat, [h200], cards)
    assert _weights(_mem(v, "prefill")) == (total - expert) // 16 + expert // 32  # dense / TP16 + experts / 32


def test_glm52_pcp8_prefill_is_attention_cp_on_eight_gpus(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    """glm5.2-fp8-h200-dynamo-sglang-agentic-mtp-2p2d, recipe disagg-h200-2p2d-pcp8-tp8-dp8-mtp.yaml:
    prefill ``tp: 1, pcp-size: 8`` is SGLang's --tp-size 8 with 8 attention CP ranks (attention replicated
    on each, the MoE layers over all 8), not --tp-size 1 holding the whole checkpoint."""
    (p, *_) = _points(compat, "glm5.2-fp8-h200-dynamo-sglang-agentic-mtp-2p2d")
    pre = render_deployment(p).role("prefill")
    a = pre.launch.argv
    assert a[a.index("--tp-size") + 1] == "8" and a[a.index("--attn-cp-size") + 1] == "8"
    assert "--enable-nsa-prefill-context-parallel" in a and pre.gpus_per_instance == 8 and pre.count == 2
    (v,) = _verdicts(compat, [p], cards)
    c = _mem(v, "prefill")
    assert c.status != "fail", c.message
    card = cards.model_for("glm5.2")
    total = card.weights.total_bytes("fp8", p.model)
    ck = card.weights.checkpoint_for(p.model)
    frac = ck.expert_fraction if ck and ck.expert_fraction else card.moe.expert_fraction
    mtp = card.speculative.get("mtp")
    base = total - (0 if p.spec_decoding != "none" or mtp is None or not mtp.in_checkpoint else (mtp.bytes or 0))
    expert = int(base * frac)
    attn = min(int(base * card.moe.attention_fraction), base - expert)
    rest = base - expert - attn
    assert _weights(c) == attn + rest // 8 + expert // 8  # attention TP = 8 / 8 CP ranks = 1


def test_dsv4_dep8_roles_are_not_one_gpu(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    """dsv4-fp4-b200-dynamo-vllm-mtp ('Each worker maps to one full 8-GPU B200 node (prefill dep8)') and
    dsv4-fp4-gb200-llmd-vllm (PREFILL_NODES=2 x GPUS_PER_NODE=4): the 838 GB checkpoint over 8 GPUs, not one."""
    for key in ("dsv4-fp4-b200-dynamo-vllm-mtp", "dsv4-fp4-gb200-llmd-vllm"):
        points = _points(compat, key)
        for p in points:
            assert render_deployment(p).role("prefill").gpus_per_instance == 8, key
        for v in _verdicts(compat, points, cards):
            assert _mem(v, "prefill").status != "fail", (key, _mem(v, "prefill").message)


def test_agentic_vllm_context_rule_and_recipe_dependent_knobs(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    """dsv4-fp4-gb200-dynamo-vllm-agentic-mtp-agg DEP8 (recipe agg-gb200-dep8-mtp-agentic.yaml): no
    --max-model-len, so vLLM's default, the native 1,048,576 tokens the unfiltered agentic corpus needs; the
    KV pool falls short only with the engine defaults for gpu-memory-utilization and max-num-batched-tokens
    (the DSA indexer buffer is max-num-batched-tokens x max-model-len), which the recipe sets: a warning
    that names them and the recipe, with the per-GPU breakdown kept."""
    p = next(x for x in _points(compat, "dsv4-fp4-gb200-dynamo-vllm-agentic-mtp-agg") if x.prefill.dp_attn)  # type: ignore[union-attr]
    assert p.max_model_len is None and p.scenario_type == "agentic-coding"
    (v,) = _verdicts(compat, [p], cards)
    c = _mem(v, "prefill")
    mem = c.details["memory"]
    assert mem["max_model_len"] == 1_048_576
    assert "which the agentic corpus needs" in mem["settings"]["max_model_len"]
    assert c.status == "warn" and "recipe-dependent" in c.message
    assert "recipes/vllm/deepseek-v4/agentic/agg-gb200-dep8-mtp-agentic.yaml" in c.message
    assert "memory_fraction 0.92 (engine default)" in c.message and "max_num_batched_tokens 16384" in c.message
    assert "less than one max-length sequence (1,048,576 tokens, model card max-context" in c.message
    assert mem["gpu"] and mem["status"] == "warn"


def test_weights_that_never_fit_stay_a_failure(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    """The same row forced onto 1 GPU per rank of TP 1 without EP splitting (the old render of a DEP8
    worker): 838 GB of weights exceed any GPU, whatever the recipe sets: still fail."""
    from infx.preflight.launchargs import engine_settings
    from infx.preflight.memory import check_memory
    from infx.preflight.roles import serving_knobs_source, unverifiable_knobs

    p = next(x for x in _points(compat, "dsv4-fp4-b200-dynamo-vllm-mtp"))
    hw = cards.hardware["b200"]
    s = engine_settings("vllm", ["vllm", "serve", p.model, "--tensor-parallel-size", "1"], {},
                        capacity_bytes=hw.memory, card_max_context=1_048_576, point_max_model_len=p.max_model_len)
    m = check_memory(p, s, cards.model_for("dsv4"), hw, None)
    assert m.status == "fail"
    knobs = serving_knobs_source(p, p.prefill)
    assert knobs is not None and knobs.startswith("recipe recipes/vllm/deepseek-v4/8k1k/")
    out = unverifiable_knobs(m, knobs)
    assert out.status == "fail" and any("no serving setting" in x for x in out.problems)


def test_recipe_dependent_boundary_is_the_highest_fraction_inferencex_uses() -> None:
    """Weights + runtime at 97% of the GPU fail at any setting InferenceX uses (at most 0.95); at 90% the
    failure rests on the assumed utilisation: a warning naming it and the recipe."""
    from infx.preflight.roles import unverifiable_knobs
    from infx.preflight.verdict import MemoryLine, MemoryReport

    cap = 180 * 10**9

    def report(share: float) -> MemoryReport:
        w = int(cap * share)
        return MemoryReport(status="fail", device="b200", engine_rule="vllm", capacity_bytes=cap,
                            budget_bytes=int(cap * 0.92), needed_bytes=w, margin_bytes=int(cap * 0.92) - w,
                            gpu=[MemoryLine(component="weights", bytes=w - 10**9, where="gpu"),
                                 MemoryLine(component="runtime overhead", bytes=10**9, where="gpu")],
                            problems=["short"], findings=["short"],
                            settings={"memory_fraction": "0.92 (engine default)",
                                      "max_num_seqs": "64 (--max-num-seqs)"})

    hard = unverifiable_knobs(report(0.97), "recipe r.yaml")
    assert hard.status == "fail" and "95% of the GPU" in hard.problems[-1]
    soft = unverifiable_knobs(report(0.90), "recipe r.yaml")
    assert soft.status == "warn" and soft.problems[0].startswith("recipe-dependent:")
    assert "memory_fraction 0.92 (engine default)" in soft.problems[0] and "max_num_seqs" not in soft.problems[0]
    assert "recipe r.yaml" in soft.problems[0] and soft.problems[0].endswith("with the defaults: short")


def test_dep_role_counts_one_server_per_node_for_host_memory(compat: Path, cards) -> None:  # type: ignore[no-untyped-def]
    """minimaxm3-fp4-gb300-dynamo-vllm-agentic-mtp-disagg, recipe 1p3d-dep4-tp4-c24-agentic.yaml: the DEP4
    prefill (tp: 1, ep: 4) is one 4-GPU server per 4-GPU GB300 node, so its KV-offload DRAM is counted once
    per node, not once per GPU."""
    p = next(x for x in _points(compat, "minimaxm3-fp4-gb300-dynamo-vllm-agentic-mtp-disagg")
             if x.prefill.tp == 1 and x.kv_offloading == "dram")  # type: ignore[union-attr]
    assert render_deployment(p).role("prefill").gpus_per_instance == 4
    (v,) = _verdicts(compat, [p], cards)
    mem = _mem(v, "prefill").details["memory"]
    assert mem["servers_per_node"] == 1
    assert mem["host_per_node_bytes"] == mem["host_per_server_bytes"] > 0
