"""Per-role normalisation of disaggregated (prefill/decode) deployments, as InferenceX does it:

* total tokens/s (input + output) per GPU: divided by **all** GPUs (prefill + decode);
* output tokens/s per GPU: divided by the **decode** GPUs;
* input tokens/s per GPU: divided by the **prefill** GPUs.

Per node: the prefill and decode pools are placed on nodes of their own, so a deployment takes
``ceil(prefill GPUs / GPUs per node) + ceil(decode GPUs / GPUs per node)`` nodes and its per-node figure is
its throughput divided by that. Aggregated points (and multinode rows with an empty pool) keep the
single-server rules of :mod:`infx.analysis.pernode`.
"""

from __future__ import annotations

import math
from typing import Literal

RoleMetric = Literal["total", "output", "input"]


def is_disagg(prefill_gpus: int | None, decode_gpus: int | None) -> bool:
    return bool(prefill_gpus) and bool(decode_gpus)


def gpus_for(metric: RoleMetric, prefill_gpus: int, decode_gpus: int) -> int:
    """The GPUs a disaggregated figure is divided by."""
    if metric == "output":
        return decode_gpus
    if metric == "input":
        return prefill_gpus
    return prefill_gpus + decode_gpus


def per_gpu(per_deployment: float, metric: RoleMetric, prefill_gpus: int, decode_gpus: int) -> float:
    n = gpus_for(metric, prefill_gpus, decode_gpus)
    if n <= 0:
        raise ValueError(f"{metric} per GPU needs a positive GPU count (prefill {prefill_gpus}, decode {decode_gpus})")
    return per_deployment / n


def deployment_nodes(prefill_gpus: int, decode_gpus: int, gpus_per_node: int) -> int:
    if gpus_per_node <= 0:
        raise ValueError(f"gpus_per_node must be positive, got {gpus_per_node}")
    return math.ceil(prefill_gpus / gpus_per_node) + math.ceil(decode_gpus / gpus_per_node)


def per_node(per_deployment: float, prefill_gpus: int, decode_gpus: int, gpus_per_node: int) -> float:
    return per_deployment / deployment_nodes(prefill_gpus, decode_gpus, gpus_per_node)
