"""The memory check: per-GPU breakdown of one rendered launch against its engine's budget.

Per GPU: weights split by TP x PP (dense and expert weights alike: with EP the experts are split
over the same GPUs), extra tables on the GPU or the host as the launched arguments say, buffers
from the card's formulas evaluated on the launch settings, speculative draft weights, runtime
overhead. Per server on the host: offloaded tables and the KV-offload DRAM budget, times the
servers that fit on one node, against the node's DRAM from runners.yaml. When KV bytes per token
are known: the pool must hold one max-length sequence, and the report says how many sequences of
the scenario's length fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from infx.matrix.point import Point
from infx.preflight.budget import (
    CPU_RUNTIME_OVERHEAD_BYTES,
    RUNTIME_OVERHEAD_BYTES,
    RUNTIME_OVERHEAD_NOTE,
    engine_budget,
)
from infx.preflight.cards import DTYPE_BYTES, Buffer, HardwareCard, ModelCard, Table
from infx.preflight.launchargs import EngineSettings, json_arg, truthy
from infx.preflight.units import GB, MIB, gb, gib
from infx.preflight.verdict import MemoryLine, MemoryReport, Status, Where

WARN_MARGIN_FRACTION = 0.05  # warn when less than 5% of the budget is left and KV size is unknown


class Findings(list[str]):
    """Everything the check found out; ``problems`` are the ones behind a warn or fail status."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []

    def problem(self, message: str) -> None:
        self.append(message)
        self.problems.append(message)


@dataclass(frozen=True)
class NodeFacts:
    """Host facts of the runner's node (runners.yaml ``hardware``)."""

    gpus_per_node: int
    available_dram_bytes: int
    nodes: int | None = None  # compute nodes of the fleet (runners.yaml hardware.<fleet>.nodes), None: unknown
    nodes_source: str | None = None  # the hardware key that gave them


def table_on_host(table: Table, settings: EngineSettings) -> tuple[bool, str]:
    """Where the launched arguments put a table, and why."""
    off = table.offload
    if off is None:
        return False, "no offload argument exists for this table"
    name = off.arg.lstrip("-").replace("_", "-").lower()
    if name not in settings.args:
        return off.default == "host", f"{off.arg} not in the launch argv: {off.default}-resident"
    if off.json_key:
        obj = json_arg(settings.args, name) or {}
        val = obj.get(off.json_key, None)
        if val is None:
            return off.default == "host", f"{off.arg} has no '{off.json_key}': {off.default}-resident"
        host = truthy(val)
        return host, f"{off.arg} {off.json_key}={str(val).lower()}"
    host = truthy(settings.args[name])
    return host, f"{off.arg}={settings.args[name]}"


def kv_dtype_bytes(card: ModelCard, settings: EngineSettings) -> float:
    name = str(settings.kv_cache_dtype.value or "auto").lower()
    if name == "auto":
        return DTYPE_BYTES[card.dtype]
    for key, size in DTYPE_BYTES.items():
        if name == key or name.startswith(key):
            return size
    return DTYPE_BYTES[card.dtype]


_DTYPE_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
                  "fp8": "fp8_e4m3"}  # the engines' plain "fp8" KV cache is E4M3


def _dtype_family(name: str) -> str:
    """One spelling per KV dtype: ``bfloat16`` == ``bf16``, ``fp8`` == ``fp8_e4m3`` (E5M2 stays distinct)."""
    return _DTYPE_ALIASES.get(name.lower(), name.lower())


def buffer_bytes(b: Buffer, settings: EngineSettings, conc: int) -> tuple[float, str]:
    """Bytes of one buffer on one GPU and how they were computed. LookupError(name) when the
    launch leaves a quantity the formula needs unset."""
    from infx.preflight.cards import LAUNCH_QUANTITIES

    if b.expr is not None:
        from infx.engines.expr import Expr

        e = Expr(b.expr)
        env = {}
        for name in e.names:
            v = settings.quantity(name, conc) if name in LAUNCH_QUANTITIES else None
            if v is None:
                raise LookupError(name)
            env[name] = v
        return float(e.evaluate(env)), b.expr + " with " + ", ".join(f"{k}={v:,}" for k, v in sorted(env.items()))
    assert b.dims is not None and b.bytes_per_element is not None
    size = b.bytes_per_element
    parts = []
    for d in b.dims:
        v = d if isinstance(d, int) else settings.quantity(d, conc)
        if v is None:
            raise LookupError(d)
        size *= v
        parts.append(f"{d}={v:,}" if not isinstance(d, int) else f"{d:,}")
    return size, f"{b.bytes_per_element:g} B x " + " x ".join(parts)


def scenario_seq_len(point: Point, settings: EngineSettings) -> int | None:
    """Tokens one sequence of the scenario can hold: ISL + OSL for fixed-seq-len points, the
    launched max model length for agentic ones (an agentic session grows to the context limit)."""
    if point.isl is not None and point.osl is not None:
        return point.isl + point.osl
    v = settings.max_model_len.value
    return int(v) if v else None


def check_memory(
    point: Point,
    settings: EngineSettings,
    card: ModelCard | None,
    hw: HardwareCard | None,
    node: NodeFacts | None,
    *,
    concurrency: int | None = None,
    runtime_overhead_bytes: int | None = None,
    kv_transfer: bool = False,
) -> MemoryReport:
    """``kv_transfer``: the launch is a disaggregated worker; its KV connector's buffers are counted."""
    findings = Findings()
    conc = concurrency if concurrency is not None else max(point.concs)
    cpu = settings.device_kind == "cpu"
    gpu: list[MemoryLine] = []
    host: list[MemoryLine] = []
    status: Status = "ok"

    def report(**kw: object) -> MemoryReport:
        return MemoryReport.model_validate({"findings": list(findings), "problems": findings.problems,
                                            "settings": _settings_dict(settings), **kw})

    if card is None:
        findings.problem(f"memory unverifiable: no card for '{point.model_prefix}' "
                         f"(cards/models/{point.model_prefix}.yaml; `infx cards derive MODEL_DIR` writes one)")
        return report(status="warn", device=hw.name if hw else "?", engine_rule="-", capacity_bytes=0,
                      budget_bytes=0, needed_bytes=0, margin_bytes=0)
    resolved = card.weights.resolve(point.precision, point.model)
    if resolved is None:
        findings.problem(f"memory unverifiable: the card for '{card.model_prefix}' has no weight size for "
                         f"{point.model} at precision '{point.precision}' (has: {', '.join(card.weights.precisions)})")
        return report(status="warn", device=hw.name if hw else "?", engine_rule="-", capacity_bytes=0,
                      budget_bytes=0, needed_bytes=0, margin_bytes=0)

    where: Where = "host" if cpu else "gpu"
    resident = host if cpu else gpu  # where the weights, draft, buffers and runtime live
    resident.append(_weights_line(point, settings, card, resolved, where, findings))
    _table_lines(card, settings, cpu, gpu, host)
    _draft_and_buffer_lines(point, settings, card, conc, where, resident, findings)
    # KV bytes per token on one GPU (the transfer buffers and the KV pool both need it).
    kv_bpt = None
    if card.attention is not None:
        kv_bpt = card.attention.kv_bytes_per_token(kv_dtype_bytes(card, settings), settings.attention_tp,
                                                   DTYPE_BYTES[card.dtype])
    if kv_transfer:
        from infx.preflight.transfer import transfer_buffers

        lines, found = transfer_buffers(settings, kv_bpt)
        for line in lines:
            (host if line.where == "host" else gpu).append(line)
        findings.extend(found)
    overhead = runtime_overhead_bytes
    if overhead is None:
        overhead = (CPU_RUNTIME_OVERHEAD_BYTES if cpu
                    else RUNTIME_OVERHEAD_BYTES.get(settings.engine, RUNTIME_OVERHEAD_BYTES["vllm"]))
    resident.append(MemoryLine(component="runtime overhead", bytes=overhead, where=where, estimate=True,
                               note=RUNTIME_OVERHEAD_NOTE if not cpu else "Python + torch + engine process (estimate)"))

    kv_name = str(settings.kv_cache_dtype.value or "auto").lower()
    if card.kv_dtypes and _dtype_family(kv_name) not in {_dtype_family(d) for d in card.kv_dtypes}:
        status = "warn"
        findings.problem(f"KV cache dtype '{kv_name}' ({settings.kv_cache_dtype.describe()}) is not among the model "
                         f"card's KV dtype options ({', '.join(card.kv_dtypes)})")
    max_len = settings.max_model_len.value
    seq_len = scenario_seq_len(point, settings)

    if cpu:
        return _cpu_report(point, settings, card, gpu, host, node, kv_bpt, max_len, seq_len, conc, findings, status)

    if hw is None or hw.memory is None:
        findings.problem(f"memory unverifiable: no hardware card matches runner '{point.runner}' (cards/hardware/)")
        return report(status="warn", device="?", engine_rule="-", capacity_bytes=0, budget_bytes=0, needed_bytes=0,
                      margin_bytes=0, gpu=gpu, host=host)
    return _gpu_report(point, settings, card, hw, node, gpu, host, kv_bpt, seq_len, conc, findings, status)


def _weights_line(point: Point, settings: EngineSettings, card: ModelCard, resolved: tuple[int, str, bool],
                  where: Where, findings: Findings) -> MemoryLine:
    """The weights one GPU (or the host) holds."""
    total, how_total, total_estimate = resolved
    tp = max(int(settings.tp.value or 1), 1)
    pp = max(int(settings.pp.value or 1), 1)
    # Weights: everything that is not a table stored in the checkpoint. Dense weights (attention,
    # embeddings, dense layers, shared experts) split over the attention TP x PP; routed experts
    # over every GPU of the server (EP, or TP inside each expert).
    in_ckpt_tables = sum(t.total for t in card.tables if t.in_checkpoint)
    spec_on = (point.spec_decoding not in (None, "", "none")) or int(settings.spec_tokens.value or 0) > 0
    unloaded = 0 if spec_on else sum(d.bytes for d in card.speculative.values() if d.in_checkpoint and d.bytes)
    if unloaded:
        findings.append(f"draft layers in the checkpoint ({gb(unloaded)}) are not loaded: "
                        "the launch does not decode speculatively")
    base = total - in_ckpt_tables - unloaded
    attn_tp = settings.attention_tp
    server_gpus = settings.gpus
    dense_shards, expert_shards = attn_tp * pp, server_gpus
    if card.moe is not None and (dense_shards != expert_shards):
        ck = card.weights.checkpoint_for(point.model)
        frac = ck.expert_fraction if ck is not None and ck.expert_fraction else card.moe.expert_fraction
        expert = int(base * frac)
        dense = base - expert
        attn_frac = card.moe.attention_fraction
        if settings.engine != "vllm" and attn_frac is not None:  # DP attention replicates attention + embeddings only
            attn = min(int(base * attn_frac), dense)
            rest = dense - attn
            per_gpu = attn // dense_shards + rest // expert_shards + expert // expert_shards
            note = (f"{how_total} {gb(total)}: attention+embeddings {gb(attn)} / (attention TP {attn_tp} x PP {pp}) + "
                    f"other dense {gb(rest)} and routed experts {gb(expert)} ({frac:.1%}) / {server_gpus} GPUs")
        else:
            per_gpu = dense // dense_shards + expert // expert_shards
            dp_ranks = settings.engine == "vllm" and int(settings.dp.value or 1) > 1
            par = f"DP {settings.dp.value} x TP {tp} = " if dp_ranks else ""
            note = (f"{how_total} {gb(total)}: dense {gb(dense)} / (attention TP {attn_tp} x PP {pp}) + routed experts "
                    f"{gb(expert)} ({frac:.1%}) / {par}{server_gpus} GPUs")
        estimate = total_estimate or card.moe.estimate
    else:
        per_gpu = base // (tp * pp if card.moe is None else expert_shards)
        shards_desc = f"TP {tp} x PP {pp}" if card.moe is None else f"{expert_shards} GPUs"
        if card.moe is None and settings.engine == "vllm" and int(settings.dp.value or 1) > 1:
            shards_desc += f" (each of DP {settings.dp.value} ranks a full replica)"
        note = f"{how_total} {gb(base)} / ({shards_desc})"
        estimate = total_estimate
    if in_ckpt_tables:
        note += f" (checkpoint {gb(total)} less in-checkpoint tables)"
    if unloaded:
        note += f" (less {gb(unloaded)} of unloaded draft layers)"
    return MemoryLine(component="weights", bytes=per_gpu, where=where, estimate=estimate, note=note)


def _table_lines(card: ModelCard, settings: EngineSettings, cpu: bool, gpu: list[MemoryLine],
                 host: list[MemoryLine]) -> None:
    """The model's tables (indexer caches and the like), where the launched argv puts them."""
    tp = max(int(settings.tp.value or 1), 1)
    for t in card.tables:
        on_host, why = table_on_host(t, settings)
        per_gpu = t.total // tp if t.shard == "tp" else t.total
        if on_host or cpu:
            per_server = t.total if t.shard == "tp" else t.total * tp
            host.append(MemoryLine(component=f"{t.name} table", bytes=per_server, where="host", estimate=t.estimate,
                                   note=f"{why}; whole table per server ({gib(per_server)})"))
        else:
            split = f" / TP {tp}" if t.shard == "tp" else " replicated"
            gpu.append(MemoryLine(component=f"{t.name} table", bytes=per_gpu, where="gpu", estimate=t.estimate,
                                  note=f"{why}; {gib(t.total)}{split}"))


def _draft_and_buffer_lines(point: Point, settings: EngineSettings, card: ModelCard, conc: int, where: Where,
                            resident: list[MemoryLine], findings: Findings) -> None:
    """Speculative draft weights, then the buffers from the card's formulas on the launch settings."""
    tp = max(int(settings.tp.value or 1), 1)
    spec = point.spec_decoding
    if spec and spec != "none":
        draft = card.speculative.get(spec)
        if draft is None:
            findings.append(f"model card has no '{spec}' draft entry: draft weights not counted")
        elif not draft.in_checkpoint and draft.bytes:
            resident.append(MemoryLine(component=f"{spec} draft weights", bytes=draft.bytes // tp, where=where,
                                       estimate=draft.estimate, note=f"{gb(draft.bytes)} / TP {tp}"))
    # buffers
    for b in card.buffers:
        try:
            size, how = buffer_bytes(b, settings, conc)
        except LookupError as exc:
            findings.append(f"buffer '{b.name}' needs '{exc.args[0]}', which the launch does not set: not counted")
            continue
        except ValueError as exc:  # ExprError: the formula fails on this launch's values (1/(tp-1) at TP 1)
            findings.append(f"buffer '{b.name}' formula cannot be evaluated: {exc}: not counted")
            continue
        if not math.isfinite(size) or size < 0:
            findings.append(f"buffer '{b.name}' comes to {size} bytes: not counted")
            continue
        if b.per == "tp-shard":
            size /= tp
            how += f" / TP {tp}"
        resident.append(MemoryLine(component=f"{b.name} buffer", bytes=int(size), where=where,
                                   estimate=b.estimate, note=f"{how} = {gib(size)}"))


def _gpu_report(point: Point, settings: EngineSettings, card: ModelCard, hw: HardwareCard, node: NodeFacts | None,
                gpu: list[MemoryLine], host: list[MemoryLine], kv_bpt: int | None, seq_len: int | None, conc: int,
                findings: Findings, status: Status) -> MemoryReport:
    """The GPU budget, the KV pool it leaves and the sequences that fit, then the host check."""
    assert hw.memory is not None
    max_len = settings.max_model_len.value

    def report(**kw: object) -> MemoryReport:
        return MemoryReport.model_validate({"findings": list(findings), "problems": findings.problems,
                                            "settings": _settings_dict(settings), **kw})

    capacity = hw.memory
    static = weights_bytes(gpu)
    needed = sum(line.bytes for line in gpu)
    budget = engine_budget(settings, capacity, static, needed - static)
    margin = budget.budget_bytes - (static if settings.engine == "sglang" else needed)
    kv_pool = budget.kv_pool_bytes
    if margin < 0:
        status = "fail"
        findings.problem(f"needs {_summary(gpu, settings.engine)} per GPU but the budget is {gb(budget.budget_bytes)}: "
                        f"short by {gb(-margin)}; the engine dies at start-up (OOM or no memory for the KV cache)")
    if (budget.reserve_bytes is not None and budget.reserve_needed_bytes is not None
            and budget.reserve_needed_bytes > budget.reserve_bytes):
        status = _worse(status, "warn")
        findings.problem(f"buffers + runtime ({gb(budget.reserve_needed_bytes)}) exceed SGLang's reserve "
                        f"capacity x (1 - mem_fraction_static) = {gb(budget.reserve_bytes)}: OOM risk in prefill")
    kv_tokens = None
    seqs_fit = None
    if margin >= 0 and kv_pool <= 0:
        status = "fail"
        findings.problem(f"nothing left for the KV cache ({gb(kv_pool)}): "
                         "the engine fails with no memory for the cache blocks")
    if kv_pool > 0 and kv_bpt:
        kv_tokens = kv_pool // kv_bpt
        if max_len and kv_tokens < int(max_len):
            if settings.engine == "vllm":  # vLLM checks one max-length request against the pool at start-up
                status = "fail"
                findings.problem(f"KV pool {gb(kv_pool)} holds {kv_tokens:,} tokens, less than one max-length sequence "
                                 f"({settings.max_model_len.describe_tokens()}): the engine refuses to start")
            else:  # SGLang / TRT-LLM cap the longest admissible request at the pool instead
                status = _worse(status, "warn")
                findings.problem(f"KV pool {gb(kv_pool)} holds {kv_tokens:,} tokens, less than one max-length sequence "
                                 f"({settings.max_model_len.describe_tokens()}): "
                                 "requests longer than the pool are rejected")
        if seq_len:
            replicas = settings.attention_replicas  # DP attention: one pool per rank, each serving its share
            seqs_fit = kv_tokens * replicas / seq_len
            if replicas > 1:
                findings.append(f"KV pool per attention DP rank: {kv_tokens:,} tokens x {replicas} ranks")
            if point.scenario_type == "fixed-seq-len" and seqs_fit < conc:
                status = _worse(status, "warn")
                findings.problem(f"only {seqs_fit:.1f} sequences of {seq_len:,} tokens fit in the KV pool "
                                 f"at concurrency {conc}: requests will be preempted")
    elif margin >= 0 and kv_bpt is None and budget.budget_bytes and margin < WARN_MARGIN_FRACTION * budget.budget_bytes:
        status = _worse(status, "warn")
        findings.problem(f"only {gb(margin)} left for the KV cache ({margin / budget.budget_bytes:.1%} of the budget); "
                        f"KV bytes per token unknown")
    elif margin >= 0 and kv_bpt is None:
        findings.append(f"{gb(margin)} left for the KV cache; KV bytes per token unknown for '{card.model_prefix}' "
                        f"(no attention shape in its card), so sequence capacity is not checked")

    host_report = _host_check(point, host, node, findings, settings.gpus)
    if host_report[0] == "fail":
        status = "fail"
    return report(
        status=status, device=hw.name, engine_rule=budget.rule, capacity_bytes=capacity,
        budget_bytes=budget.budget_bytes, needed_bytes=needed if settings.engine != "sglang" else static,
        margin_bytes=margin, gpu=gpu, kv_pool_bytes=kv_pool, kv_bytes_per_token=kv_bpt, kv_tokens=kv_tokens,
        max_model_len=int(max_len) if max_len else None, seq_len=seq_len, seqs_fit=seqs_fit, host=host,
        host_per_server_bytes=host_report[1], servers_per_node=host_report[2], host_per_node_bytes=host_report[3],
        host_available_bytes=node.available_dram_bytes if node else None,
    )


def _cpu_report(point: Point, settings: EngineSettings, card: ModelCard, gpu: list[MemoryLine], host: list[MemoryLine],
                node: NodeFacts | None, kv_bpt: int | None, max_len: int | None, seq_len: int | None, conc: int,
                findings: Findings, status: Status) -> MemoryReport:
    """vLLM-CPU: weights, KV cache and process overhead all live in host memory."""
    kv = settings.kv_cache_bytes.value
    if kv is None:
        findings.append("KV cache size not set (VLLM_CPU_KVCACHE_SPACE / --kv-cache-memory-bytes): vLLM-CPU takes "
                        "utilisation x memory minus its RSS; capacity not predicted")
    else:
        src = settings.kv_cache_bytes
        host.append(MemoryLine(component="KV cache", bytes=int(kv), where="host",
                               note=f"{gib(int(kv))} from {src.name or src.source}"))
    needed = sum(line.bytes for line in host)
    capacity = node.available_dram_bytes if node else 0
    if node is None:
        findings.problem(f"runner '{point.runner}' has no hardware facts in runners.yaml: host memory not checked")
        status = _worse(status, "warn")
    margin = capacity - needed if node else 0
    if node and margin < 0:
        status = "fail"
        findings.problem(f"needs {gb(needed)} of host memory but the node has {gb(capacity)}")
    kv_tokens = seqs_fit = None
    if kv is not None and kv_bpt:
        kv_tokens = int(kv) // kv_bpt
        if max_len and kv_tokens < int(max_len):
            status = "fail"
            findings.problem(f"KV cache {gb(kv)} holds {kv_tokens:,} tokens, "
                             f"less than one max-length sequence ({int(max_len):,})")
        if seq_len:
            seqs_fit = kv_tokens / seq_len
    return MemoryReport(
        status=status, device="cpu", engine_rule="vllm-cpu: weights + KV cache (explicit) + process in host memory",
        capacity_bytes=capacity, budget_bytes=capacity, needed_bytes=needed, margin_bytes=margin, gpu=gpu,
        kv_pool_bytes=int(kv) if kv is not None else None, kv_bytes_per_token=kv_bpt, kv_tokens=kv_tokens,
        max_model_len=int(max_len) if max_len else None, seq_len=seq_len, seqs_fit=seqs_fit, host=host,
        host_per_server_bytes=needed, servers_per_node=1, host_per_node_bytes=needed,
        host_available_bytes=capacity or None, findings=list(findings), problems=findings.problems,
        settings=_settings_dict(settings),
    )


def _host_check(point: Point, host: list[MemoryLine], node: NodeFacts | None,
                findings: Findings, launch_gpus: int = 1) -> tuple[Status, int, int | None, int | None]:
    """Offloaded tables + KV-offload DRAM per server, x servers per node, vs the node's DRAM."""
    if point.kv_offloading == "dram" and point.total_cpu_dram_gb:
        host.append(MemoryLine(component="KV offload (DRAM)", bytes=point.total_cpu_dram_gb * GB, where="host",
                               note="total-cpu-dram-gb of the point"))
    per_server = sum(line.bytes for line in host)
    if not host:
        return "ok", 0, None, None
    if node is None:
        findings.problem(f"runner '{point.runner}' has no hardware facts (available-cpu-dram-mib, gpus-per-node) in "
                        f"runners.yaml, but {gb(per_server)} per server must live in host memory")
        return "fail", per_server, None, None
    # the server's GPUs: the point's tp x pp x pcp, or more where the launch says so (a multinode vLLM
    # worker's TP x DP: a DEP8 role of a tp: 1 pool is one 8-GPU server per node, not eight)
    gps = max(point.gpus_per_server, launch_gpus)
    servers = max(node.gpus_per_node // gps, 1) if gps <= node.gpus_per_node else 1
    per_node = per_server * servers
    if per_node > node.available_dram_bytes:
        findings.problem(f"host memory: {gib(per_server)} per server x {servers} servers per node = {gib(per_node)} "
                         f"exceeds the node's {gib(node.available_dram_bytes)} "
                         f"({node.available_dram_bytes // MIB:,} MiB)")
        return "fail", per_server, servers, per_node
    findings.append(f"host memory: {gib(per_server)} per server x {servers} servers per node = {gib(per_node)} "
                    f"of {gib(node.available_dram_bytes)}")
    return "ok", per_server, servers, per_node


def weights_bytes(lines: list[MemoryLine]) -> int:
    """Weights, draft weights and tables resident on the GPU: what the model itself occupies."""
    return sum(x.bytes for x in lines if x.component == "weights" or x.component.endswith(" table")
               or x.component.endswith("draft weights"))


def _summary(lines: list[MemoryLine], engine: str) -> str:
    w = weights_bytes(lines)
    bufs = sum(x.bytes for x in lines if x.component.endswith(" buffer"))
    rt = sum(x.bytes for x in lines if x.component == "runtime overhead")
    if engine == "sglang":
        return f"{gb(w)} of weights and tables"
    return f"{gb(w)} weights/tables + {gb(bufs)} buffers + {gb(rt)} runtime = {gb(w + bufs + rt)}"


def _worse(a: Status, b: Status) -> Status:
    order = {"skip": 0, "ok": 1, "warn": 2, "fail": 3}
    return a if order[a] >= order[b] else b


def _settings_dict(s: EngineSettings) -> dict[str, str]:
    return {
        "tp": s.tp.describe(),
        "max_model_len": s.max_model_len.describe(),
        "max_num_batched_tokens": s.max_num_batched_tokens.describe(),
        "max_num_seqs": s.max_num_seqs.describe(),
        "memory_fraction": s.memory_fraction.describe(),
        "spec_tokens": s.spec_tokens.describe(),
        "graph_ceiling": s.graph_ceiling.describe(),
        "kv_cache_dtype": s.kv_cache_dtype.describe(),
    }


