"""``preflight_points``: every check on every point, before any GPU time is spent.

``infx preflight`` prints the verdicts; ``infx run`` calls :func:`preflight_points` and skips a
point whose verdict is ``fail``, recording ``verdict.reason``. The memory and concurrency checks
read the RENDERED launch (``render_launch(point, recipes)``), never recipe comments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from infx.diagnostics import InfxError
from infx.engines.disagg.model import Deployment
from infx.engines.servable import Servable
from infx.matrix.point import Point
from infx.preflight.cards import CardSet, HardwareCard, load_cards
from infx.preflight.checks import DEFAULT_FANOUT, PlaceholderScan, concurrency_headroom, eval_coverage, graph_ceiling
from infx.preflight.images import ImagesLock, RegistryError, pin_check, verify_image
from infx.preflight.launchargs import EngineSettings, engine_settings
from infx.preflight.memory import NodeFacts, check_memory
from infx.preflight.units import MIB, gb
from infx.preflight.verdict import Check, MemoryReport, PointVerdict, worst

if TYPE_CHECKING:
    from infx.catalog.runners import HardwareFacts, RunnerConfig
    from infx.engines.recipes import RecipeSet


@dataclass
class PreflightOptions:
    evals: str = "none"  # the eval mode the points were selected with
    fanout: float = DEFAULT_FANOUT  # agentic subagent fan-out: requests in flight per user
    verify_images: bool = False
    images_lock: ImagesLock | None = None
    registry_mirrors: dict[str, str] = field(default_factory=dict)  # registry host -> base URL
    registry_timeout: float = 10.0
    runtime_overhead_bytes: int | None = None  # override the engine rule's estimate
    # `infx run`: warn when a GPU row would run `local` on this machine and it has no GPU of that vendor
    local_gpu_check: bool = False


def node_facts(runners: RunnerConfig | None, runner: str) -> NodeFacts | None:
    """Host facts for a runner label: ``hardware[label]``, else the fleet of its nodes
    (``mi355x-amds_03`` -> ``cluster:mi355x-amds``) when all its nodes agree. The node count is the
    fleet's explicit ``nodes`` field, never the number of runner names under the label."""
    if runners is None:
        return None
    hw = runners.hardware
    facts = hw.get(runner)
    if facts is None and not runner.startswith("cluster:"):
        facts = hw.get(f"cluster:{runner}")  # a fleet named by its cluster label (gb200-nv -> cluster:gb200-nv)
        runner = f"cluster:{runner}" if facts is not None else runner
    if facts is None:
        found: set[tuple[int, int, int | None, str]] = set()  # (DRAM MiB, GPUs/node, nodes, fleet key)
        for node in runners.labels.get(runner, []):
            key = _fleet_key(hw, node)
            f = hw.get(key) if key else None
            if key is None or f is None:
                found = set()
                break
            found.add((f.available_cpu_dram_mib, f.gpus_per_node, f.nodes, key))
        agree = {x[:2] for x in found}
        if len(agree) == 1:
            mib, gpn = agree.pop()
            counted = {(x[2], x[3]) for x in found if x[2] is not None}
            nodes, src = (counted.pop() if len(counted) == 1 and len({x[3] for x in found}) == 1 else (None, None))
            return NodeFacts(gpus_per_node=gpn, available_dram_bytes=mib * MIB, nodes=nodes, nodes_source=src)
        return None
    nodes = facts.nodes
    return NodeFacts(gpus_per_node=facts.gpus_per_node, available_dram_bytes=facts.available_cpu_dram_mib * MIB,
                     nodes=nodes, nodes_source=runner if nodes else None)


def _fleet_key(hw: Mapping[str, HardwareFacts], node: str) -> str | None:
    """The hardware key of a runner node's fleet: ``h100-dgxc-slurm_16`` -> ``cluster:h100-dgxc`` (the
    node name less its index, then less trailing ``-word`` parts until a fleet matches)."""
    fleet = re.sub(r"_\d+$", "", node)
    while fleet:
        for key in (f"cluster:{fleet}", fleet):
            if key in hw:
                return key
        if "-" not in fleet:
            return None
        fleet = fleet.rsplit("-", 1)[0]
    return None


def runner_check(runners: RunnerConfig | None, point: Point, hw: HardwareCard | None) -> Check:
    problems = []
    if runners is not None and point.runner not in runners.labels and point.runner not in runners.hardware:
        problems.append(f"runner label '{point.runner}' is not in runners.yaml")
    if hw is None:
        problems.append(f"no hardware card matches runner '{point.runner}' (cards/hardware/)")
    if problems:
        return Check(name="runner", status="warn", message="; ".join(problems))
    return Check(name="runner", status="ok", message=f"runner '{point.runner}' -> {hw.name if hw else '?'}")


def runtime_check(point: Point, launch: Servable, hw: HardwareCard | None) -> Check | None:
    """A GPU row whose launch runs ``local`` (its runner declares no runtime in runners.yaml) on a machine
    without that vendor's GPU tools: it cannot start here. None when the row runs elsewhere or can run here."""
    import shutil

    if launch.runtime != "local" or hw is None or hw.kind != "gpu":
        return None
    tools = {"nvidia": ("nvidia-smi",), "amd": ("amd-smi", "rocm-smi")}.get(hw.vendor, ())
    if any(shutil.which(t) for t in tools):
        return None
    return Check(name="runtime", status="warn",
                 message=f"runner '{point.runner}' ({hw.name}) would run `local` on this machine, which has no "
                         f"{hw.vendor} GPU ({' or '.join(tools)} not found): declare the fleet's runtime "
                         "(docker, podman or slurm) under hardware: in runners.yaml")


def settings_for(point: Point, launch: Servable, cards: CardSet, hw: HardwareCard | None) -> EngineSettings:
    card = cards.model_for(point.model_prefix)
    return engine_settings(
        launch.engine, launch.argv, launch.env,
        device_kind="cpu" if (hw is not None and hw.kind == "cpu") else "gpu",
        capacity_bytes=hw.memory if hw else None,
        point_tp=point.tp, point_pp=point.pp, point_max_model_len=point.max_model_len,
        card_max_context=card.max_context if card else None, files=launch.files,
    )


def memory_summary(m: MemoryReport) -> str:
    """One line for the checks table: the problems when there are any, else the figures."""
    if m.problems:
        return "; ".join(m.problems)
    if m.capacity_bytes == 0 and not m.gpu and not m.host:
        return m.findings[0] if m.findings else "not checked"
    if m.device == "cpu":
        head = f"host: needs {gb(m.needed_bytes)} of {gb(m.budget_bytes)}"
    else:
        head = f"needs {gb(m.needed_bytes)}/GPU vs budget {gb(m.budget_bytes)}, margin {gb(m.margin_bytes)}"
    if m.kv_tokens is not None:
        head += f"; KV {m.kv_tokens:,} tokens"
        if m.seqs_fit is not None and m.seq_len:
            head += f" = {m.seqs_fit:.1f} x {m.seq_len:,}-token sequences"
    if m.servers_per_node and m.host_per_server_bytes and m.device != "cpu":
        head += f"; host {m.host_per_server_bytes / 2**30:.1f} GiB/server x {m.servers_per_node} servers/node"
    return head


def preflight_points(
    points: Sequence[Point],
    *,
    recipes: RecipeSet | None = None,
    runners: RunnerConfig | None = None,
    cards: CardSet | None = None,
    options: PreflightOptions | None = None,
    launches: Mapping[str, Servable] | None = None,
    config_keys: Mapping[str, str] | None = None,
    placeholders: PlaceholderScan | None = None,
    recipe_files: Mapping[str, str] | None = None,
) -> list[PointVerdict]:
    """Check every point; one verdict per point, in order.

    ``recipes``: a RecipeSet for ``render_launch`` (or pass ``launches`` keyed by point-id);
    ``runners``: the RunnerConfig (``infx.catalog.load_runners``); ``config_keys``: point-id ->
    catalog key (for placeholder scanning); ``recipe_files``: recipe name -> file.
    """
    opts = options or PreflightOptions()
    cards = cards or load_cards()
    evals = eval_coverage(points, opts.evals)
    if recipes is not None and launches is None:
        from infx.engines.render import prefetch_scripts

        prefetch_scripts(list(points), recipes)
    digest_cache: dict[str, str | RegistryError] = {}
    out: list[PointVerdict] = []
    for point in points:
        checks: list[Check] = []
        memory: MemoryReport | None = None
        hw = cards.hardware_for_runner(point.runner)
        checks.append(runner_check(runners, point, hw))
        launch = launches.get(point.point_id) if launches else None
        if launch is None:
            try:
                launch = _render(point, recipes)
            except InfxError as exc:
                checks.append(Check(name="launch", status="fail",
                                    message="launch does not render: " + "; ".join(str(d).replace("error: ", "", 1)
                                                                                   for d in exc.diagnostics)))
            except Exception as exc:  # a renderer bug must not hide the other points' verdicts
                checks.append(Check(name="launch", status="fail", message=f"launch does not render: {exc}"))
        image = launch.image if launch is not None else point.image
        checks.append(pin_check(image))
        found = runtime_check(point, launch, hw) if opts.local_gpu_check and launch is not None else None
        if found is not None:
            checks.append(found)
        if opts.verify_images:
            checks.append(verify_image(image, opts.images_lock, mirrors=opts.registry_mirrors,
                                       timeout=opts.registry_timeout, cache=digest_cache))
        if isinstance(launch, Deployment):  # per role
            from infx.preflight.roles import role_checks

            checks.extend(role_checks(point, launch, cards, hw, runners, node_facts(runners, point.runner),
                                      opts.runtime_overhead_bytes, memory_summary))
        elif launch is not None:
            try:
                settings = settings_for(point, launch, cards, hw)
            except ValueError as exc:
                checks.append(Check(name="launch-args", status="fail", message=str(exc)))
                settings = None
            if settings is not None:
                if point.multinode:
                    checks.append(Check(name="memory", status="skip",
                                        message="multinode points: memory check not modelled"))
                else:
                    memory = check_memory(point, settings, cards.model_for(point.model_prefix), hw,
                                          node_facts(runners, point.runner),
                                          runtime_overhead_bytes=opts.runtime_overhead_bytes)
                    checks.append(Check(name="memory", status=memory.status, message=memory_summary(memory)))
                checks.append(concurrency_headroom(point, settings, opts.fanout))
                checks.append(graph_ceiling(point, settings, opts.fanout))
        if placeholders is not None:
            key = (config_keys or {}).get(point.point_id)
            rfile = launch.recipe_file or (recipe_files or {}).get(launch.recipe) if launch is not None else None
            values = [image, *(launch.argv if launch else []), *(launch.env.values() if launch else [])]
            checks.append(placeholders.check(key, rfile, values))
        if point.point_id in evals:
            checks.append(evals[point.point_id])
        if launch is not None:  # speculative decoding: is the acceptance measured or forced by the launch?
            from infx.engines.synthetic import label_of_launch

            acc = label_of_launch(point, launch)
            if acc is not None:
                checks.append(Check(name="acceptance", status="ok", message=acc.text()))
        out.append(PointVerdict(
            point_id=point.point_id, exp_name=point.exp_name, runner=point.runner,
            config_key=(config_keys or {}).get(point.point_id), status=worst([c.status for c in checks]),
            checks=checks, memory=memory, launch_fingerprint=launch.fingerprint if launch is not None else None,
        ))
    return out


def _render(point: Point, recipes: RecipeSet | None) -> Servable:
    if recipes is None:
        raise InfxError("no recipes given to render the launch")
    if point.multinode:  # every role of the deployment
        from infx.engines.disagg.render import render_deployment

        return render_deployment(point, recipes)
    from infx.engines.render import render_launch

    return render_launch(point, recipes)


def predict_kv_capacity(point: Point, launch: Servable, cards: CardSet | None = None, *,
                        runners: RunnerConfig | None = None) -> int | None:
    """KV-cache capacity in tokens the engine should report at start-up for this launch (vLLM:
    "GPU KV cache size: N tokens"), or None when the model card lacks an attention shape or the
    KV size cannot be predicted (e.g. vLLM-CPU without an explicit KV cache size)."""
    cards = cards or load_cards()
    hw = cards.hardware_for_runner(point.runner)
    settings = settings_for(point, launch, cards, hw)
    report = check_memory(point, settings, cards.model_for(point.model_prefix), hw, node_facts(runners, point.runner))
    if report.kv_tokens is None or settings.engine != "vllm" or not settings.max_model_len.value:
        return report.kv_tokens
    block = settings.args.get("block-size")
    block_size = int(block) if isinstance(block, str) and block.isdigit() else VLLM_DEFAULT_BLOCK[settings.device_kind]
    return vllm_reported_kv_tokens(report.kv_tokens, int(settings.max_model_len.value), block_size)


#: vLLM's default KV block size (tokens per page): 128 on CPU (seen in vllm:cache_config_info), 16 on GPUs.
VLLM_DEFAULT_BLOCK = {"cpu": 128, "gpu": 16}


def vllm_reported_kv_tokens(pool_tokens: int, max_model_len: int, block_size: int) -> int:
    """The capacity vLLM logs ("KV cache size: N tokens"): whole blocks in the pool divided by the
    whole blocks one max-length request occupies, times max_model_len. Equals the pool when
    max_model_len is a multiple of the block size; less otherwise (576 tokens take 5 blocks of 128)."""
    num_blocks = pool_tokens // block_size
    blocks_per_request = -(-max_model_len // block_size)
    return int(num_blocks / blocks_per_request * max_model_len)


__all__ = ["PreflightOptions", "preflight_points", "predict_kv_capacity", "node_facts", "vllm_reported_kv_tokens"]
