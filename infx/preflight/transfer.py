"""KV-transfer buffers of a disaggregated worker: what its connector allocates per GPU (or on the host)
beyond the KV cache, read from the role's rendered launch.

Each rule states its source. Connectors that register the KV cache itself for transfer (zero copy)
get a 0-byte line, so the report says the transfer was considered and why it costs nothing extra;
sizes the launch leaves to the engine are named as not counted, never guessed.

- vLLM ``--kv-transfer-config``: ``P2pNcclConnector`` keeps a ``kv_buffer_size`` buffer (vLLM's
  ``KVTransferConfig`` default 1e9 bytes) on ``kv_buffer_device``; ``NixlConnector`` registers the
  KV cache in place when the buffer device is the GPU, and with ``kv_buffer_device: cpu`` stages it
  through a host copy as large as the KV cache; ``ExampleConnector`` writes KV to files (disk).
- SGLang ``--disaggregation-transfer-backend`` (mooncake, nixl, mori, ...): the KV pool is registered
  with the transfer engine in place; only small metadata buffers besides.
- TensorRT-LLM ``cache_transceiver_config``: ``max_tokens_in_buffer`` tokens of KV per GPU, and with
  ``kv_cache_bounce_size_mb`` two bounce regions (one send, one receive) of that many MiB.
"""

from __future__ import annotations

from typing import Any

from infx.preflight.launchargs import EngineSettings, json_arg
from infx.preflight.units import MIB, gib
from infx.preflight.verdict import MemoryLine, Where

COMPONENT = "KV-transfer buffer"
VLLM_KV_BUFFER_SIZE_DEFAULT = 10**9  # vllm/config/kv_transfer.py KVTransferConfig.kv_buffer_size


def transfer_buffers(settings: EngineSettings, kv_bytes_per_token: int | None) -> tuple[list[MemoryLine], list[str]]:
    """(memory lines, findings) for one worker instance's KV connector."""
    cpu = settings.device_kind == "cpu"
    if settings.engine == "vllm":
        return _vllm(settings, cpu)
    if settings.engine == "sglang":
        backend = settings.args.get("disaggregation-transfer-backend")
        if not backend:
            return [], []
        return [_line(0, "gpu" if not cpu else "host", f"SGLang {backend}: the KV pool is registered in place "
                      f"(zero copy); metadata buffers only")], []
    if settings.engine == "trt":
        return _trt(settings.options.get("cache_transceiver_config"), kv_bytes_per_token, cpu)
    return [], []


def _line(size: float, where: Where, note: str, estimate: bool = False) -> MemoryLine:
    return MemoryLine(component=COMPONENT, bytes=int(size), where=where, note=note, estimate=estimate)


def _vllm(settings: EngineSettings, cpu: bool) -> tuple[list[MemoryLine], list[str]]:
    cfg = json_arg(settings.args, "kv-transfer-config")
    if not cfg:
        return [], []
    connector = str(cfg.get("kv_connector", ""))
    device = str(cfg.get("kv_buffer_device") or ("cpu" if cpu else "cuda")).lower()
    where: Where = "host" if cpu or device == "cpu" else "gpu"
    if connector == "ExampleConnector":
        return [_line(0, where, "ExampleConnector: KV goes through files in its shared directory "
                                "(disk, not memory)")], []
    if connector.startswith("P2pNccl"):
        size = float(cfg.get("kv_buffer_size", VLLM_KV_BUFFER_SIZE_DEFAULT))
        src = "kv_buffer_size" if "kv_buffer_size" in cfg else "vLLM's default kv_buffer_size"
        return [_line(size, where, f"{connector}: {src} {size:,.0f} B on {device} = {gib(size)}")], []
    if connector.startswith("Nixl"):
        if where == "gpu":
            return [_line(0, "gpu", f"{connector}: registers the KV cache in place (kv_buffer_device {device})")], []
        if cpu:
            return [_line(0, "host", f"{connector} on CPU: the KV cache is registered in place")], []
        return [], [f"{connector} with kv_buffer_device cpu stages KV through a host copy as large as the KV "
                    f"cache: host memory not counted"]
    return [], [f"KV connector '{connector}': transfer buffers not modelled, not counted"]


def _trt(cfg: Any, kv_bpt: int | None, cpu: bool) -> tuple[list[MemoryLine], list[str]]:
    if not isinstance(cfg, dict):
        return [], []
    where: Where = "host" if cpu else "gpu"
    backend = cfg.get("backend", "DEFAULT")
    lines: list[MemoryLine] = []
    findings: list[str] = []
    tokens = cfg.get("max_tokens_in_buffer")
    if tokens is None:
        findings.append(f"TRT-LLM cache transceiver ({backend}) without max_tokens_in_buffer: its buffer is sized by "
                        f"the engine at start-up, not counted")
    elif kv_bpt is None:
        findings.append(f"TRT-LLM max_tokens_in_buffer {int(tokens):,}: KV bytes per token unknown, buffer not counted")
    else:
        size = int(tokens) * kv_bpt
        lines.append(_line(size, where, f"TRT-LLM {backend}: max_tokens_in_buffer {int(tokens):,} x {kv_bpt:,} "
                                        f"B KV/token = {gib(size)}"))
    bounce = int(cfg.get("kv_cache_bounce_size_mb") or 0)
    if bounce:
        lines.append(_line(2 * bounce * MIB, where,
                           f"TRT-LLM bounce buffer: 2 regions (send, receive) x {bounce:,} MiB"))
    if not lines and not findings:
        lines.append(_line(0, where, f"TRT-LLM {backend}: no transfer buffer configured"))
    return lines, findings
