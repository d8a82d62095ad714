"""The cross-hardware main view: envelopes per (hardware, framework, spec, agg/disagg, run) over every topology and
concurrency, in both axis directions; cost never $0; J/token only with valid power; never mixing runs."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from infx.analysis.costmodel import load_cost_model
from infx.analysis.dataset import ArmKey, Measured, WorkloadKey
from infx.analysis.frontier import Direction
from infx.analysis.mainview import Run, build_main_view, envelope_mask, group_frontier
from infx.results.store.reads import Figures


def meas(run: str, hw: str, fw: str, tp: int, conc: int, inter: float, total: float, *, runner: str | None = None,
         e2el_ms: float | None = None, joules: float | None = None, buffered: bool = False) -> Measured:
    wl = WorkloadKey("m", "fp8", hw, fw, "fixed-seq-len", 1024, 1024)
    return Measured(run, f"{hw}_{fw}_tp{tp}_c{conc}", wl, ArmKey(f"tp{tp}", "none", "none"), runner or f"{hw}-x",
                    "img", conc, tp, 8, None,
                    Figures(inter, inter, total / 2, total, 100.0, 150.0, 200.0 * conc, 1000 / inter, 1000 / inter,
                            1100 / inter, 1200 / inter, e2el_ms if e2el_ms is not None else 50_000.0 / inter,
                            6000.0, 1.0, None), joules_per_output_token=joules, buffered_stream=buffered)


def hand_points() -> list[Measured]:
    # h200 vllm, two topologies. per GPU: tp2 (x=100, 500) (x=50, 1000) (x=10, 1500); tp4 (x=80, 900) (x=40, 950)
    # (x=20, 1400): envelope (max x, max y) = tp2@100, tp4@80, tp2@50, tp4@20, tp2@10; tp4@40 (950 < 1000 at
    # x=50) is dominated by tp2@50.
    out = [meas("r1", "h200", "vllm", 2, c, x, y * 2) for c, x, y in ((1, 100, 500), (8, 50, 1000), (64, 10, 1500))]
    out += [meas("r1", "h200", "vllm", 4, c, x, y * 4) for c, x, y in ((2, 80, 900), (16, 40, 950), (32, 20, 1400))]
    return out


def brute(xs: list[float], ys: list[float], xd: Direction, yd: Direction) -> set[int]:
    keep = set()
    for i in range(len(xs)):
        a = (xs[i] * xd.sign, ys[i] * yd.sign)
        if any((xs[j] * xd.sign >= a[0] and ys[j] * yd.sign >= a[1] and (xs[j] * xd.sign, ys[j] * yd.sign) != a)
               for j in range(len(xs))):
            continue
        keep.add(i)
    return keep


def view_of(measured: list[Measured]):  # type: ignore[no-untyped-def]
    runs = sorted({m.measured_in for m in measured})
    return build_main_view(measured, view="test", runs=[Run(run_id=r, official=True) for r in runs],
                           model=load_cost_model(), sku_of=lambda runner: runner.split("-")[0])


def test_envelope_is_best_config_over_topologies_and_dominated_points_are_kept_off() -> None:
    v = view_of(hand_points())
    assert len(v.groups) == 1 and v.groups[0].label == "h200 vllm [r1]"
    on = envelope_mask(v, "interactivity", "tput_gpu_total")
    onset = {(v.points.parallelism[i], v.points.conc[i]) for i in np.nonzero(on)[0]}
    assert onset == {("TP2", 1), ("TP4", 2), ("TP2", 8), ("TP4", 32), ("TP2", 64)}
    # the dominated point is still in the view (drawn), only off the envelope
    assert ("TP4", 16) in set(zip(v.points.parallelism, v.points.conc, strict=True))
    f = group_frontier(v, 0, "interactivity", "tput_gpu_total")
    assert f.xs.tolist() == [10, 20, 50, 80, 100] and f.ys.tolist() == [1500, 1400, 1000, 900, 500]
    assert f.value_at(45) == 1000  # the best config at 45 tok/s/user or better: tp2 at 50


def test_envelope_both_axis_directions_match_brute_force() -> None:
    v = view_of(hand_points())
    for x, y in itertools.product(("interactivity", "e2el", "ttft"),
                                  ("tput_gpu_total", "usd_mtok_total:hyperscaler", "tput_gpu_output")):
        xd, yd = v.metric(x).direction, v.metric(y).direction
        xs = [float(a) for a in v.points.x[x]]  # type: ignore[arg-type]
        ys = [float(a) for a in v.points.y[y]]  # type: ignore[arg-type]
        got = set(np.nonzero(envelope_mask(v, x, y))[0].tolist())
        assert got == brute(xs, ys, xd, yd), (x, y)
    # min x (E2EL) with max y: the point with the lowest latency is always on it, the slowest only if best y
    assert v.metric("e2el").direction is Direction.MIN
    assert v.metric("usd_mtok_total:hyperscaler").direction is Direction.MIN


def test_four_envelopes_two_hardware_two_frameworks_and_runs_never_mixed() -> None:
    pts = []
    for hw, fw in itertools.product(("h200", "b200"), ("vllm", "sglang")):
        pts += [dataclasses.replace(m, workload=m.workload._replace(hardware=hw, framework=fw), runner=f"{hw}-x",
                                    point_id=f"{hw}{fw}{m.point_id}") for m in hand_points()]
    v = view_of(pts)
    assert sorted(g.label for g in v.groups) == ["b200 sglang [r1]", "b200 vllm [r1]", "h200 sglang [r1]",
                                                 "h200 vllm [r1]"]
    assert len(v.charts) == 1
    on = envelope_mask(v, "interactivity", "tput_gpu_total")
    assert on.sum() == 4 * 5
    # the same curve measured again by another run is its own envelope, never merged with r1's
    again = [dataclasses.replace(m, run_id="r2", point_id="again" + m.point_id) for m in hand_points()]
    v2 = view_of(hand_points() + again)
    assert sorted(g.label for g in v2.groups) == ["h200 vllm [r1]", "h200 vllm [r2]"]
    on2 = envelope_mask(v2, "interactivity", "tput_gpu_total")
    for gid in (0, 1):
        members = {v2.points.run_id[i] for i in np.nonzero(on2)[0] if v2.points.group[i] == gid}
        assert len(members) == 1


def test_not_priced_is_never_zero_and_j_per_token_needs_valid_power() -> None:
    pts = hand_points()
    pts[0] = dataclasses.replace(pts[0], joules_per_output_token=0.5)
    unknown = [dataclasses.replace(m, workload=m.workload._replace(hardware="zz9"), runner="zz9-x",
                                   point_id="zz" + m.point_id) for m in hand_points()]
    v = view_of(pts + unknown)
    g_unknown = next(g for g in v.groups if g.hardware == "zz9")
    assert set(g_unknown.not_priced) == set(v.tiers) and all(g_unknown.not_priced.values())
    ys = v.points.y["usd_mtok_total:hyperscaler"]
    for i, gid in enumerate(v.points.group):
        if gid == g_unknown.id:
            assert ys[i] is None  # not $0
        else:
            assert ys[i] is not None and ys[i] > 0
    assert v.metric("usd_mtok_total:hyperscaler").missing == 6
    j = v.points.y["j_per_tok_output"]
    assert [x for x in j if x is not None] == [0.5]
    assert v.metric("j_per_tok_output").missing == 11
    assert any("11 of 12 point(s) have no valid power" in n for n in v.notes)
    on = envelope_mask(v, "interactivity", "j_per_tok_output")
    assert on.sum() == 1


def test_cost_equals_the_formula_and_invalid_points_are_off_the_envelope() -> None:
    pts = hand_points()
    pts[0] = dataclasses.replace(pts[0], buffered_stream=True)
    v = view_of(pts)
    price = load_cost_model().skus["h200"].prices["hyperscaler"].value
    assert price is not None
    for i in range(len(pts)):
        tput = v.points.y["tput_gpu_total"][i]
        assert tput is not None
        assert v.points.y["usd_mtok_total:hyperscaler"][i] == price / (tput * 3600 / 1e6)
    assert v.points.invalid[0] is not None
    assert not envelope_mask(v, "interactivity", "tput_gpu_total")[0]
