"""Which InferenceX bench script serves a point, and the environment the workflow gives it.

The rule is the per-cluster launchers' (``runners/launch_*.sh``): the script lives in
``benchmarks/single_node/{fixed_seq_len,agentic}/`` and is named from the exp-name's prefix (up to
the first ``_``), the precision, the runner's hardware token and the engine::

    {prefix}_{precision}_{hw}_{framework}{spec}.sh      tried first (b200, b300, h200, mi355x, rtx6000pro)
    {prefix}_{precision}_{hw}{legacy}{spec}.sh          the fallback: legacy = ``_trt`` for trt
                                                        (``_atom`` for atom on mi355x), else empty

``spec`` is ``_mtp`` when spec-decoding is ``mtp``. The h100, mi300x and mi325x launchers know only
``{prefix}_{precision}_{hw}{spec}.sh`` (no engine in the name).

The environment follows ``.github/workflows/benchmark-tmpl.yml``'s ``env:`` block (the contract
between a matrix row and a script) plus what the launchers export (``PORT``, ``GITHUB_WORKSPACE``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from infx.engines.hardware import UnknownHardware, hardware_for_runner
from infx.matrix.point import Point

#: Hardware tokens whose launchers try the framework-tagged name first.
FRAMEWORK_TAGGED = frozenset({"b200", "b300", "h200", "mi355x", "rtx6000pro"})
#: Hardware tokens whose launchers use only ``{prefix}_{precision}_{hw}{spec}.sh``.
BARE_ONLY = frozenset({"h100", "mi300x", "mi325x"})

SCENARIO_SUBDIR = {"fixed-seq-len": "fixed_seq_len", "agentic-coding": "agentic"}

#: The port the launchers give the server (``PORT=8888``); rendered launches replace it.
SCRIPT_PORT = 8888
#: Where the workflow mounts the workspace inside the container.
CONTAINER_WORKSPACE = "/workspace"


class ScriptLookup(BaseModel):
    """The script found for a point (``path`` relative to the workspace root) or the names tried."""

    model_config = ConfigDict(frozen=True)

    hw: str
    tried: list[str]  # relative to the workspace root, in the launchers' order
    path: str | None = None


def script_names(point: Point, hw: str) -> list[str]:
    prefix = point.exp_name.split("_", 1)[0]
    spec = "_mtp" if point.spec_decoding == "mtp" else ""
    base = f"{prefix}_{point.precision}_{hw}"
    names: list[str] = []
    if hw in BARE_ONLY:
        names.append(f"{base}{spec}.sh")
    else:
        names.append(f"{base}_{point.framework}{spec}.sh")  # FRAMEWORK_TAGGED, and any other token
        legacy = ("_trt" if point.framework == "trt"
                  else "_atom" if point.framework == "atom" and hw == "mi355x" else "")
        names.append(f"{base}{legacy}{spec}.sh")
    out: list[str] = []
    for n in names:
        if n not in out:
            out.append(n)
    return out


def locate_script(point: Point, root: Path, benchmarks: str = "benchmarks",
                  exists: Callable[[str], bool] | None = None) -> ScriptLookup | None:
    """The bench script of a single-node ``point`` under ``root``/``benchmarks``; None when the
    point is multinode or its runner names no known hardware. ``exists`` (a relative path -> bool)
    replaces the file system, e.g. with a git tree at some revision."""
    if point.multinode:
        return None
    try:
        hw = hardware_for_runner(point.runner).sku
    except UnknownHardware:
        return None
    sub = SCENARIO_SUBDIR.get(point.scenario_type, "fixed_seq_len")
    rels = [f"{benchmarks}/single_node/{sub}/{n}" for n in script_names(point, hw)]
    for rel in rels:
        if exists(rel) if exists is not None else ((root / rel).is_file() or (root / rel).is_symlink()):
            # (a dangling link is found, and reported as unreadable when rendered)
            return ScriptLookup(hw=hw, tried=rels, path=rel)
    return ScriptLookup(hw=hw, tried=rels)


def _compact_json(component: BaseModel | None) -> str:
    """A component's metadata as the workflow passes it: compact JSON without unset fields; "" if none."""
    return json.dumps(component.model_dump(exclude_none=True), separators=(",", ":")) if component is not None else ""


def _s(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def workflow_env(point: Point, conc: int, script_rel: str) -> dict[str, str]:
    """The environment benchmark-tmpl.yml (and the launcher) give the script for one concurrency."""
    agentic = point.scenario_type == "agentic-coding"
    kvb = point.kv_offload_backend
    fname = (f"{point.exp_name}_{point.precision}_{point.framework}_tp{_s(point.tp)}-pp{point.pp}-dcp{point.dcp_size}"
             f"-pcp{point.pcp_size}-ep{point.ep}-dpa{_s(point.dp_attn)}_disagg-{_s(point.disagg)}"
             f"_spec-{point.spec_decoding}_conc{conc}_infx")
    env = {
        "RANDOM_RANGE_RATIO": "0.8",
        "HF_TOKEN": "",
        "HF_HUB_CACHE": "/mnt/hf_hub_cache/",
        "EXP_NAME": point.exp_name,
        "RECIPE_FINGERPRINT": _s(point.recipe_fingerprint),
        "MODEL": point.model,
        "MODEL_PREFIX": point.model_prefix,
        "ISL": _s(point.isl),
        "OSL": _s(point.osl),
        "MAX_MODEL_LEN": _s(point.max_model_len),
        "IMAGE": point.image,
        "FRAMEWORK": point.framework,
        "PRECISION": point.precision,
        "TP": _s(point.tp),
        "PP_SIZE": _s(point.pp),
        "DCP_SIZE": _s(point.dcp_size),
        "PCP_SIZE": _s(point.pcp_size),
        "EP_SIZE": _s(point.ep),
        "DP_ATTENTION": _s(point.dp_attn),
        "CONC": str(conc),
        "SPEC_DECODING": point.spec_decoding,
        "DISAGG": _s(point.disagg),
        "RUN_EVAL": _s(point.run_eval),
        "EVAL_ONLY": _s(point.eval_only),
        "SCENARIO_TYPE": point.scenario_type,
        "SCENARIO_SUBDIR": "agentic/" if agentic else "fixed_seq_len/",
        "IS_AGENTIC": "1" if agentic else "0",
        "KV_OFFLOADING": _s(point.kv_offloading),
        "KV_OFFLOAD_BACKEND": kvb.name if kvb else "",
        "KV_OFFLOAD_BACKEND_METADATA": _compact_json(kvb),
        "ROUTER_METADATA": _compact_json(point.router),
        "KV_P2P_TRANSFER": "",
        "TOTAL_CPU_DRAM_GB": _s(point.total_cpu_dram_gb if point.total_cpu_dram_gb is not None else 0),
        "DURATION": _s(point.duration if point.duration is not None else 3600),
        "REQUIRE_POWER": "0",
        "AIPERF_EXPERIMENTAL_FAST": "0",
        "EVAL_LIMIT": "",
        "SWEBENCH_GEN_MODE": "",
        "AIPERF_FAILED_REQUEST_THRESHOLD": "0.10",
        "RESULT_DIR": f"{CONTAINER_WORKSPACE}/results",
        "RESULT_FILENAME": fname,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPYCACHEPREFIX": "/tmp/inferencex-pycache",
        # the launcher's part
        "PORT": str(SCRIPT_PORT),
        "GITHUB_WORKSPACE": CONTAINER_WORKSPACE,
        "RUNNER_NAME": point.runner.removeprefix("cluster:") + "_00",
    }
    return env
