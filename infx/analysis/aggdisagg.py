"""Aggregated against disaggregated deployments of the same workload at equal GPU count.

InferenceX puts a model's aggregated (``vllm``, ``dynamo-vllm`` with an empty pool) and disaggregated
(prefill/decode) configurations side by side. Here a pair is formed when both serve the same model,
precision, hardware, scenario and sequence lengths (the framework may differ: ``vllm`` vs ``dynamo-vllm``)
and the aggregated server uses exactly as many GPUs as the disaggregated deployment (prefill + decode).
Per-GPU figures follow :mod:`infx.analysis.perrole` (total / all GPUs, output / decode GPUs).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from infx.analysis.compare import Comparison, ComparisonSet, _frontier_pair
from infx.analysis.dataset import (
    ArmKey,
    ArmSeries,
    Measured,
    WorkloadKey,
    norm_of,
    require_nodes,
    series,
    x_metric_of,
    y_metric_of,
)


def _family(w: WorkloadKey) -> WorkloadKey:
    return w._replace(framework="*")


def compare_agg_disagg(measured: Sequence[Measured], run_id: str, *, x_metric: str = "interactivity",
                       y_metric: str = "total", norm: str = "gpu", at: Sequence[float] | None = None,
                       ladder_points: int = 10, margin: float = 0.05) -> ComparisonSet:
    from infx.analysis.dataset import NORM_UNITS

    pts = [m for m in measured if m.run_id == run_id]
    if norm == "node":
        require_nodes(pts)
    # one workload family across frameworks: re-key the points, keep the framework in the arm label
    rekeyed = [replace(m, workload=_family(m.workload),
                       arm=ArmKey(f"{m.arm.topology} [{m.workload.framework}{' disagg' if m.disagg else ''}]",
                                  m.arm.spec_decoding, m.arm.kv_offloading)) for m in pts]
    notes: list[str] = []
    out: list[Comparison] = []
    by_family: dict[WorkloadKey, list[ArmSeries]] = defaultdict(list)
    for workload, arms in series(rekeyed, x_metric=x_metric_of(x_metric), y_metric=y_metric_of(y_metric),
                                 norm=norm_of(norm)).items():
        by_family[workload].extend(arms)
    for workload, arms in by_family.items():
        agg = [a for a in arms if not a.points[0].disagg]
        dis = [a for a in arms if a.points[0].disagg]
        for d in dis:
            gpus = d.points[0].gpus_per_server
            same = [a for a in agg if a.points[0].gpus_per_server == gpus]
            if not same:
                notes.append(f"{workload.label}: no aggregated arm with {gpus} GPU(s) to set against {d.label} "
                             "(aggregated: "
                             f"{', '.join(f'{a.label} {a.points[0].gpus_per_server} GPU(s)' for a in agg) or 'none'})")
                continue
            for a in same:
                out.append(_frontier_pair(a, d, at=at, ladder_points=ladder_points, margin=margin))
        if not dis:
            notes.append(f"{workload.label}: no disaggregated arm in run {run_id}")
    return ComparisonSet(title=f"aggregated vs disaggregated at equal GPU count, run {run_id} ({NORM_UNITS[norm]})",
                         norm=norm, comparisons=out, notes=notes)
