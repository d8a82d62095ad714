"""Per-role normalisation of disaggregated deployments, pinned against figures computed by hand, and the
aggregated-vs-disaggregated comparison at equal GPU count."""

from __future__ import annotations

import pytest

from infx.analysis import perrole
from infx.analysis.aggdisagg import compare_agg_disagg
from infx.analysis.dataset import ArmKey, Measured, WorkloadKey
from infx.results.store.reads import Figures


# 1 prefill worker x TP=4 and 2 decode workers x TP=8: 4 prefill GPUs, 16 decode GPUs, 20 in all.
# Measured: 10,000 total tok/s of which 2,000 output (8,000 input).
def test_per_gpu_by_role_hand_computed() -> None:
    assert perrole.per_gpu(10_000, "total", 4, 16) == 500.0  # 10000 / 20
    assert perrole.per_gpu(2_000, "output", 4, 16) == 125.0  # 2000 / 16
    assert perrole.per_gpu(8_000, "input", 4, 16) == 2_000.0  # 8000 / 4


def test_per_node_places_pools_on_their_own_nodes() -> None:
    assert perrole.deployment_nodes(4, 16, 8) == 3  # ceil(4/8) + ceil(16/8) = 1 + 2
    assert perrole.per_node(10_000, 4, 16, 8) == pytest.approx(3_333.333, rel=1e-6)
    assert perrole.deployment_nodes(1, 1, 1) == 2  # the CPU deployment: one device per worker


def test_zero_gpus_is_an_error() -> None:
    with pytest.raises(ValueError):
        perrole.per_gpu(1.0, "input", 0, 8)


W = WorkloadKey("m", "fp4", "b200", "vllm", "fixed-seq-len", 1024, 1024)
WD = WorkloadKey("m", "fp4", "b200", "dynamo-vllm", "fixed-seq-len", 1024, 1024)


def meas(w: WorkloadKey, topo: str, gpus: int, conc: int, inter: float, total: float, output: float,
         pg: int | None = None, dg: int | None = None) -> Measured:
    return Measured("r", f"{topo}_{conc}", w, ArmKey(topo, "none", "none"), "b200-multinode", "img", conc, gpus, 8,
                    None, Figures(inter, inter * 0.8, output, total, 100.0, 150.0, 200.0, 1000 / inter, 1000 / inter,
                                  1100 / inter, 1200 / inter, 5000.0, 6000.0, 1.0, None),
                    prefill_gpus=pg, decode_gpus=dg)


def test_measured_normalises_disagg_per_role() -> None:
    m = meas(WD, "1xP(TP=4)+2xD(TP=8)", 20, 64, 20, 10_000, 2_000, 4, 16)
    assert m.disagg
    assert m.throughput("total", "gpu") == 500.0
    assert m.throughput("output", "gpu") == 125.0
    assert m.throughput("total", "node") == pytest.approx(10_000 / 3)
    assert m.throughput("total", "server") == 10_000
    agg = meas(W, "TP=8", 8, 64, 20, 8_000, 1_600)
    assert not agg.disagg and agg.throughput("output", "gpu") == 200.0  # single server: / all GPUs


def test_agg_vs_disagg_pairs_equal_gpu_counts_across_frameworks() -> None:
    # disagg: 1xP(TP=4)+1xD(TP=4) = 8 GPUs; aggregated TP=8 (8 GPUs) and TP=4 (4 GPUs, no partner)
    dis = [meas(WD, "1xP(TP=4)+1xD(TP=4)", 8, c, i, t, t / 5, 4, 4) for c, i, t in ((64, 10, 8000), (8, 40, 2400))]
    tp8 = [meas(W, "TP=8", 8, c, i, t, t / 5) for c, i, t in ((64, 12, 6400), (8, 50, 1600))]
    tp4 = [meas(W, "TP=4", 4, c, i, t, t / 5) for c, i, t in ((64, 12, 3200), (8, 50, 800))]
    cs = compare_agg_disagg(dis + tp8 + tp4, "r", norm="gpu", at=[20.0])
    (c,) = cs.comparisons
    assert "TP=8 [vllm]" in c.a_label and "disagg" in c.b_label and "dynamo-vllm" in c.b_label
    # at 20 tok/s/user: step frontiers hold the value of the next point at higher interactivity
    # TP=8: 1600/8 = 200 /GPU; disagg: 2400/8 = 300 /GPU
    (r,) = [r for r in c.ladder if r.x == 20.0]
    assert (r.a, r.b) == (200.0, 300.0)
    assert not any("TP=4" in x.a_label for x in cs.comparisons)


def test_agg_vs_disagg_says_when_no_equal_gpu_arm() -> None:
    dis = [meas(WD, "1xP(TP=4)+1xD(TP=4)", 8, 64, 10, 8000, 1600, 4, 4)]
    tp4 = [meas(W, "TP=4", 4, 64, 12, 3200, 640)]
    cs = compare_agg_disagg(dis + tp4, "r", norm="gpu")
    assert cs.comparisons == [] and "no aggregated arm with 8 GPU(s)" in cs.notes[0]
