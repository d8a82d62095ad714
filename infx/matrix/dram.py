"""Host-DRAM budget for agentic ``kv-offloading: dram`` points (spec 3.5).

``floor(min(available-cpu-dram-mib, 2_861_022) * 1_048_576 * dram-utilization * gpus_used
/ gpus-per-node / 1e9)`` in exact decimal arithmetic; 2,861,022 MiB is the 3 TB decimal cap.
"""

from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal

DRAM_CAP_MIB = 2_861_022
MIB = 1_048_576


class DramBudgetError(ValueError):
    """The point cannot be placed on the runner's nodes, or the runner lacks hardware facts."""


def dram_budget_gb(available_mib: int, gpus_per_node: int, utilization: float, gpus_used: int) -> int:
    """Worked values: (b300-nv 2_964_436 MiB, 8/node, u=0.8, 4 GPUs) -> 1199; 8 GPUs -> 2399."""
    value = (
        Decimal(min(available_mib, DRAM_CAP_MIB)) * MIB * Decimal(str(utilization)) * gpus_used
        / gpus_per_node / Decimal(10**9)
    )
    return int(value.to_integral_value(rounding=ROUND_FLOOR))


def single_node_gpus(tp: int, pp: int, pcp: int, gpus_per_node: int, runner: str) -> int:
    gpus = tp * pp * pcp
    if gpus > gpus_per_node:
        raise DramBudgetError(
            f"tp={tp} with pp={pp} and pcp-size={pcp} requires {gpus} GPUs and exceeds "
            f"gpus-per-node={gpus_per_node} for runner '{runner}'"
        )
    return gpus


def worker_gpus_per_node(replica_gpus: int, gpus_per_node: int, runner: str) -> int:
    """GPUs of one node a multinode replica occupies: a full node if it spans nodes."""
    if replica_gpus > gpus_per_node:
        if replica_gpus % gpus_per_node:
            raise DramBudgetError(
                f"a prefill replica of {replica_gpus} GPUs must be a multiple of gpus-per-node="
                f"{gpus_per_node} for runner '{runner}'"
            )
        return gpus_per_node
    if gpus_per_node % replica_gpus:
        raise DramBudgetError(
            f"a prefill replica of {replica_gpus} GPUs must divide gpus-per-node={gpus_per_node} "
            f"for runner '{runner}'"
        )
    return replica_gpus
