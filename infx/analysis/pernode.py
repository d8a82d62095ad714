"""Per-GPU and per-node normalisation.

A measured point is one engine instance (a *server*) using ``gpus_per_server = tp x pp x pcp``
GPUs. Whole servers are packed onto nodes: ``servers_per_node = gpus_per_node // gpus_per_server``
(TP=2 on an 8-GPU node: 4 servers; TP=3: 2 servers and 2 idle GPUs), and the node's throughput is
``per-server throughput x servers_per_node``. A server larger than a node occupies
``ceil(gpus_per_server / gpus_per_node)`` whole nodes, so the per-node figure is its throughput
divided by that node count. This assumes replicas do not interfere (the usual, unmeasured,
assumption behind per-GPU numbers too); the report says so.
"""

from __future__ import annotations

import math
from typing import Literal

Normalisation = Literal["gpu", "node", "server"]


def servers_per_node(gpus_per_node: int, gpus_per_server: int) -> int:
    """How many whole servers fit on one node (0 when one server spans several nodes)."""
    if gpus_per_node <= 0 or gpus_per_server <= 0:
        raise ValueError(f"GPU counts must be positive (node {gpus_per_node}, server {gpus_per_server})")
    return gpus_per_node // gpus_per_server


def nodes_per_server(gpus_per_node: int, gpus_per_server: int) -> int:
    return max(1, math.ceil(gpus_per_server / gpus_per_node))


def node_factor(gpus_per_node: int, gpus_per_server: int) -> float:
    """Multiply a per-server figure by this to get the per-node figure."""
    spn = servers_per_node(gpus_per_node, gpus_per_server)
    if spn >= 1:
        return float(spn)
    return 1.0 / nodes_per_server(gpus_per_node, gpus_per_server)


def per_node(per_server: float, gpus_per_node: int, gpus_per_server: int) -> float:
    return per_server * node_factor(gpus_per_node, gpus_per_server)


def per_gpu(per_server: float, gpus_per_server: int) -> float:
    if gpus_per_server <= 0:
        raise ValueError(f"gpus_per_server must be positive, got {gpus_per_server}")
    return per_server / gpus_per_server


def normalise(per_server: float, how: Normalisation, gpus_per_server: int,
              gpus_per_node: int | None) -> float | None:
    """A per-server figure in the requested normalisation (None: per node with unknown node size)."""
    if how == "server":
        return per_server
    if how == "gpu":
        return per_gpu(per_server, gpus_per_server)
    if gpus_per_node is None:
        return None
    return per_node(per_server, gpus_per_node, gpus_per_server)
