"""vLLM prefill/decode workers with a KV connector behind ``vllm-router`` in PD mode.

* ``kv-p2p-transfer: example-connector`` (the CPU deployment that runs for real here): both workers are
  rendered by the point's single-node recipe (the embedded vLLM-CPU engine) plus
  ``--kv-transfer-config`` with vLLM's ``ExampleConnector`` (``kv_producer`` / ``kv_consumer``) on a
  shared directory created per start and removed at teardown (spec: cpu-disagg.md).
* ``kv-p2p-transfer: nixl`` (``llmd-vllm`` rows and multinode ``vllm`` rows): ``vllm serve`` workers with
  ``NixlConnector`` (``kv_both``), tp/ep/dp-attn from the row's worker pools.

The router is ``vllm-router==0.1.17`` from its own venv (``make router-venv``), always with an explicit
Prometheus port (its default port is fixed: a second router would panic).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from infx.diagnostics import Diagnostic, InfxError
from infx.engines.disagg.model import Deployment, KVTransfer, Role, deployment_fingerprint
from infx.engines.disagg.roles import templated_launch, with_extra_args
from infx.engines.launch import Launch
from infx.matrix.point import Point, Worker

if TYPE_CHECKING:
    from infx.engines.recipes import RecipeSet

ROUTER_VERSION = "0.1.17"
KV_DIR = "{kv_dir}"


def router_bin() -> Path:
    """``vllm-router`` from ``INFX_ROUTER_VENV``, else the workspace's ``.infx/router-venv`` (``make router-venv``
    in a checkout), else one on PATH; the workspace path when none exists (the launch then fails to start)."""
    import os
    import shutil

    from infx.workspace import current

    if os.environ.get("INFX_ROUTER_VENV"):
        return Path(os.environ["INFX_ROUTER_VENV"]) / "bin" / "vllm-router"
    local = current().cache_dir / "router-venv" / "bin" / "vllm-router"
    if local.exists():
        return local
    found = shutil.which("vllm-router")
    return Path(found) if found else local


def role_point(point: Point, w: Worker) -> Point:
    """The single-node point one worker of the pool serves (what its recipe renders)."""
    return point.model_copy(update={
        "prefill": None, "decode": None, "tp": w.tp, "ep": w.ep, "dp_attn": w.dp_attn, "pp": w.pp,
        "dcp_size": w.dcp_size, "pcp_size": w.pcp_size, "disagg": False, "router": None, "kv_p2p_transfer": None,
    })


def kv_config(connector: str, role: str, extra: Mapping[str, str]) -> str:
    cfg: dict[str, object] = {"kv_connector": connector, "kv_role": role}
    if extra:
        cfg["kv_connector_extra_config"] = dict(extra)
    return json.dumps(cfg, separators=(",", ":"))


def default_ports(port: int, n_prefill: int, n_decode: int) -> dict[str, int]:
    ports = {"router": port, "router_metrics": port + 9}
    for i in range(n_prefill):
        ports[f"prefill_{i}"] = port + 1 + i
    for i in range(n_decode):
        ports[f"decode_{i}"] = port + 1 + n_prefill + i
    return ports


def port_keys(role: str) -> list[str]:
    """The :func:`default_ports` keys a role's launch binds (``decode-1`` -> ``decode_1``; the router binds its
    API and Prometheus ports)."""
    if role == "router":
        return ["router", "router_metrics"]
    kind, _, index = role.partition("-")
    return [f"{kind}_{index or 0}"]


def render_cpu_pd(point: Point, recipes: RecipeSet, port: int, ports: Mapping[str, int] | None = None,
                  kv_dir: str = KV_DIR) -> Deployment:
    """The real CPU deployment: recipe-rendered vLLM-CPU workers + ExampleConnector + vllm-router."""
    from infx.engines.render import render_launch

    assert point.prefill is not None and point.decode is not None
    p = dict(ports or default_ports(port, point.prefill.num_worker, point.decode.num_worker))
    kv = KVTransfer(name=point.kv_p2p_transfer or "example-connector", connector="ExampleConnector",
                    settings={"shared_storage_path": kv_dir}, shared_dir=True)
    roles: list[Role] = []
    urls: dict[str, list[str]] = {"prefill": [], "decode": []}
    pools: list[tuple[Literal["prefill", "decode"], Worker, str]] = [
        ("prefill", point.prefill, "kv_producer"), ("decode", point.decode, "kv_consumer")]
    for kind, w, kv_role in pools:
        rp = role_point(point, w)
        # one Role per instance: instances of a local pool need distinct ports
        for i in range(w.num_worker):
            base: Launch = render_launch(rp, recipes, port=p[f"{kind}_{i}"])
            launch = with_extra_args(base, ["--kv-transfer-config", kv_config("ExampleConnector", kv_role,
                                            {"shared_storage_path": KV_DIR})], {"kv_dir": kv_dir})
            name = kind if w.num_worker == 1 else f"{kind}-{i}"
            roles.append(Role(name=name, kind=kind, count=1, gpus_per_instance=w.tp * w.pp * w.pcp_size,
                              tp=w.tp, ep=w.ep, dp_attn=w.dp_attn, launch=launch))
            urls[kind].append(launch.base_url)
    served = roles[0].launch.served_model_name
    template = ["{router_bin}", "--host", "127.0.0.1", "--port", "{port}",
                "--prometheus-host", "127.0.0.1", "--prometheus-port", "{router_metrics}",
                "--vllm-pd-disaggregation"]
    values: dict[str, object] = {"router_bin": router_bin(), "port": p["router"], "router_metrics": p["router_metrics"]}
    for kind in ("prefill", "decode"):
        for i, url in enumerate(urls[kind]):
            template += [f"--{kind}", "{" + f"{kind}_url_{i}" + "}"]
            values[f"{kind}_url_{i}"] = url
    template += ["--policy", "round_robin", "--worker-startup-check-interval", "1"]
    # the template names workers by role only, so the fingerprint does not depend on ports
    router = templated_launch(engine="vllm-router", recipe=f"vllm-router=={ROUTER_VERSION}", image="local",
                              template=template, values=values, port=p["router"], served_model_name=served,
                              model_path=roles[0].launch.model_path, consumed=["router", "kv-p2p-transfer"])
    router = router.model_copy(update={"model_builder": None})
    roles.append(Role(name="router", kind="router", launch=router))
    notes = ["ExampleConnector is vLLM's reference connector (KV as safetensors files in a shared directory, "
             "one node): it exercises the PD control flow and metrics, not production KV-transfer speed"]
    return Deployment(framework=point.framework, point_id=point.point_id, roles=roles, entry="router", kv_transfer=kv,
                      disagg=point.disagg, notes=notes, fingerprint=deployment_fingerprint(point.framework, roles, kv))


def check_cpu_pools(point: Point, where: str) -> None:
    assert point.prefill is not None and point.decode is not None
    bad = []
    for kind, w in (("prefill", point.prefill), ("decode", point.decode)):
        if w.tp * w.pp * w.pcp_size != 1:
            bad.append(f"{kind} workers take {w.tp * w.pp * w.pcp_size} devices each; "
                       "the CPU runner has one device per worker")
    if bad:
        raise InfxError([Diagnostic(f"{where}: point {point.point_id}: {m}") for m in bad])
