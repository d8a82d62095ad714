"""SGLang adapter (``python -m sglang.launch_server``)."""

from __future__ import annotations

from typing import Any, ClassVar

from infx.engines.adapter import ABSENT, TOPOLOGY_FIELDS, EngineAdapter, Owned, Topology, UnsupportedTopology


class SglangAdapter(EngineAdapter):
    name: ClassVar[str] = "sglang"
    default_entrypoint: ClassVar[list[str]] = ["python3", "-m", "sglang.launch_server"]
    aliases: ClassVar[dict[str, str]] = {
        "tp": "tp-size",
        "tensor-parallel-size": "tp-size",
        "pp": "pp-size",
        "dp": "dp-size",
        "ep": "ep-size",
        "model": "model-path",
    }
    context_flag: ClassVar[str] = "context-length"
    tp_flag: ClassVar[str] = "tp-size"

    def serve_flags(self, model_path: str, served_name: str, host: str, port: str) -> dict[str, Any]:
        return {"model-path": model_path, "served-model-name": served_name, "host": host, "port": port,
                "enable-metrics": True}

    def topology(self, t: Topology) -> Owned:
        o = Owned(consumed=set(TOPOLOGY_FIELDS))
        if t.dcp_size > 1 or t.pcp_size > 1:
            raise UnsupportedTopology("SGLang adapter does not render dcp-size/pcp-size > 1")
        o.flags["tp-size"] = t.tp
        o.sources["tp-size"] = f"tp={t.tp}"
        o.flags["pp-size"] = t.pp if t.pp > 1 else ABSENT
        o.sources["pp-size"] = f"pp={t.pp}"
        o.flags["ep-size"] = t.ep if t.ep > 1 else ABSENT
        o.sources["ep-size"] = f"ep={t.ep}"
        o.flags["enable-dp-attention"] = True if t.dp_attn else ABSENT
        o.flags["dp-size"] = t.tp if t.dp_attn else ABSENT
        dp_attn_src = f"dp-attn={str(t.dp_attn).lower()}"
        o.sources.update({"enable-dp-attention": dp_attn_src, "dp-size": dp_attn_src})
        if t.max_model_len is not None:
            o.flags["context-length"] = t.max_model_len
            o.sources["context-length"] = f"max-model-len={t.max_model_len}"
            o.consumed.add("max-model-len")
        spec_flags = ("speculative-algorithm", "speculative-num-steps", "speculative-eagle-topk",
                      "speculative-num-draft-tokens")
        if t.spec_decoding != "none":
            algo = "EAGLE" if t.spec_decoding in ("mtp", "eagle") else t.spec_decoding.upper()
            o.flags.update({
                "speculative-algorithm": algo,
                "speculative-num-steps": t.spec_tokens,
                "speculative-eagle-topk": 1,
                "speculative-num-draft-tokens": t.spec_tokens + 1,
            })
        else:
            for f in spec_flags:
                o.flags[f] = ABSENT
        for f in spec_flags:
            o.sources[f] = f"spec-decoding={t.spec_decoding}"
        o.flags["enable-hierarchical-cache"] = ABSENT
        o.flags["hicache-size"] = ABSENT
        kv_src = f"kv-offloading={t.kv_offloading}"
        o.sources.update({"enable-hierarchical-cache": kv_src, "hicache-size": kv_src})
        if t.kv_offloading == "dram":
            o.consumed.add("kv-offload-backend")
            backend = t.kv_offload_backend or "hicache"
            if backend != "hicache":
                raise UnsupportedTopology(f"SGLang adapter has no KV offload backend '{backend}' (known: hicache)")
            o.flags["enable-hierarchical-cache"] = True
            o.flags["hicache-size"] = max(1, t.total_cpu_dram_gb // t.gpus)  # GB per rank
        return o
