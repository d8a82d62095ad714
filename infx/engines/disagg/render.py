"""One multinode point -> its typed :class:`~infx.engines.disagg.model.Deployment` (every role rendered).

Dispatch by the row's framework; a framework no adapter covers is a clear per-framework error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from infx.diagnostics import Diagnostic, InfxError
from infx.engines.disagg.model import Deployment
from infx.matrix.point import Point

if TYPE_CHECKING:
    from infx.engines.recipes import RecipeSet


def is_cpu_example_connector(point: Point) -> bool:
    return point.framework == "vllm" and (point.kv_p2p_transfer or "") == "example-connector"


def render_deployment(point: Point, recipes: RecipeSet | None = None, *, port: int = 8000,
                      ports: Mapping[str, int] | None = None, kv_dir: str | None = None) -> Deployment:
    """Raises :class:`InfxError` for a single-node point, a bad topology or an uncovered framework."""
    from infx.engines.disagg import gpu, vllm_pd

    if point.prefill is None or point.decode is None:
        raise InfxError(Diagnostic(f"point {point.point_id} is single-node; it has no deployment roles"))
    problems = topology_problems(point)
    if problems:
        raise InfxError([Diagnostic(f"point {point.point_id} ({point.exp_name}): {m}") for m in problems])
    fw = point.framework
    if is_cpu_example_connector(point):
        vllm_pd.check_cpu_pools(point, point.exp_name)
        if recipes is None:
            from infx.engines.recipes import workspace_recipes

            recipes = workspace_recipes()
        return vllm_pd.render_cpu_pd(point, recipes, port, ports, kv_dir or vllm_pd.KV_DIR)
    if fw in ("vllm", "llmd-vllm"):
        return gpu.render_vllm_nixl(point)
    if fw == "sglang-disagg":
        return gpu.render_sglang_disagg(point)
    if fw in ("dynamo-vllm", "dynamo-sglang", "dynamo-trt"):
        return gpu.render_dynamo(point)
    raise gpu.unsupported(point)


def topology_problems(point: Point) -> list[str]:
    """Roles a deployment cannot be built from (the catalog check reports the same at FILE:LINE)."""
    out = []
    assert point.prefill is not None and point.decode is not None
    if point.prefill.num_worker < 1 and point.decode.num_worker < 1:
        out.append("prefill and decode workers are both 0: the deployment has no worker")
    if point.kv_p2p_transfer == "example-connector" and point.disagg and point.decode.num_worker < 1:
        out.append("decode workers = 0: a KV connector deployment needs a decode worker to receive the KV")
    fw = point.framework
    fw_key = "dynamo" if fw.startswith("dynamo-") else fw
    routers = _ROUTERS.get(fw_key)
    if routers is not None and point.router is not None and point.router.name not in routers:
        out.append(f"router {point.router.name!r} is not one the {fw} deployment renders (known: {', '.join(routers)})")
    kvs = _KV_TRANSFERS.get(fw_key)
    if kvs is not None and point.kv_p2p_transfer is not None and point.kv_p2p_transfer not in kvs:
        out.append(f"kv-p2p-transfer {point.kv_p2p_transfer!r} is not one the {fw} deployment renders "
                   f"(known: {', '.join(kvs)})")
    for role in ("prefill", "decode"):
        w = getattr(point, role)
        if w.num_worker > 0 and w.tp < 1:
            out.append(f"{role} tp {w.tp}: a worker needs at least one GPU")
    return out


#: The routers and KV transfer backends each multi-role renderer maps; anything else would render as
#: one of these silently (an unknown router as vllm-router, an unknown backend as NixlConnector).
_ROUTERS: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm-router",), "llmd-vllm": ("llm-d-router", "vllm-router"), "sglang-disagg": ("sglang-router",),
    "dynamo": ("dynamo-router",),
}
_KV_TRANSFERS: dict[str, tuple[str, ...]] = {
    "vllm": ("example-connector", "nixl"), "llmd-vllm": ("nixl",), "sglang-disagg": ("mooncake", "mori", "nixl"),
    "dynamo": ("mooncake", "mori", "nixl", "ucx"),
}
