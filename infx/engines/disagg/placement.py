"""Where each role of a deployment runs inside its Slurm allocation.

The allocation holds every node the worker pools take, each pool on nodes of its own (as InferenceX
runs disaggregated rows, and as :func:`infx.sweep.deployment.allocation` sizes the ``sbatch``): the
prefill pool from node 0, the decode pool on the nodes after it. A pool of ``count`` instances of ``g``
GPUs takes ``ceil(count x g / gpus_per_node)`` nodes and runs as one step of ``count`` tasks with ``g``
GPUs each (an instance larger than a node: one task per node, all of that node's GPUs). A job without GPUs
but with a node per pool (a CPU fleet that declares ``nodes`` in runners.yaml) puts each worker pool on a
node of its own the same way. Routers, frontends and infrastructure run on node 0. Steps are pinned with
``srun --relative``: the node offset inside the job's node list.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from infx.engines.disagg.model import Deployment


class RolePlacement(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    first_node: int = 0  # srun --relative
    nodes: int = 1
    ntasks: int = 1
    gpus_per_task: int = 0

    def srun_args(self) -> list[str]:
        args = [f"--nodes={self.nodes}", f"--relative={self.first_node}", f"--ntasks={self.ntasks}"]
        if self.nodes > 1:
            args.append(f"--ntasks-per-node={math.ceil(self.ntasks / self.nodes)}")
        if self.gpus_per_task:
            args.append(f"--gpus-per-task={self.gpus_per_task}")
        return args


def pool_nodes(pool_gpus: int, gpus_per_node: int) -> int:
    """Nodes one worker pool takes: pools never share a node. The one rule behind both the ``sbatch`` size
    (:func:`infx.sweep.deployment.allocation`, from the point) and :func:`place` (from the deployment)."""
    return math.ceil(pool_gpus / gpus_per_node)


class PlacementError(ValueError):
    def __init__(self, role: str, message: str):
        self.role = role
        super().__init__(message)


def place(deployment: Deployment, gpus_per_node: int | None, job_nodes: int | None = None) -> dict[str, RolePlacement]:
    """Role name -> placement. ``gpus_per_node`` None (no GPUs allocated): every role on node 0.
    Raises :class:`PlacementError` when the pools need more nodes than the job has."""
    out: dict[str, RolePlacement] = {}
    cursor = 0
    if not gpus_per_node and job_nodes is not None and job_nodes > 1:  # CPU workers: a node per pool
        for role in deployment.roles:
            if role.kind in ("prefill", "decode") and cursor < job_nodes:
                out[role.name] = RolePlacement(first_node=cursor, ntasks=role.count)
                cursor += 1
            else:
                out[role.name] = RolePlacement()
        return out
    for role in deployment.roles:
        if role.kind not in ("prefill", "decode") or not role.gpus or not gpus_per_node:
            out[role.name] = RolePlacement()
            continue
        if role.gpus_per_instance > gpus_per_node and role.gpus_per_instance % gpus_per_node:
            raise PlacementError(role.name, f"an instance of {role.gpus_per_instance} GPUs does not split over "
                                            f"nodes of {gpus_per_node}")
        nodes = pool_nodes(role.gpus, gpus_per_node)
        if role.gpus_per_instance > gpus_per_node:  # an instance spans nodes: one task (rank) per node
            out[role.name] = RolePlacement(first_node=cursor, nodes=nodes, ntasks=nodes, gpus_per_task=gpus_per_node)
        else:
            out[role.name] = RolePlacement(first_node=cursor, nodes=nodes, ntasks=role.count,
                                           gpus_per_task=role.gpus_per_instance)
        cursor += nodes
    if job_nodes is not None and cursor > job_nodes:
        over = [r.name for r in deployment.roles if out[r.name].first_node + out[r.name].nodes > job_nodes]
        raise PlacementError(over[0], f"the worker pools take {cursor} node(s) of {gpus_per_node} GPUs; "
                                      f"the job has {job_nodes}")
    return out


def gpus_on_nodes(deployment: Deployment, placed: dict[str, RolePlacement], gpus_per_node: int) -> list[int]:
    """GPUs the deployment's roles use on each node of the job (node ``i`` of ``srun --relative``)."""
    total = max((p.first_node + p.nodes for p in placed.values()), default=1)
    used = [0] * total
    for role in deployment.roles:
        p = placed.get(role.name)
        if p is None or not p.gpus_per_task:
            continue
        left = role.gpus
        for j in range(p.nodes):
            k = min(gpus_per_node, left)
            used[p.first_node + j] += k
            left -= k
    return used
