"""Role launches for the GPU multinode frameworks of the catalog (rendered and golden-tested; they run
on GPU clusters, one Slurm step per role).

* ``sglang-disagg``: ``sglang.launch_server`` prefill and decode servers
  (``--disaggregation-mode``, ``--disaggregation-transfer-backend`` from ``kv-p2p-transfer``) behind
  ``sglang_router.launch_router --pd-disaggregation``.
* ``dynamo-vllm`` / ``dynamo-sglang`` / ``dynamo-trt``: etcd + NATS (Dynamo's discovery and event plane),
  the ``dynamo.frontend`` (``--router-mode kv`` when the row names ``dynamo-router``) and
  ``dynamo.vllm`` / ``dynamo.sglang`` / ``dynamo.trtllm`` prefill and decode workers.
* ``llmd-vllm`` and multinode ``vllm``: ``vllm serve`` workers with ``NixlConnector`` behind
  ``vllm-router`` in PD mode (llm-d's own Kubernetes gateway is not rendered: vllm-router stands in
  for it, and the plan says so).

Worker hosts are placeholders (``{prefill_host}``, ``{decode_host}``, ``{entry_host}``) that the Slurm
launcher fills from the allocation's node list; plan renders show the role names.
"""

from __future__ import annotations

from typing import Literal

import yaml

from infx.diagnostics import Diagnostic, InfxError
from infx.engines.disagg.model import Deployment, KVTransfer, Role, RoleKind, deployment_fingerprint
from infx.engines.disagg.roles import templated_launch
from infx.engines.disagg.vllm_pd import kv_config
from infx.matrix.point import Point, Worker

PORT = 8000
WORKER_PORT = 30000

#: Catalog kv-p2p-transfer -> what each framework's flag calls it.
SGLANG_BACKENDS = {"mori": "mori", "mooncake": "mooncake", "nixl": "nixl"}
TRT_BACKENDS = {"nixl": "NIXL", "ucx": "UCX", "mooncake": "MOONCAKE"}

#: Multinode frameworks no adapter covers yet.
UNSUPPORTED = {
    "atom-disagg": "ATOM's disaggregated launcher (atomesh router, mooncake) has no infx adapter yet",
    "tilert": "TileRT's PD router has no infx adapter yet",
}


def _disagg(point: Point) -> bool:
    """Disaggregated for real: the row says so and both pools have workers (InferenceX rows of a disagg
    entry use ``num-worker: 0`` for their aggregated arms: the other pool then serves alone)."""
    assert point.prefill is not None and point.decode is not None
    return point.disagg and point.prefill.num_worker > 0 and point.decode.num_worker > 0


def _values(point: Point) -> dict[str, object]:
    return {"prefill_host": "prefill-0", "decode_host": "decode-0", "entry_host": "entry", "port": PORT,
            "worker_port": WORKER_PORT}


def _served(point: Point) -> str:
    return point.model


WorkerKind = Literal["prefill", "decode"]


def _pools(point: Point) -> list[tuple[WorkerKind, Worker]]:
    """The worker pools of a multinode point, prefill first; a pool of no workers is left out (aggregated
    multinode rows: decode workers only serve)."""
    assert point.prefill and point.decode
    pools: list[tuple[WorkerKind, Worker]] = [("prefill", point.prefill), ("decode", point.decode)]
    return [(kind, w) for kind, w in pools if w.num_worker != 0]


def _worker_role(point: Point, kind: WorkerKind, w: Worker, engine: str, template: list[str], *,
                 files: dict[str, str] | None = None, env: dict[str, str] | None = None,
                 shape: tuple[int, int] | None = None) -> Role:
    """``shape``: (instances, GPUs per instance) when they are not the catalog's ``num-worker`` and
    ``tp x pp x pcp`` (vLLM data parallelism, :func:`vllm_parallel`)."""
    launch = templated_launch(engine=engine, recipe=f"{point.framework}-{kind}", image=point.image,
                              template=template, values=_values(point), port=WORKER_PORT,
                              host="{" + f"{kind}_host" + "}",
                              served_model_name=_served(point), model_path=point.model, env=env, files=files,
                              runtime="slurm", consumed=[kind])
    count, gpus = shape if shape is not None else (w.num_worker, w.tp * w.pp * w.pcp_size)
    return Role(name=kind, kind=kind, count=count, gpus_per_instance=gpus,
                tp=w.tp, ep=w.ep, dp_attn=w.dp_attn, launch=launch)


def vllm_parallel(w: Worker) -> tuple[int, int, int]:
    """(instances, ``--tensor-parallel-size``, ``--data-parallel-size``) of one vLLM worker pool.

    The catalog's vLLM entries spell a data-parallel worker in three ways; their recipe names
    (``CONFIG_FILE``) and comments say which GPUs each takes:

    * ``ep`` > ``tp`` with ``dp-attn``: one server of TP ``tp`` x DP ``ep / tp`` = EP ``ep`` GPUs
      (``tp: 1, ep: 8`` = "dep8" on one 8-GPU node: dsv4-fp4-b200-dynamo-vllm-mtp, kimik2.6-fp4-b200-dynamo-vllm;
      ``tp: 4, ep: 16`` = "TP4 x DP4 = EP16": kimik3-fp4-gb200-dynamo-vllm-agentic), ``num-worker`` such servers;
    * the same, with ``num-worker`` x ``tp`` = ``ep``: ``num-worker`` counts the DP ranks of that one
      server ("TP16 x DP2 with EP32 across four H200 nodes" is ``num-worker: 2, tp: 16, ep: 32``:
      kimik3-fp4-h200-vllm-agentic, recipe ``agg-h200-tp16dp2ep32``);
    * otherwise with ``dp-attn`` (``tp`` = ``ep``, SGLang's spelling): ``tp`` DP ranks of TP 1
      ("DEP8" is ``tp: 8, ep: 8``: dsv4-fp4-gb200-dynamo-vllm-agentic-mtp-*).

    Without ``dp-attn`` a worker is TP ``tp`` (EP inside it when ``ep`` > 1)."""
    if not w.dp_attn:
        return w.num_worker, w.tp, 1
    if w.ep > w.tp:
        if w.num_worker > 1 and w.num_worker * w.tp == w.ep:
            return 1, w.tp, w.num_worker
        return w.num_worker, w.tp, w.ep // w.tp
    return w.num_worker, 1, w.tp


def vllm_topology_flags(w: Worker) -> tuple[list[str], int, int]:
    """The parallelism flags of one vLLM worker, the instances of the pool and the GPUs one
    instance takes (vLLM's world size: TP x DP x PP x PCP; DCP reuses the TP ranks)."""
    count, tp, dp = vllm_parallel(w)
    flags = ["--tensor-parallel-size", str(tp)]  # first, as a pair: the renderers keep it there
    if w.ep > 1:
        flags += ["--enable-expert-parallel"]
    if dp > 1:
        flags += ["--data-parallel-size", str(dp)]
    if w.pp > 1:
        flags += ["--pipeline-parallel-size", str(w.pp)]
    if w.pcp_size > 1:
        flags += ["--prefill-context-parallel-size", str(w.pcp_size)]
    if w.dcp_size > 1:
        flags += ["--decode-context-parallel-size", str(w.dcp_size)]
    return flags, count, tp * dp * w.pp * w.pcp_size


def _entry_role(point: Point, name: str, kind: RoleKind, engine: str, template: list[str], recipe: str,
                readiness: str = "/health") -> Role:
    launch = templated_launch(engine=engine, recipe=recipe, image=point.image, template=template, values=_values(point),
                              port=PORT, host="{entry_host}", served_model_name=_served(point), model_path=point.model,
                              readiness_path=readiness, runtime="slurm", consumed=["router"])
    return Role(name=name, kind=kind, launch=launch)


def _settings(w: Worker) -> dict[str, str]:
    out = {}
    for item in w.additional_settings:
        k, _, v = item.partition("=")
        out[k] = v
    return out


# ---------------------------------------------------------------------------------------- sglang

def _sglang_flags(w: Worker) -> list[str]:
    """SGLang's ``--tp-size`` is the server's world inside one PP stage: prefill context parallelism
    (the catalog's ``pcp-size``) runs ``--attn-cp-size`` attention CP ranks inside it, so a ``tp: 1,
    pcp-size: 8`` prefill (glm5.2-fp8-h200-dynamo-sglang-agentic-mtp-2p2d, recipe
    ``disagg-h200-2p2d-pcp8-...``) is ``--tp-size 8 --attn-cp-size 8`` on 8 GPUs: attention replicated on
    each CP rank (attention TP = tp-size / attn-cp-size = 1), the MoE layers over all 8. The CP path
    SGLang has for these (DSA/NSA) models is ``--enable-nsa-prefill-context-parallel``."""
    world = w.tp * w.pcp_size
    flags = ["--tp-size", str(world)]
    if w.ep > 1:
        flags += ["--ep-size", str(w.ep)]
    if w.dp_attn:
        flags += ["--enable-dp-attention", "--dp-size", str(w.tp)]
    if w.pcp_size > 1:
        flags += ["--enable-nsa-prefill-context-parallel", "--attn-cp-size", str(w.pcp_size)]
    if w.pp > 1:
        flags += ["--pp-size", str(w.pp)]
    return flags


def render_sglang_disagg(point: Point) -> Deployment:
    assert point.prefill and point.decode
    backend = SGLANG_BACKENDS.get(point.kv_p2p_transfer or "", point.kv_p2p_transfer or "mooncake")
    roles = []
    for kind, w in _pools(point):
        argv = ["python3", "-m", "sglang.launch_server", "--model-path", point.model, "--trust-remote-code",
                *_sglang_flags(w)]
        if _disagg(point):
            argv += ["--disaggregation-mode", kind, "--disaggregation-transfer-backend", backend]
        argv += ["--host", "0.0.0.0", "--port", "{worker_port}"]
        roles.append(_worker_role(point, kind, w, "sglang", argv))
    if _disagg(point):
        router = ["python3", "-m", "sglang_router.launch_router", "--pd-disaggregation",
                  "--prefill", "http://{prefill_host}:{worker_port}", "--decode", "http://{decode_host}:{worker_port}"]
    else:
        pool = "decode" if point.decode.num_worker else "prefill"
        router = ["python3", "-m", "sglang_router.launch_router", "--worker-urls",
                  "http://{" + pool + "_host}:{worker_port}"]
    router += ["--host", "0.0.0.0", "--port", "{port}"]
    version = point.router.version if point.router else None
    roles.append(_entry_role(point, "router", "router", "sglang-router", router,
                             f"sglang-router=={version or 'image'}"))
    kv = KVTransfer(name=point.kv_p2p_transfer or backend, connector=backend) if _disagg(point) else None
    return Deployment(framework=point.framework, point_id=point.point_id, roles=roles, entry="router", kv_transfer=kv,
                      disagg=_disagg(point), fingerprint=deployment_fingerprint(point.framework, roles, kv))


# ---------------------------------------------------------------------------------------- dynamo

def _infra_roles(point: Point) -> list[Role]:
    etcd = ["etcd", "--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", "http://{entry_host}:2379"]
    nats = ["nats-server", "-js"]
    out = []
    for name, argv, port in (("etcd", etcd, 2379), ("nats", nats, 4222)):
        launch = templated_launch(engine=name, recipe=f"dynamo-{name}", image=point.image, template=argv,
                                  values=_values(point), port=port, host="{entry_host}", served_model_name="",
                                  model_path="", readiness_path="", runtime="slurm")
        out.append(Role(name=name, kind="infra", launch=launch))
    return out


DYNAMO_ENV = {"ETCD_ENDPOINTS": "http://{entry_host}:2379", "NATS_SERVER": "nats://{entry_host}:4222"}


def _dynamo_worker(point: Point, kind: WorkerKind, w: Worker) -> tuple[list[str], dict[str, str]]:
    """(argv, files) of one Dynamo worker of the pool."""
    fw = point.framework.split("-", 1)[1]
    kv = point.kv_p2p_transfer
    if fw == "vllm":
        # TP x DP as the catalog's vLLM entries mean it (vllm_parallel)
        argv = ["python3", "-m", "dynamo.vllm", "--model", point.model, *vllm_topology_flags(w)[0]]
        if _disagg(point) and kind == "prefill":
            argv += ["--is-prefill-worker"]
        if _disagg(point):
            argv += ["--kv-transfer-config", kv_config("NixlConnector", "kv_both", {})]
        return argv, {}
    if fw == "sglang":
        argv = ["python3", "-m", "dynamo.sglang", "--model-path", point.model, "--trust-remote-code", *_sglang_flags(w)]
        if _disagg(point):
            argv += ["--disaggregation-mode", kind, "--disaggregation-transfer-backend",
                     SGLANG_BACKENDS.get(kv or "", kv or "nixl")]
        return argv, {}
    # trtllm: parallelism lives in the engine options file
    opts: dict[str, object] = {"tensor_parallel_size": w.tp, "moe_expert_parallel_size": w.ep,
                               "enable_attention_dp": w.dp_attn, "pipeline_parallel_size": w.pp}
    if _disagg(point):
        opts["cache_transceiver_config"] = {"backend": TRT_BACKENDS.get(kv or "", (kv or "nixl").upper())}
    name = f"{kind}.yaml"
    argv = ["python3", "-m", "dynamo.trtllm", "--model-path", point.model, "--extra-engine-args", name]
    if _disagg(point):
        argv += ["--disaggregation-mode", kind]
    return argv, {name: yaml.safe_dump(opts, sort_keys=True)}


def render_dynamo(point: Point) -> Deployment:
    assert point.prefill and point.decode
    roles = _infra_roles(point)
    for kind, w in _pools(point):
        argv, files = _dynamo_worker(point, kind, w)
        shape = vllm_topology_flags(w)[1:] if point.framework == "dynamo-vllm" else None
        roles.append(_worker_role(point, kind, w, point.framework, argv, files=files, env=DYNAMO_ENV, shape=shape))
    frontend = ["python3", "-m", "dynamo.frontend", "--http-port", "{port}"]
    if point.router and point.router.name == "dynamo-router":
        frontend += ["--router-mode", "kv"]
    version = point.router.version if point.router else "image"
    roles.append(_entry_role(point, "frontend", "frontend", "dynamo-frontend", frontend, f"dynamo-frontend@{version}"))
    kv = (KVTransfer(name=point.kv_p2p_transfer, connector=point.kv_p2p_transfer)
          if point.kv_p2p_transfer and _disagg(point) else None)
    return Deployment(framework=point.framework, point_id=point.point_id, roles=roles, entry="frontend", kv_transfer=kv,
                      disagg=_disagg(point), fingerprint=deployment_fingerprint(point.framework, roles, kv))


# ---------------------------------------------------------------------------------------- vLLM + NIXL

def render_vllm_nixl(point: Point) -> Deployment:
    assert point.prefill and point.decode
    roles = []
    for kind, w in _pools(point):
        flags, count, gpus = vllm_topology_flags(w)
        argv = ["vllm", "serve", point.model, *flags[:2], "--host", "0.0.0.0", "--port", "{worker_port}", *flags[2:]]
        if _disagg(point):
            argv += ["--kv-transfer-config", kv_config("NixlConnector", "kv_both", {})]
        roles.append(_worker_role(point, kind, w, "vllm", argv, shape=(count, gpus)))
    router = ["vllm-router", "--host", "0.0.0.0", "--port", "{port}", "--prometheus-host", "0.0.0.0",
              "--prometheus-port", "29000"]
    if _disagg(point):
        router += ["--vllm-pd-disaggregation", "--prefill", "http://{prefill_host}:{worker_port}",
                   "--decode", "http://{decode_host}:{worker_port}"]
    else:
        pool = "decode" if point.decode.num_worker else "prefill"  # aggregated rows: the pool with workers
        router += ["--worker-urls", "http://{" + pool + "_host}:{worker_port}"]
    router += ["--policy", "round_robin"]
    roles.append(_entry_role(point, "router", "router", "vllm-router", router, "vllm-router==0.1.17"))
    kv = KVTransfer(name=point.kv_p2p_transfer or "nixl", connector="NixlConnector") if _disagg(point) else None
    notes = []
    if point.framework == "llmd-vllm":
        notes.append("llm-d's Kubernetes gateway (llm-d-router) is not rendered: vllm-router fronts the same "
                     "vLLM + NixlConnector workers")
    return Deployment(framework=point.framework, point_id=point.point_id, roles=roles, entry="router", kv_transfer=kv,
                      disagg=_disagg(point), notes=notes,
                      fingerprint=deployment_fingerprint(point.framework, roles, kv))


def unsupported(point: Point) -> InfxError:
    why = UNSUPPORTED.get(point.framework, f"no deployment adapter for multinode framework {point.framework!r}")
    return InfxError(Diagnostic(f"point {point.point_id} ({point.exp_name}): {why}; covered: "
                                f"{', '.join(sorted(COVERED))}"))


COVERED = {"sglang-disagg", "dynamo-vllm", "dynamo-sglang", "dynamo-trt", "llmd-vllm", "vllm"}
