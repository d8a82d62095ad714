"""Engine budget rules (analysis-and-memory.md section 3) on hand-computed numbers."""

from __future__ import annotations

import pytest

from infx.preflight.budget import engine_budget
from infx.preflight.launchargs import engine_settings
from infx.preflight.units import GB, GIB, MIB

CAP = 288 * GB


def test_vllm_budget_is_fraction_of_total():
    s = engine_settings("vllm", ["--gpu-memory-utilization", "0.9"], {}, capacity_bytes=CAP)
    b = engine_budget(s, CAP, static_bytes=150 * GB, dynamic_bytes=40 * GB)
    assert b.budget_bytes == int(CAP * 0.9)
    assert b.kv_pool_bytes == int(CAP * 0.9) - 190 * GB


def test_vllm_default_utilisation_is_the_engine_default():
    s = engine_settings("vllm", [], {}, capacity_bytes=CAP)
    assert s.memory_fraction.value == 0.92 and s.memory_fraction.source == "default"


def test_vllm_explicit_kv_cache_memory():
    s = engine_settings("vllm", ["--kv-cache-memory-bytes", str(50 * GB)], {}, capacity_bytes=CAP)
    b = engine_budget(s, CAP, static_bytes=150 * GB, dynamic_bytes=40 * GB)
    assert b.kv_pool_bytes == 50 * GB and b.budget_bytes == CAP - 50 * GB


def test_sglang_mem_fraction_static_covers_weights_and_kv():
    s = engine_settings("sglang", ["--tp-size", "8", "--mem-fraction-static", "0.85"], {}, capacity_bytes=CAP)
    b = engine_budget(s, CAP, static_bytes=100 * GB, dynamic_bytes=20 * GB)
    assert b.budget_bytes == int(CAP * 0.85)
    assert b.kv_pool_bytes == int(CAP * 0.85) - 100 * GB  # weights + KV = capacity x f
    assert b.reserve_bytes == CAP - int(CAP * 0.85) and b.reserve_needed_bytes == 20 * GB


def test_sglang_auto_fraction_reserve():
    s = engine_settings("sglang", ["--tp-size", "8", "--chunked-prefill-size", "8192", "--cuda-graph-max-bs", "256"],
                        {}, capacity_bytes=CAP)
    b = engine_budget(s, CAP, static_bytes=100 * GB, dynamic_bytes=5 * GB)
    reserve = int((512 + 1.5 * 8192 + 2 * 256 + 1024 * 8 / 8) * MIB)  # 14 GiB > the 10 GiB floor
    assert reserve > 10 * GIB
    assert b.reserve_bytes == pytest.approx(reserve, abs=2)


def test_trt_fraction_applies_to_free_memory():
    s = engine_settings("trtllm", ["--kv_cache_free_gpu_memory_fraction", "0.5"], {}, capacity_bytes=CAP)
    b = engine_budget(s, CAP, static_bytes=100 * GB, dynamic_bytes=28 * GB)
    assert b.budget_bytes == CAP
    assert b.kv_pool_bytes == int((CAP - 128 * GB) * 0.5)


def test_trt_reads_extra_options_yaml():
    opts = """max_batch_size: 64
max_num_tokens: 8192
kv_cache_config:
  free_gpu_memory_fraction: 0.94
  dtype: fp8
cuda_graph_config:
  enable_padding: true
  batch_sizes: [1, 2, 4, 8, 16, 32]
speculative_config:
  decoding_type: MTP
  num_nextn_predict_layers: 3
"""
    argv = ["trtllm-serve", "model", "--tp_size", "8", "--extra_llm_api_options", "infx-trt-extra-options.yaml"]
    s = engine_settings("trt", argv, {}, capacity_bytes=CAP, files={"infx-trt-extra-options.yaml": opts})
    assert s.tp.value == 8 and s.max_num_seqs.value == 64 and s.memory_fraction.value == 0.94
    assert s.spec_tokens.value == 3 and s.graph_ceiling.value == 32 * 4 and s.kv_cache_dtype.value == "fp8"
    assert "kv_cache_config.free_gpu_memory_fraction" in s.memory_fraction.describe()
    with pytest.raises(ValueError, match="does not parse"):
        engine_settings("trt", argv, {}, files={"infx-trt-extra-options.yaml": "a: [1,"})
