"""The seed scenario (TP=2 vs TP=4 agentic sweep on MI355X) rendered from the repo's recipes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infx.engines.recipes import load_recipes
from infx.engines.render import render_launch

from .helpers import flag_value, seed_point

REPO = Path(__file__).resolve().parents[2]
CONCS = [1, 2, 4, 8, 16, 32, 64, 128]


@pytest.fixture(scope="module")
def recipes():
    return load_recipes(REPO / "recipes")


@pytest.mark.parametrize("tp", [2, 4])
@pytest.mark.parametrize("conc", CONCS)
def test_seed_launch(recipes, tp: int, conc: int) -> None:
    launch = render_launch(seed_point(tp, conc), recipes)
    a = launch.argv
    assert launch.recipe == "dsv41flash-fp4-mi355x-vllm-agentic"
    assert flag_value(a, "--tensor-parallel-size") == str(tp)
    assert flag_value(a, "--gpu-memory-utilization") == "0.9"
    assert flag_value(a, "--max-num-batched-tokens") == "16384"
    assert flag_value(a, "--max-model-len") == "1048576"
    assert "--max-num-seqs" not in a
    spec = json.loads(flag_value(a, "--speculative-config"))
    assert spec == {"method": "mtp", "num_speculative_tokens": 7}
    # the CUDA-graph capture ceiling: max(2*conc, 128) * (1 + 7)
    cc = json.loads(flag_value(a, "--compilation-config"))
    assert cc["max_cudagraph_capture_size"] == (2048 if conc == 128 else 1024)
    engram = json.loads(flag_value(a, "--engram-config"))
    assert engram == {"cpu_offload": tp == 2}
    assert a.count("--engram-config") == 1


def test_seed_launch_sharing(recipes) -> None:
    fps = {(tp, c): render_launch(seed_point(tp, c), recipes).fingerprint for tp in (2, 4) for c in CONCS}
    assert len(set(fps.values())) == 4
    for tp in (2, 4):
        assert len({fps[(tp, c)] for c in CONCS[:-1]}) == 1  # c1..c64 share one launch
        assert fps[(tp, 128)] != fps[(tp, 64)]
    assert fps[(2, 1)] != fps[(4, 1)]


def test_engram_value_is_exact_json(recipes) -> None:
    a2 = render_launch(seed_point(2, 1), recipes).argv
    a4 = render_launch(seed_point(4, 1), recipes).argv
    assert flag_value(a2, "--engram-config") == '{"cpu_offload":true}'
    assert flag_value(a4, "--engram-config") == '{"cpu_offload":false}'


def test_seed_vendor_and_hardware_layers(recipes) -> None:
    launch = render_launch(seed_point(4, 1), recipes)
    assert launch.env == {"VLLM_ROCM_USE_AITER": "1"}  # vendor amd layer
    assert flag_value(launch.argv, "--moe-backend") == "aiter"
    assert launch.argv[:2] == ["vllm", "serve"]
