"""The renderer against the spec's golden renderings (section 3.4, case R1) and against the upstream
renderer itself, run under node over every single-node combination of the corpus."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.recipes.render import RecipeSelection, default_features, render, single_node_combinations
from infx.recipes.source import RecipeRepo
from tests.recipes.helpers import CORPUS, needs_corpus, run_oracle, seed_recipes_repo

pytestmark = needs_corpus


def split_spec(text: str) -> list[str]:
    """The spec's argv text as tokens: spaces split, except inside a JSON value's braces."""
    out: list[str] = []
    depth = 0
    cur = ""
    for ch in text:
        if ch == " " and depth == 0:
            if cur:
                out.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur:
        out.append(cur)
    return out


@pytest.fixture(scope="module")
def repo() -> RecipeRepo:
    return RecipeRepo(CORPUS)


TV = ["tool_calling", "reasoning", "spec_decoding"]
REASONING_CFG = '{"reasoning_parser":"deepseek_v4","reasoning_start_str":"","reasoning_end_str":""}'
G2_ARGV = ("deepseek-ai/DeepSeek-V4-Flash-0731 --trust-remote-code --kv-cache-dtype fp8 --block-size 256 "
           "--tensor-parallel-size 8 --attention_config.use_fp4_indexer_cache True --no-enable-flashinfer-autotune "
           "--tokenizer-mode deepseek_v4 --tool-call-parser deepseek_v4 --enable-auto-tool-choice --reasoning-parser "
           f"deepseek_v4 --reasoning-config {REASONING_CFG} --speculative-config "
           '{"method":"dspark","num_speculative_tokens":7,"draft_sample_method":"probabilistic"}')
G3_ARGV = G2_ARGV.replace("--tensor-parallel-size 8 --attention_config.use_fp4_indexer_cache True "
                          "--no-enable-flashinfer-autotune",
                          "--enable-expert-parallel --tensor-parallel-size 8 --attention_config.use_fp4_indexer_cache "
                          "True --moe-backend deep_gemm_mega_moe")
AITER = {"VLLM_ROCM_USE_AITER": "1"}

# name: (recipe, variant, strategy, hardware, features (None: defaults), argv after "vllm serve", env, image)
GOLDEN = {
    "G1": ("deepseek-ai/DeepSeek-V4-Flash", "fp8", "single_node_tp", "mi355x", TV,
           "deepseek-ai/DeepSeek-V4-Flash --trust-remote-code --kv-cache-dtype fp8 --block-size 256 "
           "--tensor-parallel-size 8 --distributed-executor-backend mp --gpu-memory-utilization 0.9 --max-num-seqs 512 "
           '--max-num-batched-tokens 8192 --compilation-config {"mode": 3, "cudagraph_mode": "FULL_DECODE_ONLY"} '
           "--tokenizer-mode deepseek_v4 --tool-call-parser deepseek_v4 --enable-auto-tool-choice --reasoning-parser "
           f"deepseek_v4 --reasoning-config {REASONING_CFG} --speculative-config "
           '{"method":"mtp","num_speculative_tokens":2}', AITER, "vllm/vllm-openai-rocm:nightly"),
    "G2": ("deepseek-ai/DeepSeek-V4-Flash", "default", "single_node_tp", "b200", None, G2_ARGV, {},
           "vllm/vllm-openai:v0.25.0"),
    "G3": ("deepseek-ai/DeepSeek-V4-Flash", "default", "single_node_tep", "b200", None, G3_ARGV, {},
           "vllm/vllm-openai:v0.25.0"),
    "G4": ("meta-llama/Llama-3.3-70B-Instruct", "default", "single_node_tp", "xeon6", None,
           "meta-llama/Llama-3.3-70B-Instruct --tensor-parallel-size 8", None, "vllm/vllm-openai-cpu:latest-x86_64"),
    "G5": ("meta-llama/Llama-3.3-70B-Instruct", "default", "single_node_tp", "mi355x", None,
           "meta-llama/Llama-3.3-70B-Instruct --tensor-parallel-size 1", AITER, None),
    "G6": ("thinkingmachines/Inkling-Small", "mxfp4", "single_node_tp", "mi355x", None,
           "EmbeddedLLM/Inkling-Small-MXFP4 --trust-remote-code --tokenizer-mode inkling --moe-backend aiter "
           "--block-size 128 --gpu-memory-utilization 0.95 --tensor-parallel-size 1 --enable-auto-tool-choice "
           "--tool-call-parser inkling --reasoning-parser inkling", None, "vllm/vllm-openai-rocm:nightly"),
    "G7": ("moonshotai/Kimi-K3", "default", "single_node_tp", "mi355x", None,
           "moonshotai/Kimi-K3 --trust-remote-code --tensor-parallel-size 8 --load-format auto "
           "--gpu-memory-utilization 0.95 --mm-encoder-tp-mode data --max-num-seqs 128 --max-num-batched-tokens 4096 "
           '--compilation-config {"cudagraph_mode":"FULL_DECODE_ONLY","custom_ops":["+fused_rms_norm_gated"]} '
           "--enable-auto-tool-choice --tool-call-parser kimi_k3 --reasoning-parser kimi_k3", None, None),
    "G8": ("MiniMaxAI/MiniMax-M3", "mxfp4", "single_node_tp", "mi355x", None,
           "amd/MiniMax-M3-MXFP4 --block-size 128 --trust-remote-code --mm-encoder-tp-mode data "
           "--mm-encoder-attn-backend ROCM_AITER_FA --tensor-parallel-size 8 --attention-backend TRITON_ATTN "
           "--tool-call-parser minimax_m3 --enable-auto-tool-choice --reasoning-parser minimax_m3", None, None),
    "G9": ("openai/gpt-oss-120b", "default", "single_node_tp", "mi355x", None,
           "openai/gpt-oss-120b --tensor-parallel-size 1 --attention-backend ROCM_AITER_UNIFIED_ATTN "
           "-cc.pass_config.fuse_rope_kvcache=True -cc.use_inductor_graph_partition=True --gpu-memory-utilization 0.95 "
           "--block-size=64 --tool-call-parser openai --enable-auto-tool-choice", None, None),
    "G10": ("deepseek-ai/DeepSeek-R1", "default", "single_node_tp", "mi355x", None,
            "deepseek-ai/DeepSeek-R1 --trust-remote-code --enable-expert-parallel --tensor-parallel-size 8 "
            "--enable-auto-tool-choice --tool-call-parser deepseek_v3 --chat-template "
            "examples/tool_chat_template_deepseekr1.jinja --reasoning-parser deepseek_r1", None, None),
    "G11": ("meta-models/Muse-Glimmer-30B", "default", "single_node_tp", "mi355x", None,
            "meta-models/Muse-Glimmer-30B --generation-config auto --attention-backend ROCM_AITER_FA "
            "--tensor-parallel-size 1 --enable-auto-tool-choice --tool-call-parser muse_glimmer --reasoning-parser "
            "muse_glimmer", None, None),
    "G12": ("deepseek-ai/DeepSeek-V4-Pro", "fp8", "single_node_tp", "mi355x", TV,
            "deepseek-ai/DeepSeek-V4-Pro --trust-remote-code --kv-cache-dtype fp8 --block-size 256 "
            "--tensor-parallel-size 8 --distributed-executor-backend mp --gpu-memory-utilization 0.9 "
            "--max-num-seqs 512 "
            '--max-num-batched-tokens 8192 --compilation-config {"mode": 3, "cudagraph_mode": "FULL_DECODE_ONLY"} '
            "--tokenizer-mode deepseek_v4 --tool-call-parser deepseek_v4 --enable-auto-tool-choice --reasoning-parser "
            'deepseek_v4 --speculative-config {"method":"mtp","num_speculative_tokens":2}', AITER, None),
    "G13": ("zai-org/GLM-5.2", "mxfp4", "single_node_tp", "mi355x", None,
            "amd/GLM-5.2-MXFP4 --kv-cache-dtype fp8_e4m3 --trust-remote-code --tensor-parallel-size 8 "
            "--linear-backend aiter --moe-backend aiter --tool-call-parser glm47 --enable-auto-tool-choice "
            "--reasoning-parser glm45", None, "vllm/vllm-openai-rocm:nightly-4c626633159887b0f2c962058c17c78f1434556d"),
}


@pytest.mark.parametrize("case", sorted(GOLDEN, key=lambda k: int(k[1:])))
def test_golden_renderings(repo: RecipeRepo, case: str) -> None:
    model, variant, strategy, hw, feats, argv, env, image = GOLDEN[case]
    r = render(repo, RecipeSelection(recipe_path=f"models/{model}.yaml", variant=variant, strategy=strategy,
                                     hardware=hw, features=feats))
    assert r.argv == ["vllm", "serve", *split_spec(argv)]
    if env is not None:
        assert r.env == env
    if image is not None:
        assert r.docker_image == image
    assert len(r.provenance) == len(r.argv)


SEED_COMMON_TAIL = ("--tool-call-parser deepseek_v41 --enable-auto-tool-choice --reasoning-parser deepseek_v41 "
                    '--speculative-config {"method":"dspark","num_speculative_tokens":5,"draft_sample_method":'
                    '"probabilistic","rejection_sample_method":"block","enable_adaptive_verification":false}')


def test_golden_seed_renderings(tmp_path: Path) -> None:
    """G-seed: the constructed seed recipe (built by the test, committed; read from git objects)."""
    root, commit = seed_recipes_repo(tmp_path / "recipes")
    repo = RecipeRepo(root, commit)
    rel = "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml"

    def sel(strategy: str, hw: str):
        return render(repo, RecipeSelection(recipe_path=rel, strategy=strategy, hardware=hw, features=TV))

    tp = sel("single_node_tp", "mi355x")
    assert tp.argv == ["vllm", "serve", *split_spec(
        "deepseek-ai/DeepSeek-V4.1-Flash --tokenizer-mode deepseek_v41 --tensor-parallel-size 2 "
        "--gpu-memory-utilization 0.9 --moe-backend aiter --no-swa-bounded-replay --engram-config "
        '{"cpu_offload":true} ' + SEED_COMMON_TAIL)]
    assert tp.env == {"VLLM_ENGINE_READY_TIMEOUT_S": "3600", "VLLM_ROCM_USE_AITER": "1", "VLLM_ROCM_USE_AITER_MOE": "1",
                      "AITER_TRITON_LOG_LEVEL": "ERROR", "VLLM_USE_BREAKABLE_CUDAGRAPH": "1"}
    assert tp.docker_image == "vllm/vllm-openai-rocm:nightly"
    assert tp.selection.recipe_commit == commit
    # the TP token's provenance is the map entry of strategy_overrides.single_node_tp.tp
    i = tp.argv.index("--tensor-parallel-size") + 1
    src = tp.provenance[i]
    assert src.file == rel and src.key_path == "strategy_overrides.single_node_tp.tp.mi355x"
    assert repo.tree.read(rel).decode().splitlines()[src.line - 1].strip() == "mi355x: 2"

    tep = sel("single_node_tep", "mi355x")
    assert "--enable-expert-parallel --tensor-parallel-size 8 --gpu-memory-utilization 0.9 --moe-backend aiter " \
           "--no-swa-bounded-replay" in " ".join(tep.argv)
    assert "--engram-config" not in tep.argv
    mi325 = sel("single_node_tp", "mi325x")
    assert mi325.argv[mi325.argv.index("--tensor-parallel-size") + 1] == "4"
    assert "--no-swa-bounded-replay" in mi325.argv
    b200 = sel("single_node_tp", "b200")
    assert b200.argv[b200.argv.index("--tensor-parallel-size") + 1] == "4"
    assert b200.argv[-1].endswith('"enable_adaptive_verification":true}')
    assert b200.docker_image == "vllm/vllm-openai:deepseekv41-flash-0909"


def _jobs(repo: RecipeRepo) -> tuple[list[RecipeSelection], list[dict]]:
    sels = []
    for lr in repo.all_recipes():
        for s in single_node_combinations(repo, lr):
            sels.append(s.model_copy(update={"features": default_features(lr.recipe, s.variant, s.hardware)}))
    jobs = [{"recipe": s.recipe_path, "variant": s.variant, "strategy": s.strategy, "hardware": s.hardware,
             "features": s.features, "modes": s.modes} for s in sels]
    return sels, jobs


def _assert_all_equal(repo: RecipeRepo, root: Path) -> int:
    sels, jobs = _jobs(repo)
    t0 = time.perf_counter()
    mine = [render(repo, s) for s in sels]
    t_infx = time.perf_counter() - t0
    theirs, _ = run_oracle(root, jobs)
    bad = []
    for s, m, o in zip(sels, mine, theirs, strict=True):
        got = {"argv": m.argv, "env": m.env, "image": m.docker_image}
        if o != got:
            bad.append((s.recipe_path, s.variant, s.strategy, s.hardware, o, got))
    assert not bad, f"{len(bad)} of {len(sels)} renderings differ from upstream; first: {bad[0]}"
    assert t_infx >= 0
    return len(sels)


def test_every_corpus_combination_equals_the_upstream_renderer(repo: RecipeRepo) -> None:
    """Every (recipe, variant, offered single-node strategy, listed hardware) with the default features."""
    n = _assert_all_equal(repo, CORPUS)
    assert n >= 400  # all 16 recipes contribute (460 at the corpus's commit)
    assert {s.recipe_path for s in _jobs(repo)[0]} == set(repo.recipe_files())


def test_feature_and_mode_selections_equal_the_upstream_renderer(repo: RecipeRepo) -> None:
    """Every feature switched on alone, and every mode of a modes feature, on each recipe's first listed
    hardware and strategy."""
    sels = []
    for lr in repo.all_recipes():
        combos = single_node_combinations(repo, lr)
        for s in combos[:3]:
            for f, feat in lr.recipe.features.items():
                if feat.modes:
                    for m in feat.modes:
                        sels.append(s.model_copy(update={"features": [f], "modes": {f: m}}))
                else:
                    sels.append(s.model_copy(update={"features": [f]}))
    sels = [s for s in sels if not (lambda f: f.strategies and s.strategy not in f.strategies)(
        repo.recipe(s.recipe_path).recipe.features[s.features[0]])]
    jobs = [{"recipe": s.recipe_path, "variant": s.variant, "strategy": s.strategy, "hardware": s.hardware,
             "features": s.features, "modes": s.modes} for s in sels]
    theirs, _ = run_oracle(CORPUS, jobs)
    bad: list[object] = []
    refused = 0
    for s, o in zip(sels, theirs, strict=True):
        try:
            m = render(repo, s)
        except InfxError as exc:
            # a mode the variant or hardware excludes: upstream falls back to another mode, infx refuses
            assert "is excluded for variant" in str(exc.diagnostics[0]), exc.diagnostics[0]
            refused += 1
            continue
        if o != {"argv": m.argv, "env": m.env, "image": m.docker_image}:
            bad.append((s, o, m.argv))
    assert len(sels) - refused > 100
    assert not bad, bad[:2]


def test_seed_corpus_from_git_equals_the_upstream_renderer(tmp_path: Path) -> None:
    root, commit = seed_recipes_repo(tmp_path / "recipes")
    _assert_all_equal(RecipeRepo(root, commit), root)
