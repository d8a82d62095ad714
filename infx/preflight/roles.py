"""Preflight of a multi-role deployment: memory per worker role (prefill and decode separately, each
checked as the single-node server one of its instances is) and the nodes/GPUs the whole deployment
takes against the runner's capacity.

Each worker role of a disaggregated deployment also counts its KV connector's transfer buffers
(:mod:`infx.preflight.transfer`): a separate line per GPU for prefill and for decode, named in the
check's message and kept whole in its details.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from infx.matrix.point import Point
from infx.preflight.verdict import Check


def _engine_family(engine: str) -> str:
    e = engine.lower()
    for fam in ("sglang", "trt", "vllm"):
        if fam in e:
            return fam
    return e


def capacity_check(point: Point, deployment: Any, runners: Any, gpus_per_node: int | None,
                   nodes: int | None = None, nodes_source: str | None = None) -> Check:
    """Nodes and GPUs the deployment takes (every worker role x count x GPUs) vs the fleet's compute
    nodes. ``nodes`` comes from an explicit fact (runners.yaml ``hardware.<fleet>.nodes``); the runner
    names under a label are GitHub runners / login nodes and are never counted. Without it the
    capacity is unknown: a warning, never a failure."""
    gpus = sum(r.gpus for r in deployment.roles)
    local_cpu = point.runner in ("local", "cluster:local")
    if local_cpu:
        n = len([r for r in deployment.roles if r.kind in ("prefill", "decode")])
        return Check(name="capacity", status="ok", message=f"{n} CPU worker(s) on this host", details={"gpus": gpus})
    if not gpus_per_node:
        return Check(name="capacity", status="warn", details={"gpus": gpus},
                     message=f"capacity unknown: deployment takes {gpus} GPU(s); runner "
                             f"'{point.runner}' has no gpus-per-node in runners.yaml")
    need_nodes = math.ceil(gpus / gpus_per_node) if gpus else 1
    msg = f"deployment takes {gpus} GPU(s) = {need_nodes} node(s) x {gpus_per_node}"
    details = {"gpus": gpus, "nodes": need_nodes, "gpus_per_node": gpus_per_node, "fleet_nodes": nodes}
    if nodes is None:
        return Check(name="capacity", status="warn", details=details,
                     message=f"capacity unknown: {msg}; runners.yaml gives no node count for runner '{point.runner}' "
                             f"(add hardware.<fleet>.nodes; runner names are not compute nodes)")
    where = f" ({nodes_source}.nodes)" if nodes_source else ""
    if need_nodes > nodes:
        return Check(name="capacity", status="fail", details=details,
                     message=msg + f"; runner '{point.runner}' has {nodes} node(s){where}")
    return Check(name="capacity", status="ok", details=details, message=msg + f" of {nodes}{where}")


def _transfer_summary(mem: Any) -> str:
    from infx.preflight.transfer import COMPONENT
    from infx.preflight.units import gb

    lines = [x for x in [*mem.gpu, *mem.host] if x.component == COMPONENT]
    if not lines:
        return ""
    per = "/GPU" if any(x.where == "gpu" for x in lines) else " on the host"
    return f"; KV transfer {gb(sum(x.bytes for x in lines))}{per} ({lines[0].note})"


#: Serving knobs a multinode recipe sets and infx renders no flag for: a failure that holds only with
#: the engine's defaults for them is not a verdict on what InferenceX launches.
ASSUMED_KNOBS = ("memory_fraction", "max_num_batched_tokens", "max_num_seqs", "kv_cache_dtype", "graph_ceiling")
#: The largest memory fraction any InferenceX bench script or perf-changelog entry launches with
#: (vLLM --gpu-memory-utilization 0.95; SGLang's mem-fraction-static and TRT-LLM's free fraction are lower):
#: weights + runtime above it fail whatever the recipe sets.
MAX_MEMORY_FRACTION = 0.95


def serving_knobs_source(point: Point, worker: Any) -> str | None:
    """Where the serving knobs of a GPU multinode role live when infx renders only its topology:
    the row's recipe file (``CONFIG_FILE=`` in the pool's, else the prefill pool's, additional-settings:
    an srt-slurm / Dynamo recipe of InferenceX's ``benchmarks/multi_node``) or, without one, the
    framework's launcher. None for deployments rendered from infx's own recipes (the CPU connector)."""
    from infx.engines.disagg.render import is_cpu_example_connector

    if is_cpu_example_connector(point) or point.runner in ("local", "cluster:local"):
        return None
    for pool in (worker, point.prefill):
        for item in getattr(pool, "additional_settings", None) or []:
            if item.startswith("CONFIG_FILE="):
                return f"recipe {item.split('=', 1)[1]}"
    return f"the {point.framework} launcher's settings"


def unverifiable_knobs(mem: Any, knobs: str) -> Any:
    """A failing role whose weights + runtime fit the GPU, but whose budget or KV pool fall short only
    with the engine defaults infx had to assume for knobs the recipe sets, is a warning that names
    them; weights that cannot be resident at any setting stay a failure."""
    from infx.preflight.memory import weights_bytes
    from infx.preflight.units import gb

    resident = weights_bytes(mem.gpu) + sum(x.bytes for x in mem.gpu if x.component == "runtime overhead")
    ceiling = int(mem.capacity_bytes * MAX_MEMORY_FRACTION)
    if resident > ceiling:
        note = (f"weights + runtime alone ({gb(resident)}) exceed {MAX_MEMORY_FRACTION:.0%} of the GPU's "
                f"{gb(mem.capacity_bytes)} (the highest memory fraction InferenceX launches with): no serving "
                f"setting of {knobs} can fit them")
        return mem.model_copy(update={"findings": [*mem.findings, note], "problems": [*mem.problems, note]})
    assumed = [f"{k} {mem.settings[k]}" for k in ASSUMED_KNOBS
               if k in mem.settings and "(engine default)" in mem.settings[k]]
    if not assumed:
        return mem
    why = "; ".join(mem.problems)
    what = ("KV pool below one max-length sequence" if "max-length sequence" in why
            else "budget short" if "budget is" in why else "memory short")
    note = (f"recipe-dependent: {what} only with the engine defaults infx assumed for knobs the row's recipe sets; "
            f"assumed: {', '.join(assumed)}; set by {knobs}, which infx does not read; weights + runtime "
            f"({gb(resident)}) fit within {MAX_MEMORY_FRACTION:.0%} of the GPU's {gb(mem.capacity_bytes)}; "
            f"with the defaults: {why}")
    return mem.model_copy(update={"status": "warn", "findings": [*mem.findings, note], "problems": [note]})


def role_checks(point: Point, deployment: Any, cards: Any, hw: Any, runners: Any, node: Any,
                runtime_overhead_bytes: int | None = None,
                memory_summary: Callable[[Any], str] = str) -> list[Check]:
    """``memory_summary``: the gate's one-line rendering of a memory report."""
    from infx.engines.disagg.vllm_pd import role_point
    from infx.preflight.launchargs import engine_settings
    from infx.preflight.memory import check_memory

    card = cards.model_for(point.model_prefix)
    checks: list[Check] = []
    host: list[tuple[str, int, int]] = []  # CPU roles share one host: (role, needed, budget)
    for role in deployment.roles:
        if role.kind not in ("prefill", "decode"):
            continue
        worker = point.prefill if role.kind == "prefill" else point.decode
        assert worker is not None, "a deployment's prefill and decode roles are rendered from the point's workers"
        rp = role_point(point, worker)
        try:
            settings = engine_settings(
                _engine_family(role.launch.engine), role.launch.argv, role.launch.env,
                device_kind="cpu" if (hw is not None and hw.kind == "cpu") else "gpu",
                capacity_bytes=hw.memory if hw else None, point_tp=rp.tp, point_pp=rp.pp,
                point_max_model_len=rp.max_model_len, card_max_context=card.max_context if card else None,
                files=role.launch.files)
        except ValueError as exc:
            checks.append(Check(name=f"launch-args:{role.name}", status="fail", message=str(exc)))
            continue
        kw = {} if runtime_overhead_bytes is None else {"runtime_overhead_bytes": runtime_overhead_bytes}
        transfer = deployment.disagg and deployment.kv_transfer is not None
        mem = check_memory(rp, settings, card, hw, node, kv_transfer=transfer, **kw)
        knobs = serving_knobs_source(point, worker)
        if knobs is not None and mem.status == "fail" and mem.device != "cpu":
            mem = unverifiable_knobs(mem, knobs)
        if mem.device == "cpu":
            host.append((role.name, mem.needed_bytes * role.count, mem.budget_bytes))
        on = "on the CPU" if mem.device == "cpu" else f"{role.gpus_per_instance} GPU each"
        checks.append(Check(name=f"memory:{role.name}", status=mem.status,
                            message=f"{role.name} x{role.count} ({on}): {memory_summary(mem)}{_transfer_summary(mem)}",
                            details={"memory": mem.model_dump(mode="json")}))
    if len(host) > 1:  # every CPU role runs on this one host: their sum must fit it too
        need, budget = sum(h[1] for h in host), max(h[2] for h in host)
        gb = 1e9
        checks.append(Check(name="memory:host", status="ok" if need <= budget else "fail",
                            message=f"{' + '.join(h[0] for h in host)} on one host: needs {need / gb:.1f} GB "
                                    f"of {budget / gb:.1f} GB", details={"needed_bytes": need, "budget_bytes": budget}))
    gpn = getattr(node, "gpus_per_node", None) if node is not None else None
    checks.append(capacity_check(point, deployment, runners, gpn, getattr(node, "nodes", None),
                                 getattr(node, "nodes_source", None)))
    checks.extend(helper_checks(deployment))
    return checks


#: How to install a helper binary a local deployment role runs.
HELPER_INSTALL = {"vllm-router": "make router-venv (or set INFX_ROUTER_VENV)"}


def helper_checks(deployment: Any) -> list[Check]:
    """A local role's program (the router, a helper) must exist before the sweep launches it: a missing
    one would start the workers, then fail with a FileNotFoundError recorded as a launch error."""
    import shutil
    from pathlib import Path

    out: list[Check] = []
    for role in deployment.roles:
        launch = role.launch
        if role.kind == "prefill" or role.kind == "decode":  # engine workers: the engine gate judges them
            continue
        if getattr(launch, "runtime", "local") != "local" or not launch.argv:
            continue
        prog = str(launch.argv[0])
        found = Path(prog).is_file() if "/" in prog else shutil.which(prog) is not None
        if not found:
            name = Path(prog).name
            how = HELPER_INSTALL.get(name, f"install {name}")
            out.append(Check(name=f"helper:{role.name}", status="fail",
                             message=f"{role.name} program {prog} is missing: {how}"))
    return out
