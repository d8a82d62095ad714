"""vLLM adapter (``vllm serve`` / ``python -m vllm.entrypoints.openai.api_server``)."""

from __future__ import annotations

from typing import Any, ClassVar

from infx.engines.adapter import ABSENT, TOPOLOGY_FIELDS, EngineAdapter, Owned, Topology, UnsupportedTopology

# KV offload backends (the point's kv-offload-backend name) -> vLLM KV connector.
_CONNECTORS = {
    "vllm-simple": "SimpleCPUOffloadConnector",
    "lmcache": "LMCacheConnectorV1",
    "mooncake": "MooncakeStoreConnector",
}


class VllmAdapter(EngineAdapter):
    name: ClassVar[str] = "vllm"
    default_entrypoint: ClassVar[list[str]] = ["vllm", "serve"]
    aliases: ClassVar[dict[str, str]] = {
        "tp": "tensor-parallel-size",
        "pp": "pipeline-parallel-size",
        "dp": "data-parallel-size",
        "dcp": "decode-context-parallel-size",
        "pcp": "prefill-context-parallel-size",
        "q": "quantization",
    }

    def serve_flags(self, model_path: str, served_name: str, host: str, port: str) -> dict[str, Any]:
        return {"model": model_path, "served-model-name": served_name, "host": host, "port": port}

    def topology(self, t: Topology) -> Owned:
        o = Owned(consumed=set(TOPOLOGY_FIELDS))
        if t.dp_attn:
            o.flags["tensor-parallel-size"] = 1
            o.flags["data-parallel-size"] = t.tp
            o.sources.update({"tensor-parallel-size": "dp-attn=true", "data-parallel-size": f"tp={t.tp} with dp-attn"})
        else:
            o.flags["tensor-parallel-size"] = t.tp
            o.flags["data-parallel-size"] = ABSENT
            o.sources.update({"tensor-parallel-size": f"tp={t.tp}", "data-parallel-size": "dp-attn=false"})
        o.flags["pipeline-parallel-size"] = t.pp if t.pp > 1 else ABSENT
        o.sources["pipeline-parallel-size"] = f"pp={t.pp}"
        o.flags["enable-expert-parallel"] = True if t.ep > 1 else ABSENT
        o.sources["enable-expert-parallel"] = f"ep={t.ep}"
        o.flags["decode-context-parallel-size"] = t.dcp_size if t.dcp_size > 1 else ABSENT
        o.sources["decode-context-parallel-size"] = f"dcp-size={t.dcp_size}"
        o.flags["prefill-context-parallel-size"] = t.pcp_size if t.pcp_size > 1 else ABSENT
        o.sources["prefill-context-parallel-size"] = f"pcp-size={t.pcp_size}"
        if t.max_model_len is not None:
            o.flags["max-model-len"] = t.max_model_len
            o.sources["max-model-len"] = f"max-model-len={t.max_model_len}"
            o.consumed.add("max-model-len")
        if t.spec_decoding != "none":
            o.flags["speculative-config"] = {"method": t.spec_decoding, "num_speculative_tokens": t.spec_tokens}
            if t.spec_decoding == "ngram":  # prompt lookup: the drafts are the tokens after the last n-gram match
                o.flags["speculative-config"].update({"prompt_lookup_max": 3, "prompt_lookup_min": 1})
        else:
            o.flags["speculative-config"] = ABSENT
        o.sources["speculative-config"] = f"spec-decoding={t.spec_decoding}"
        for f in ("kv-offloading-backend", "kv-offloading-size", "kv-transfer-config"):
            o.flags[f] = ABSENT
            o.sources[f] = f"kv-offloading={t.kv_offloading}"
        if t.kv_offloading == "dram":
            o.consumed.add("kv-offload-backend")
            backend = t.kv_offload_backend or "vllm-native"
            if backend in ("native", "vllm-native"):
                o.flags["kv-offloading-backend"] = "native"
                o.flags["kv-offloading-size"] = t.total_cpu_dram_gb
            elif backend in _CONNECTORS:
                cfg: dict[str, Any] = {"kv_connector": _CONNECTORS[backend], "kv_role": "kv_both"}
                if backend == "vllm-simple":
                    cfg["kv_connector_extra_config"] = {"cpu_bytes_to_use": t.total_cpu_dram_gb * 10**9 // t.gpus}
                o.flags["kv-transfer-config"] = cfg
            else:
                raise UnsupportedTopology(
                    f"vLLM has no KV offload backend '{backend}' (known: native, {', '.join(_CONNECTORS)})")
        return o
