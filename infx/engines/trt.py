"""TensorRT-LLM adapter (``trtllm-serve`` plus its ``--extra_llm_api_options`` YAML)."""

from __future__ import annotations

from typing import Any, ClassVar

from infx.engines.adapter import ABSENT, TOPOLOGY_FIELDS, EngineAdapter, Owned, Topology, UnsupportedTopology


class TrtAdapter(EngineAdapter):
    name: ClassVar[str] = "trt"
    default_entrypoint: ClassVar[list[str]] = ["trtllm-serve"]
    aliases: ClassVar[dict[str, str]] = {"tp": "tp_size", "pp": "pp_size", "ep": "ep_size"}
    dash_names: ClassVar[bool] = False
    options_file: ClassVar[str | None] = "infx-trt-extra-options.yaml"
    context_flag: ClassVar[str] = "max_seq_len"
    tp_flag: ClassVar[str] = "tp_size"

    def model_in_entrypoint(self) -> bool:
        return True

    def serve_flags(self, model_path: str, served_name: str, host: str, port: str) -> dict[str, Any]:
        # trtllm-serve takes the model positionally and serves it under that name.
        return {"host": host, "port": port, "backend": "pytorch"}

    def topology(self, t: Topology) -> Owned:
        o = Owned(consumed=set(TOPOLOGY_FIELDS))
        if t.dcp_size > 1 or t.pcp_size > 1:
            raise UnsupportedTopology("TRT-LLM adapter does not render dcp-size/pcp-size > 1")
        o.flags["tp_size"] = t.tp
        o.flags["pp_size"] = t.pp
        o.flags["ep_size"] = t.ep
        o.sources.update({"tp_size": f"tp={t.tp}", "pp_size": f"pp={t.pp}", "ep_size": f"ep={t.ep}"})
        if t.max_model_len is not None:
            o.flags["max_seq_len"] = t.max_model_len
            o.sources["max_seq_len"] = f"max-model-len={t.max_model_len}"
            o.consumed.add("max-model-len")
        o.options["enable_attention_dp"] = t.dp_attn
        if t.spec_decoding != "none":
            if t.spec_decoding == "mtp":
                o.options["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": t.spec_tokens}
            else:
                o.options["speculative_config"] = {"decoding_type": "Eagle", "max_draft_len": t.spec_tokens}
        else:
            o.options["speculative_config"] = ABSENT
        if t.kv_offloading == "dram":
            o.consumed.add("kv-offload-backend")
            if t.kv_offload_backend not in (None, "trt-host", "host"):
                raise UnsupportedTopology(
                    f"TRT-LLM adapter has no KV offload backend '{t.kv_offload_backend}' (known: host)")
            o.options["kv_cache_config"] = {"host_cache_size": t.total_cpu_dram_gb * 10**9 // t.gpus}
        return o

    def argv(self, entrypoint: list[str], model_path: str, flags: dict[str, Any]) -> list[str]:
        out = super().argv(entrypoint, model_path, flags)
        return out + ["--extra_llm_api_options", self.options_file or ""]
