"""Read the engine settings that matter for memory and concurrency out of a RENDERED launch.

The gate never trusts recipe comments, catalog text or changelog prose: it parses the argv and
env that will actually be launched (``Launch.argv`` / ``Launch.env`` from
:func:`infx.engines.render.render_launch`) and falls back to the engine's own default when a
flag is absent, saying so (``source`` is ``argv``, ``env``, ``default`` or ``point``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from infx.diagnostics import InfxError
from infx.preflight.units import GIB

Source = Literal["argv", "env", "default", "point", "card", "unknown"]

# Short spellings some engines accept, mapped to the long name.
_SHORT = {"tp": "tensor-parallel-size", "pp": "pipeline-parallel-size", "dp": "data-parallel-size",
          "o": "compilation-config", "cc": "compilation-config"}


def parse_argv(argv: Sequence[str]) -> dict[str, str | bool]:
    """``--flag value`` / ``--flag=value`` / bare ``--flag`` -> ``{"flag": value|True}``.

    Names are normalised (``--max_num_seqs`` == ``--max-num-seqs``); the last occurrence wins, as
    with argparse. A bare ``--no-foo`` is recorded as ``foo: False``. Positional arguments are ignored.
    """
    out: dict[str, str | bool] = {}
    i = 0
    args = list(argv)
    while i < len(args):
        tok = args[i]
        if tok.startswith("-") and not tok.startswith("--") and tok.lstrip("-").split("=")[0].lower() not in _SHORT:
            pass  # an unknown short option (python -m, -O3): not an engine setting we read
        elif tok.startswith("-") and len(tok) > 1 and not _is_number(tok):
            name = tok.lstrip("-")
            value: str | bool
            if "=" in name:
                name, value = name.split("=", 1)
            elif i + 1 < len(args) and (not args[i + 1].startswith("-") or _is_number(args[i + 1])):
                value = args[i + 1]
                i += 1
            else:
                value = True
            name = name.replace("_", "-").lower()
            name = _SHORT.get(name, name)
            if value is True and name.startswith("no-"):
                out[name[3:]] = False
            else:
                out[name] = value
        i += 1
    return out


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def json_arg(args: Mapping[str, str | bool], name: str) -> dict[str, Any] | None:
    """The JSON object passed to ``--name`` (``{"cpu_offload":true}``), or None when absent.
    A value that is not a JSON object raises ValueError naming the flag."""
    raw = args.get(name)
    if raw is None or isinstance(raw, bool):
        return None
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--{name} value is not valid JSON: {exc.msg} in {raw!r}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"--{name} value must be a JSON object, got {raw!r}")
    return obj


def truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return str(value).strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Setting:
    """One resolved launch quantity and where it came from."""

    value: Any
    source: Source
    name: str = ""

    def describe(self) -> str:
        flag = (self.name if " " in self.name else f"--{self.name}") if self.name else "argv"
        where = {"argv": flag, "env": self.name or "env", "default": "engine default",
                 "point": "point", "card": self.name if " " in self.name else "model card",
                 "unknown": "unknown"}[self.source]
        return f"{self.value} ({where})"

    def describe_tokens(self) -> str:
        """A token count and its source: ``9,472 tokens, point`` / ``1,048,576 tokens, model card ...``."""
        where = self.describe().split(" (", 1)[1][:-1] if " (" in self.describe() else self.source
        return f"{int(self.value):,} tokens, {where}"


@dataclass
class EngineSettings:
    """The engine's memory/concurrency settings for one launch."""

    engine: str
    device_kind: Literal["gpu", "cpu"]
    args: dict[str, str | bool]
    env: dict[str, str]
    tp: Setting
    pp: Setting
    max_model_len: Setting
    max_num_batched_tokens: Setting
    max_num_seqs: Setting  # value None: no fixed cap known (derived by the engine at start-up)
    memory_fraction: Setting  # vLLM gpu-memory-utilization / SGLang mem-fraction-static / TRT free fraction
    spec_tokens: Setting
    graph_ceiling: Setting  # largest captured CUDA-graph batch in tokens; value None: graphs off or unknown
    kv_cache_dtype: Setting
    kv_cache_bytes: Setting  # explicit KV cache size (bytes) or None
    # Data parallelism inside one server: vLLM's --data-parallel-size (each rank a full attention
    # replica of TP GPUs, the MoE layers over all DP x TP GPUs); SGLang's --dp-size with
    # --enable-dp-attention (attention TP = tp / dp inside the tp GPUs); TRT-LLM's enable_attention_dp.
    dp: Setting = field(default_factory=lambda: Setting(1, "default"))
    dp_attention: Setting = field(default_factory=lambda: Setting(False, "default"))
    # EP size (vLLM: DP x TP when enabled)
    expert_parallel: Setting = field(default_factory=lambda: Setting(1, "default"))
    # SGLang's prefill context parallelism: --attn-cp-size attention CP ranks inside --tp-size, each
    # holding the whole attention (attention TP = tp / dp / attn_cp) and, after the KV all-gather, the
    # whole sequence's KV: one pool's worth of tokens, replicated, not attn_cp pools.
    attn_cp: Setting = field(default_factory=lambda: Setting(1, "default"))
    notes: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)  # TRT-LLM's extra options YAML ({} for other engines)

    @property
    def dp_within_tp(self) -> bool:
        """Attention data parallelism inside the TP group (SGLang, TRT-LLM, ATOM's --enable-dp-attention),
        as opposed to vLLM's data-parallel ranks of TP GPUs each."""
        return bool(self.dp_attention.value) and (
            self.engine != "vllm" or self.dp_attention.name == "enable-dp-attention")

    @property
    def gpus(self) -> int:
        """GPUs one server of this launch occupies."""
        n = max(int(self.tp.value or 1), 1) * max(int(self.pp.value or 1), 1)
        if self.engine == "vllm" and not self.dp_within_tp:
            n *= max(int(self.dp.value or 1), 1)
        return n

    @property
    def attention_tp(self) -> int:
        """The TP size attention (and the dense, non-expert weights) is split over."""
        tp = max(int(self.tp.value or 1), 1)
        cp = max(int(self.attn_cp.value or 1), 1)
        if not self.dp_within_tp:
            return max(tp // cp, 1)
        if self.engine == "trt":
            return 1
        return max(tp // max(int(self.dp.value or 1), 1) // cp, 1)

    @property
    def attention_replicas(self) -> int:
        """KV-cache pools per server: one per attention data-parallel rank."""
        if self.engine == "vllm" and not self.dp_within_tp:
            return max(int(self.dp.value or 1), 1)
        if not self.dp_within_tp:
            return 1
        return max(max(int(self.tp.value or 1), 1) // max(int(self.attn_cp.value or 1), 1) // self.attention_tp, 1)

    def quantity(self, name: str, conc: int) -> int | None:
        """Values a card's buffer formula may use."""
        table = {
            "max_num_batched_tokens": self.max_num_batched_tokens.value,
            "max_model_len": self.max_model_len.value,
            "max_num_seqs": self.max_num_seqs.value,
            "tp": self.tp.value,
            "pp": self.pp.value,
            "spec_tokens": self.spec_tokens.value,
            "conc": conc,
        }
        v = table.get(name)
        return None if v is None else int(v)


def _int(args: Mapping[str, str | bool], *names: str) -> tuple[int, str] | None:
    found = _number(args, names, bound=2**63)  # 1e999 and a 400-digit count are no count either
    return None if found is None else (int(found[0]), found[1])


def _float(args: Mapping[str, str | bool], *names: str) -> tuple[float, str] | None:
    return _number(args, names)


def _number(args: Mapping[str, str | bool], names: tuple[str, ...],
            bound: float = math.inf) -> tuple[float, str] | None:
    """The value of the first of ``names`` the argv sets with a value (a bare flag does not count), and
    that name. Not a number, not finite (inf, NaN) or not below ``bound`` in size: ValueError naming the flag."""
    for n in names:
        v = args.get(n)
        if v is not None and not isinstance(v, bool):
            try:
                f = float(v)
            except ValueError:
                raise ValueError(f"--{n} expects a number, got {v!r}") from None
            if not math.isfinite(f) or abs(f) >= bound:
                raise ValueError(f"--{n} expects a finite number, got {str(v)[:40]!r}")
            return f, n
    return None


def _pick(found: tuple[Any, str] | None, default: Any, default_source: Source = "default",
          default_name: str = "") -> Setting:
    if found is not None:
        return Setting(found[0], "argv", found[1])
    if default_source == "card" and not default_name:
        default_name = NATIVE_CONTEXT_RULE
    return Setting(default, default_source if default is not None else "unknown", default_name)


#: How a launch without a max-length flag and a point without ``max-model-len`` (agentic rows) is
#: bounded: the engines' own default is the model's native context (vLLM's max_model_len and SGLang's
#: context-length come from the checkpoint config; the card's ``max-context``), and InferenceX's agentic
#: replay needs it: benchmark_lib.sh ``resolve_trace_source`` replays the unfiltered corpus for the
#: 1M-context families (dsv4, glm5.2, minimaxm3, kimik3) and the 256k-capped one for the others, whose
#: native context is about 256k. Fixed-seq-len rows carry ``max-model-len`` = ISL + OSL + 256.
NATIVE_CONTEXT_RULE = "model card max-context: the engine's default, which the agentic corpus needs"


# vLLM 0.32 (vllm/engine/arg_utils.py get_batch_defaults, API server context; vllm/config/cache.py).
def _vllm_batch_defaults(device_kind: str, capacity_bytes: int | None) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) defaults of the OpenAI API server."""
    if device_kind == "cpu":
        return 128, 2048
    cap = capacity_bytes or 0
    if cap >= 160 * GIB:
        return 1024, 16384
    if cap >= 70 * GIB:
        return 1024, 8192
    return 256, 2048


VLLM_DEFAULT_GPU_MEMORY_UTILIZATION = 0.92  # vllm/config/cache.py in 0.32.0 (older releases: 0.9)
TRT_DEFAULT_FREE_FRACTION = 0.9  # trtllm-serve --kv_cache_free_gpu_memory_fraction default
TRT_DEFAULT_MAX_BATCH_SIZE = 2048  # trtllm-serve --max_batch_size default
TRT_DEFAULT_MAX_NUM_TOKENS = 8192  # trtllm-serve --max_num_tokens default


def engine_settings(engine: str, argv: Sequence[str], env: Mapping[str, str], **kw: Any) -> EngineSettings:
    """Resolve the settings of one rendered launch. Raises ValueError on a malformed value (never
    TypeError or OverflowError: a JSON option of the wrong shape, an infinite count, are bad values)."""
    try:
        return _engine_settings(engine, argv, env, **kw)
    except (TypeError, OverflowError, KeyError, AttributeError) as exc:
        raise ValueError(f"malformed launch setting: {type(exc).__name__}: {exc}") from None


def _engine_settings(
    engine: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    device_kind: Literal["gpu", "cpu"] = "gpu",
    capacity_bytes: int | None = None,
    point_tp: int | None = None,
    point_pp: int = 1,
    point_max_model_len: int | None = None,
    card_max_context: int | None = None,
    files: Mapping[str, str] | None = None,
) -> EngineSettings:
    """Resolve the settings of one rendered launch. Raises ValueError on a malformed value."""
    fam = engine.lower()
    c = _Launched(fam="trt" if fam.startswith("trt") else fam, device_kind=device_kind, args=parse_argv(argv),
                  env=dict(env), capacity_bytes=capacity_bytes, point_tp=point_tp, point_pp=point_pp,
                  mml_default=point_max_model_len or card_max_context,
                  mml_source="point" if point_max_model_len else "card", files=files or {})
    if c.fam == "sglang":
        return _sglang_settings(c)
    if c.fam == "trt":
        return _trt_settings(c)
    return _vllm_settings(c)


@dataclass(frozen=True)
class _Launched:
    """One rendered launch's flags and the point facts its defaults fall back to."""

    fam: str
    device_kind: Literal["gpu", "cpu"]
    args: dict[str, str | bool]
    env: dict[str, str]
    capacity_bytes: int | None
    point_tp: int | None
    point_pp: int
    mml_default: int | None
    mml_source: Source
    files: Mapping[str, str]


def _sglang_settings(c: _Launched) -> EngineSettings:
    """SGLang's ``launch_server`` flags."""
    args, env = c.args, c.env
    capacity_bytes = c.capacity_bytes
    point_tp, point_pp, mml_default, mml_source = c.point_tp, c.point_pp, c.mml_default, c.mml_source
    opts: dict[str, Any] = {}
    tp = _pick(_int(args, "tp-size", "tp", "tensor-parallel-size"), point_tp or 1, "point")
    pp = _pick(_int(args, "pp-size", "pipeline-parallel-size"), point_pp, "point")
    mml = _pick(_int(args, "context-length"), mml_default, mml_source)
    mnbt = _pick(_int(args, "chunked-prefill-size"), _sglang_chunked_default(capacity_bytes))
    seqs = _pick(_int(args, "max-running-requests"), None)
    frac = _pick(_float(args, "mem-fraction-static"), None)
    steps = _int(args, "speculative-num-draft-tokens")
    spec = Setting(steps[0] - 1, "argv", steps[1]) if steps else _pick(_int(args, "speculative-num-steps"), 0)
    if args.get("disable-cuda-graph") is True:
        graph = Setting(None, "argv", "disable-cuda-graph")
    else:
        bs = _int(args, "cuda-graph-max-bs")
        graph = Setting(bs[0] * (1 + int(spec.value or 0)), "argv", bs[1]) if bs else Setting(None, "unknown")
    kvd = _pick(_str(args, "kv-cache-dtype"), "auto")
    kvb = Setting(None, "unknown")
    dp = _pick(_int(args, "dp-size", "dp", "data-parallel-size"), 1)
    dpa = (Setting(True, "argv", "enable-dp-attention") if args.get("enable-dp-attention") is True
           else Setting(False, "default"))
    epn = _pick(_int(args, "ep-size", "ep", "expert-parallel-size"), 1)
    acp = _pick(_int(args, "attn-cp-size"), 1)
    return EngineSettings(
        engine=c.fam, device_kind=c.device_kind, args=args, env=env, tp=tp, pp=pp, max_model_len=mml,
        max_num_batched_tokens=mnbt, max_num_seqs=seqs, memory_fraction=frac, spec_tokens=spec,
        graph_ceiling=graph, kv_cache_dtype=kvd, kv_cache_bytes=kvb, options=opts,
        dp=dp, dp_attention=dpa, expert_parallel=epn, attn_cp=acp,
    )


def _trt_settings(c: _Launched) -> EngineSettings:
    """``trtllm-serve`` flags and its extra options YAML."""
    args, env = c.args, c.env
    point_tp, point_pp, mml_default, mml_source = c.point_tp, c.point_pp, c.mml_default, c.mml_source
    files = c.files
    acp = Setting(1, "default")
    opts = _trt_options(args, files or {})
    tp = _pick(_int(args, "tp-size", "tensor-parallel-size"), point_tp or 1, "point")
    pp = _pick(_int(args, "pp-size"), point_pp, "point")
    mml = _opt_or(opts, ("max_seq_len",), _pick(_int(args, "max-seq-len"), mml_default, mml_source))
    mnbt = _opt_or(opts, ("max_num_tokens",), _pick(_int(args, "max-num-tokens"), TRT_DEFAULT_MAX_NUM_TOKENS))
    seqs = _opt_or(opts, ("max_batch_size",), _pick(_int(args, "max-batch-size"), TRT_DEFAULT_MAX_BATCH_SIZE))
    frac = _opt_or(opts, ("kv_cache_config", "free_gpu_memory_fraction"),
                   _pick(_float(args, "kv-cache-free-gpu-memory-fraction"), TRT_DEFAULT_FREE_FRACTION))
    sc = opts.get("speculative_config") or {}
    n = sc.get("num_nextn_predict_layers", sc.get("max_draft_len")) if isinstance(sc, dict) else None
    spec = Setting(int(n), "argv", "extra-options speculative_config") if n is not None else Setting(0, "default")
    cg = opts.get("cuda_graph_config")
    if isinstance(cg, dict) and (cg.get("batch_sizes") or cg.get("max_batch_size")):
        top = max(int(b) for b in cg["batch_sizes"]) if cg.get("batch_sizes") else int(cg["max_batch_size"])
        graph = Setting(top * (1 + int(spec.value)), "argv", "extra-options cuda_graph_config")
    else:
        graph = Setting(None, "unknown", "no cuda_graph_config")
    kv_cfg = opts.get("kv_cache_config") or {}
    kvd = (Setting(kv_cfg["dtype"], "argv", "extra-options kv_cache_config")
           if isinstance(kv_cfg, dict) and kv_cfg.get("dtype") else Setting("auto", "default"))
    kvb = Setting(None, "unknown")
    dp = Setting(1, "default")
    if opts.get("enable_attention_dp") is True or args.get("enable-attention-dp") is True:
        dpa = Setting(True, "argv", "extra-options enable_attention_dp")
    else:
        dpa = Setting(False, "default")
    epn = _opt_or(opts, ("moe_expert_parallel_size",), _pick(_int(args, "ep-size", "moe-expert-parallel-size"), 1))
    return EngineSettings(
        engine=c.fam, device_kind=c.device_kind, args=args, env=env, tp=tp, pp=pp, max_model_len=mml,
        max_num_batched_tokens=mnbt, max_num_seqs=seqs, memory_fraction=frac, spec_tokens=spec,
        graph_ceiling=graph, kv_cache_dtype=kvd, kv_cache_bytes=kvb, options=opts,
        dp=dp, dp_attention=dpa, expert_parallel=epn, attn_cp=acp,
    )


def _vllm_settings(c: _Launched) -> EngineSettings:
    """vLLM's ``serve`` flags (and the CPU build's KV-space variable)."""
    args, env = c.args, c.env
    point_tp, point_pp, mml_default, mml_source = c.point_tp, c.point_pp, c.mml_default, c.mml_source
    device_kind, capacity_bytes = c.device_kind, c.capacity_bytes
    opts: dict[str, Any] = {}
    acp = Setting(1, "default")
    d_seqs, d_mnbt = _vllm_batch_defaults(device_kind, capacity_bytes)
    tp = _pick(_int(args, "tensor-parallel-size"), point_tp or 1, "point")
    pp = _pick(_int(args, "pipeline-parallel-size"), point_pp, "point")
    mml = _pick(_int(args, "max-model-len"), mml_default, mml_source)
    mnbt = _pick(_int(args, "max-num-batched-tokens"), d_mnbt)
    seqs = _pick(_int(args, "max-num-seqs"), d_seqs)
    frac = _pick(_float(args, "gpu-memory-utilization"), VLLM_DEFAULT_GPU_MEMORY_UTILIZATION)
    spec_cfg = json_arg(args, "speculative-config") or {}
    if "num_speculative_tokens" in spec_cfg:
        spec = Setting(int(spec_cfg["num_speculative_tokens"]), "argv", "speculative-config")
    else:
        spec = Setting(0, "default")
    graph = _vllm_graph_ceiling(args, device_kind, int(seqs.value), int(spec.value), int(mnbt.value))
    kvd = _pick(_str(args, "kv-cache-dtype"), "auto")
    kvb_arg = _int(args, "kv-cache-memory-bytes", "kv-cache-memory")
    if kvb_arg:
        kvb = Setting(kvb_arg[0], "argv", kvb_arg[1])
    elif device_kind == "cpu" and env.get("VLLM_CPU_KVCACHE_SPACE", "") != "":
        try:
            kvb = Setting(int(env["VLLM_CPU_KVCACHE_SPACE"]) * GIB, "env", "VLLM_CPU_KVCACHE_SPACE")
        except ValueError:
            raise ValueError("VLLM_CPU_KVCACHE_SPACE must be an integer number of GiB, "
                             f"got {env['VLLM_CPU_KVCACHE_SPACE']!r}") from None
    else:
        kvb = Setting(None, "unknown")
    dp = _pick(_int(args, "data-parallel-size"), 1)
    dpa = Setting(int(dp.value) > 1, dp.source, dp.name)
    if args.get("enable-dp-attention") is True:  # ATOM (vLLM-style server): attention DP over the TP ranks
        dp = Setting(int(tp.value or 1), "argv", "enable-dp-attention")
        dpa = Setting(True, "argv", "enable-dp-attention")
    if args.get("enable-expert-parallel") is True:
        epn = Setting(int(tp.value or 1) * int(dp.value or 1), "argv", "enable-expert-parallel")
    else:
        epn = Setting(1, "default")
    return EngineSettings(
        engine=c.fam, device_kind=c.device_kind, args=args, env=env, tp=tp, pp=pp, max_model_len=mml,
        max_num_batched_tokens=mnbt, max_num_seqs=seqs, memory_fraction=frac, spec_tokens=spec,
        graph_ceiling=graph, kv_cache_dtype=kvd, kv_cache_bytes=kvb, options=opts,
        dp=dp, dp_attention=dpa, expert_parallel=epn, attn_cp=acp,
    )


def _trt_options(args: Mapping[str, str | bool], files: Mapping[str, str]) -> dict[str, Any]:
    """The ``--extra_llm_api_options`` YAML of a TRT-LLM launch (from ``Launch.files``), or {}."""
    name = args.get("extra-llm-api-options") or args.get("config")  # trtllm-serve --config (newer spelling)
    text = files.get(str(name)) if isinstance(name, str) else None
    if text is None and len(files) == 1:
        text = next(iter(files.values()))
    if not text:
        return {}
    from infx.yamlsource import parse_yaml

    try:
        data = parse_yaml(text, str(name or "extra-llm-api-options")).data
    except InfxError as exc:
        raise ValueError(f"TRT-LLM extra options YAML does not parse: {exc}") from None
    return data if isinstance(data, dict) else {}


def _opt_or(opts: Mapping[str, Any], path: tuple[str, ...], fallback: Setting) -> Setting:
    node: Any = opts
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return fallback
        node = node[key]
    if node is None:
        return fallback
    return Setting(node, "argv", "extra-options " + ".".join(path))


def _str(args: Mapping[str, str | bool], *names: str) -> tuple[str, str] | None:
    for n in names:
        v = args.get(n)
        if isinstance(v, str):
            return v, n
    return None


def _sglang_chunked_default(capacity_bytes: int | None) -> int:
    cap = capacity_bytes or 0
    if cap < 35 * 10**9:
        return 2048
    if cap < 160 * 10**9:
        return 8192
    return 16384


def _vllm_graph_ceiling(args: Mapping[str, str | bool], device_kind: str, max_num_seqs: int, spec: int,
                        mnbt: int) -> Setting:
    """Largest CUDA-graph capture size in tokens, as vLLM 0.32 resolves it."""
    if device_kind == "cpu":
        return Setting(None, "default", "cpu: no CUDA graphs")
    if args.get("enforce-eager") is True:
        return Setting(None, "argv", "enforce-eager")
    explicit = _int(args, "max-cudagraph-capture-size")
    if explicit:
        return Setting(explicit[0], "argv", explicit[1])
    cc = json_arg(args, "compilation-config") or {}
    if cc.get("cudagraph_mode") in ("NONE", 0):
        return Setting(None, "argv", "compilation-config")
    if cc.get("max_cudagraph_capture_size") is not None:
        return Setting(int(cc["max_cudagraph_capture_size"]), "argv", "compilation-config")
    sizes = cc.get("cudagraph_capture_sizes")
    if sizes:
        return Setting(max(int(s) for s in sizes), "argv", "compilation-config")
    # Default (vllm/config/vllm.py _set_cudagraph_sizes in 0.32): min(max_num_seqs * 2, 512) tokens,
    # never above max_num_batched_tokens; with speculative decoding the uniform decode widths of up
    # to min(max_num_seqs, 512) requests x (1 + spec) tokens are appended.
    ceiling = min(max_num_seqs * 2, 512, mnbt)
    if spec > 0:
        ceiling = max(ceiling, min(max_num_seqs, 512) * (1 + spec))
    return Setting(ceiling, "default")
