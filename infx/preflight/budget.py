"""How each engine turns device memory into a KV-cache budget at start-up.

(shared/spec/analysis-and-memory.md section 3.)

* vLLM: ``gpu_memory_utilization`` is a fraction of TOTAL device memory; KV budget =
  capacity x utilisation - (weights + peak activations + non-torch runtime memory). A budget <= 0,
  or one that cannot hold a single max-length sequence, fails at start-up. On CPU the KV cache is
  sized explicitly (``VLLM_CPU_KVCACHE_SPACE`` GiB or ``--kv-cache-memory-bytes``) in host memory.
* SGLang: ``mem_fraction_static`` = (weights + KV pool) / capacity, so KV pool = capacity x f -
  weights; activations, graph buffers and runtime must fit in capacity x (1 - f). Unset, the
  fraction is derived from a reserve of 512 + 1.5 x max(chunked_prefill, 2048) + 2 x
  cuda_graph_max_bs + 1024 x TP x PP / 8 MiB (at least 10 GiB on > 60 GB devices).
* TRT-LLM: ``free_gpu_memory_fraction`` applies to the memory FREE after everything else:
  KV pool = (capacity - non-KV) x f.
"""

from __future__ import annotations

from dataclasses import dataclass

from infx.preflight.launchargs import EngineSettings
from infx.preflight.units import GIB, MIB, gb

# Runtime memory outside weights/buffers that every engine process holds on each GPU: device
# context, collective-communication buffers, sampler and allocator slack. Estimates (the engines
# do not log them separately); CUDA-graph memory is NOT in vLLM's budget (it comes on top).
RUNTIME_OVERHEAD_BYTES = {
    "vllm": 1 * GIB,
    "sglang": 1 * GIB,
    "trt": 1 * GIB,
}
RUNTIME_OVERHEAD_NOTE = "device context + collective buffers + sampler (estimate)"
# vLLM-CPU: the Python process, torch and the engine core without weights or KV (measured RSS of
# the embedded engine minus weights and its 1 GiB KV cache: about 2.3 GB; estimate).
CPU_RUNTIME_OVERHEAD_BYTES = int(2.5 * GIB)


@dataclass(frozen=True)
class Budget:
    """What one engine allows for non-KV memory and what is left for the KV pool."""

    rule: str  # human-readable formula with the numbers filled in
    budget_bytes: int  # what the needed (non-KV) bytes are compared against
    kv_pool_bytes: int  # what the engine would give the KV cache
    reserve_bytes: int | None = None  # SGLang: capacity x (1 - f), must hold buffers + runtime
    reserve_needed_bytes: int | None = None


def engine_budget(settings: EngineSettings, capacity: int, static_bytes: int, dynamic_bytes: int) -> Budget:
    """``static_bytes``: weights and GPU-resident tables; ``dynamic_bytes``: buffers, activations,
    runtime overhead. Returns the budget and the KV pool the engine would carve out."""
    frac = settings.memory_fraction.value
    needed = static_bytes + dynamic_bytes
    if settings.engine == "sglang":
        if frac is None:
            reserve_mib = (512 + 1.5 * max(int(settings.max_num_batched_tokens.value or 2048), 2048)
                           + 2 * int((settings.graph_ceiling.value or 0) // (1 + int(settings.spec_tokens.value or 0)))
                           + 1024 * int(settings.tp.value) * int(settings.pp.value) / 8)
            reserve = int(reserve_mib * MIB)
            if capacity > 60 * 10**9:
                reserve = max(reserve, 10 * GIB)
            frac = (capacity - reserve) / capacity
            src = "auto"
        else:
            src = f"--{settings.memory_fraction.name}"
        budget = int(capacity * frac)
        return Budget(
            rule=f"sglang: mem_fraction_static {frac:.3f} ({src}) x {gb(capacity)} = {gb(budget)} for weights + KV",
            budget_bytes=budget,
            kv_pool_bytes=budget - static_bytes,
            reserve_bytes=capacity - budget,
            reserve_needed_bytes=dynamic_bytes,
        )
    if settings.engine == "trt":
        free = capacity - needed
        pool = int(max(free, 0) * frac)
        return Budget(
            rule=f"trt-llm: free_gpu_memory_fraction {frac:g} x ({gb(capacity)} - non-KV)",
            budget_bytes=capacity,
            kv_pool_bytes=pool if free > 0 else free,
        )
    # vLLM on a GPU
    budget = int(capacity * frac)
    src = settings.memory_fraction.describe()
    if settings.kv_cache_bytes.value is not None:
        kv = int(settings.kv_cache_bytes.value)
        return Budget(
            rule=f"vllm: --{settings.kv_cache_bytes.name} fixes the KV cache at {gb(kv)}; "
                 f"non-KV + KV <= {gb(capacity)}",
            budget_bytes=capacity - kv,
            kv_pool_bytes=kv,
        )
    return Budget(
        rule=f"vllm: gpu_memory_utilization {src} x {gb(capacity)} = {gb(budget)}; KV = budget - non-KV",
        budget_bytes=budget,
        kv_pool_bytes=budget - needed,
    )
