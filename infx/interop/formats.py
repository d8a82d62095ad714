"""The two InferenceX result formats, typed (spec: inferencex-evals-power-results.md §3, §4).

* :class:`RawClientResult`: what its bench client (``benchmark_serving.py``) writes as
  ``<RESULT_FILENAME>.json``: totals, rates and ``{stat}_{metric}_ms`` latencies (milliseconds).
* :class:`AggResult`: what its ``process_result.py`` makes of it, ``agg_<RESULT_FILENAME>.json``:
  identity, per-GPU throughputs, latencies in **seconds**, ``{stat}_intvty`` (tok/s/user) and
  power keys. A published "combined" file is a JSON list of these.

Key spelling is the contract (``request_goodput:`` with its colon, ``p99.9_ttft``), so every such
key is a field alias; ``model_dump(by_alias=True)`` writes the files in the reference key order.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

STATS = ("mean", "median", "std", "p90", "p99", "p99.9")
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")
# infx Stat attribute for each InferenceX statistic name
STAT_ATTR = {"mean": "mean", "median": "median", "std": "std", "p90": "p90", "p99": "p99", "p99.9": "p999"}

POWER_SCHEMA_VERSION = 2  # power_metric_schema_version: unprefixed joules_per_* are whole-deployment
WHOLE_POWER_KEYS = ("avg_power_w", "avg_total_gpu_power_w", "total_gpu_energy_j", "joules_per_successful_query",
                    "joules_per_input_token", "joules_per_output_token", "joules_per_total_token")
ROLE_POWER_KEYS = ("prefill_gpu_energy_j", "prefill_avg_power_w", "prefill_joules_per_input_token",
                   "decode_gpu_energy_j", "decode_avg_power_w", "decode_joules_per_output_token")


def field_name(key: str) -> str:
    """A Python attribute name for a published key (``p99.9_ttft`` -> ``p999_ttft``)."""
    return key.replace(".", "").replace(":", "")


def raw_latency_keys() -> list[str]:
    """``mean_ttft_ms`` ... ``p99.9_e2el_ms`` in the bench client's order (metric, then statistic)."""
    return [f"{stat}_{metric}_ms" for metric in LATENCY_METRICS for stat in STATS]


def agg_latency_keys() -> list[str]:
    """The agg latency keys in process_result's order: each raw key ending in ``ms`` -> seconds
    (without ``_ms``), and right after each TPOT key its interactivity (``tpot`` -> ``intvty``)."""
    out: list[str] = []
    for key in raw_latency_keys():
        out.append(key[: -len("_ms")])
        if "tpot" in key:
            out.append(key[: -len("_ms")].replace("tpot", "intvty"))
    return out


class _Strict(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", populate_by_name=True, strict=True)


class _RawHead(_Strict):
    date: str
    backend: str
    model_id: str
    tokenizer_id: str
    best_of: int = 1
    num_prompts: int
    request_rate: str | float  # "inf" for an unlimited rate
    burstiness: float = 1.0
    max_concurrency: int | None
    duration: float  # seconds
    benchmark_start_time_unix: float
    benchmark_end_time_unix: float
    completed: int
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float  # req/s
    request_goodput: float | None = Field(None, alias="request_goodput:")  # the key has a trailing colon
    output_throughput: float  # tok/s
    total_token_throughput: float  # tok/s (input + output)
    input_lens: list[int] = Field(default_factory=list)
    output_lens: list[int] = Field(default_factory=list)


# pydantic's create_model overloads cannot type field definitions passed as a built ``**`` mapping (the published
# latency keys), hence the call-overload ignore; the result is the head model with those fields added
RawClientResult: type[_RawHead] = create_model(  # type: ignore[call-overload]  # fields from raw_latency_keys()
    "RawClientResult", __base__=_RawHead, __doc__="The bench client's result JSON (latencies in ms).",
    **{field_name(k): (float, Field(alias=k)) for k in raw_latency_keys()})


class Router(_Strict):
    name: str
    version: str


#: Largest concurrency, parallelism or GPU count an agg file may state (well past any fleet, within 64 bits).
_MAX_COUNT = 2**24


class _AggHead(BaseModel):
    # published files may carry keys newer than this model: kept (extra="allow"), never invented
    model_config = ConfigDict(allow_inf_nan=False, extra="allow", populate_by_name=True, strict=True)

    hw: str
    conc: int
    image: str
    model: str
    infmax_model_prefix: str
    framework: str
    precision: str
    spec_decoding: str
    disagg: bool
    recipe_fingerprint: str = ""
    isl: int
    osl: int
    router: Router | None = None
    kv_p2p_transfer: str | None = None
    is_multinode: bool
    # single node (dp_attention is the string as the workflow passed it, e.g. "true")
    tp: int | None = None
    pp: int | None = None
    dcp_size: int | None = None
    pcp_size: int | None = None
    ep: int | None = None
    dp_attention: str | bool | None = None
    # multi-node roles
    prefill_tp: int | None = None
    prefill_pp: int | None = None
    prefill_dcp_size: int | None = None
    prefill_pcp_size: int | None = None
    prefill_ep: int | None = None
    prefill_dp_attention: str | bool | None = None
    prefill_num_workers: int | None = None
    decode_tp: int | None = None
    decode_pp: int | None = None
    decode_dcp_size: int | None = None
    decode_pcp_size: int | None = None
    decode_ep: int | None = None
    decode_dp_attention: str | bool | None = None
    decode_num_workers: int | None = None
    num_prefill_gpu: int | None = None
    num_decode_gpu: int | None = None
    prefill_hw: str | None = None
    decode_hw: str | None = None
    # per GPU, tok/s
    tput_per_gpu: float
    output_tput_per_gpu: float
    input_tput_per_gpu: float
    # power (§2.5): present when telemetry was processed
    power_metric_schema_version: int | None = None
    power_valid: int | None = None

    @model_validator(mode="after")
    def _topology(self) -> _AggHead:
        need: tuple[str, ...]
        if self.is_multinode:
            need = ("prefill_tp", "prefill_ep", "prefill_dp_attention", "prefill_num_workers", "decode_tp",
                    "decode_ep", "decode_dp_attention", "decode_num_workers", "num_prefill_gpu", "num_decode_gpu")
        else:
            need = ("tp", "ep", "dp_attention")
        missing = [k for k in need if getattr(self, k) is None]
        if missing:
            kind = "multi-node" if self.is_multinode else "single-node"
            raise ValueError(f"{kind} result lacks {', '.join(missing)}")
        if self.disagg and not self.is_multinode:
            raise ValueError("disagg: true on a single-node result (InferenceX requires multi-node for disagg)")
        self._figures()
        return self

    def _figures(self) -> None:
        """Impossible figures: an empty hw, conc or tp of 0 or below or past any fleet, a negative rate."""
        if not self.hw.strip():
            raise ValueError("hw is empty")
        counts = {"conc": self.conc, "isl": self.isl, "osl": self.osl}
        counts.update({k: getattr(self, k) for k in ("tp", "pp", "dcp_size", "pcp_size", "ep")})
        for k, v in counts.items():
            if v is not None and not 1 <= v <= _MAX_COUNT:
                raise ValueError(f"{k} {v} is not a count between 1 and {_MAX_COUNT:,}")
        roles = [f"{r}{k}" for r in ("prefill_", "decode_") for k in ("tp", "pp", "dcp_size", "pcp_size", "ep",
                                                                         "num_workers")]
        for k in (*roles, "num_prefill_gpu", "num_decode_gpu"):  # a pool without workers says 0
            v = getattr(self, k)
            if v is not None and not 0 <= v <= _MAX_COUNT:
                raise ValueError(f"{k} {v} is not a count between 0 and {_MAX_COUNT:,}")
        for k in ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"):
            if getattr(self, k) < 0:
                raise ValueError(f"{k} {getattr(self, k)} is negative")

    def gpus(self) -> tuple[int, int, int]:
        """(all GPUs, GPUs under the output rate, GPUs under the input rate), as process_result divides."""
        if not self.is_multinode:
            n = (self.tp or 1) * (self.pp or 1) * (self.pcp_size or 1)
            return n, n, n
        p, d = self.num_prefill_gpu or 0, self.num_decode_gpu or 0
        return p + d, (d if d > 0 else p + d), p

    def dump(self) -> dict[str, Any]:
        """The agg dict as published: aliases, and only the keys that were present / set."""
        return self.model_dump(by_alias=True, exclude_unset=True)


AggResult: type[_AggHead] = create_model(  # type: ignore[call-overload]  # fields from agg_latency_keys()
    "AggResult", __base__=_AggHead, __doc__="InferenceX's aggregated result (latencies in seconds).",
    **{field_name(k): (float | None, Field(None, alias=k)) for k in agg_latency_keys()},
    **{k: (float | None, None) for k in WHOLE_POWER_KEYS + ROLE_POWER_KEYS})
