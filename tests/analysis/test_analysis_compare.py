from __future__ import annotations

import math

import pytest

from infx.analysis.compare import compare_arms, compare_frontiers, compare_runs
from infx.analysis.dataset import (
    ArmKey,
    Measured,
    WorkloadKey,
    load_measured,
    match_arm,
)
from infx.analysis.frontier import Direction, StepFrontier
from infx.diagnostics import InfxError
from infx.results.layout import ResultsDir
from infx.results.store import Store
from infx.results.store.reads import Figures

W = WorkloadKey("m", "fp4", "mi355x", "vllm", "agentic-coding", None, None)


def meas(run: str, tp: int, conc: int, inter: float, total_per_server: float, gpn: int | None = 8) -> Measured:
    return Measured(run, f"m_tp{tp}_c{conc}", W, ArmKey(f"TP={tp}", "none", "none"), "cluster:x", "img", conc, tp,
                    gpn, None, Figures(inter, inter * 0.8, total_per_server / 9, total_per_server, 100.0, 150.0,
                                       200.0, 1000 / inter, 1000 / inter, 1100 / inter, 1200 / inter, 5000.0, 6000.0,
                                       1.0, None))


# Hand-made arms, per node (8-GPU nodes):
# TP=2 (4 servers/node): (10 tok/s/user, 4000/node) (20, 2400) (40, 400)
# TP=4 (2 servers/node): (15, 2800) (30, 2000) (60, 600)
TP2 = [meas("r", 2, 64, 10, 1000), meas("r", 2, 16, 20, 600), meas("r", 2, 1, 40, 100)]
TP4 = [meas("r", 4, 64, 15, 1400), meas("r", 4, 16, 30, 1000), meas("r", 4, 1, 60, 300)]


def test_crossover_detected_between_step_frontiers() -> None:
    cs = compare_arms(TP2 + TP4, "r", "tp=2", "tp=4", norm="node", at=[15, 20, 25, 30, 40])
    (c,) = cs.comparisons
    assert (c.a_label, c.b_label) == ("TP=2", "TP=4")
    assert c.overlap == (15, 40)
    # at 15 exactly TP=4's c64 point (2800) counts; just above it TP=4 only has its 30 tok/s/user point
    assert [e.ratio for e in c.ladder] == pytest.approx([2400 / 2800, 2400 / 2000, 400 / 2000, 400 / 2000, 400 / 600])
    assert [(r.lo, r.hi, r.higher) for r in c.ranges] == [(15, 20, "a"), (20, 40, "b")]
    assert [(x.lo, x.before, x.after) for x in c.crossovers] == [(20, "a", "b")]
    # per GPU the ratios are the same here: both arms pack an 8-GPU node exactly
    per_gpu = compare_arms(TP2 + TP4, "r", "tp=2", "tp=4", norm="gpu", at=[20]).comparisons[0]
    assert per_gpu.ladder[0].a == 600 / 2 and per_gpu.ladder[0].b == 1000 / 4


def test_crossover_where_winner_changes() -> None:
    a = StepFrontier.build([10, 20, 40], [4000, 2400, 400])
    b = StepFrontier.build([5, 15, 30, 60], [3000, 2000, 1000, 600])
    c = compare_frontiers(a, b, a_label="TP=2", b_label="TP=4", y_label="total tok/s per node")
    assert c.overlap == (10, 40)
    # (10,15]: 2400 vs 2000 -> a; (15,20]: 2400 vs 1000 -> a; (20,30]: 400 vs 1000 -> b; (30,40]: 400 vs 600 -> b
    assert [(r.lo, r.hi, r.higher) for r in c.ranges] == [(10, 20, "a"), (20, 40, "b")]
    assert c.ranges[0].ratio_min == pytest.approx(1.2) and c.ranges[0].ratio_max == pytest.approx(2.4)
    (x,) = c.crossovers
    assert (x.lo, x.hi, x.before, x.after) == (20, 20, "a", "b")
    assert "point estimates cross at 20" in x.text
    assert c.ranges[0].text == ("point estimates only: TP=2's total tok/s per node is 1.20x-2.40x TP=4's below "
                                "20.0 tok/s/user (no interval; see the verdicts)")
    assert c.ranges[1].text.startswith("point estimates only: TP=4's total tok/s per node is 1.50x-2.50x TP=2's "
                                       "above 20.0")
    assert all(r.point_estimates_only for r in c.ranges) and "winner" not in c.model_dump_json()
    # without intervals (one trial, no records) no winner is named
    assert all(v.decision == "inconclusive" for v in c.targets) and "no interval" in c.verdict[0]


def test_comparison_refuses_to_extrapolate() -> None:
    a = StepFrontier.build([10, 20, 40], [4000, 2400, 400])
    b = StepFrontier.build([15, 30, 60], [2800, 2000, 600])
    c = compare_frontiers(a, b, a_label="TP=2", b_label="TP=4", at=[5, 12, 50])
    e5, e12, e50 = c.ladder
    assert (e5.a, e5.b, e5.ratio) == (None, None, None)
    assert "outside its measured range 10.0-40.0" in e5.note and "TP=4" in e5.note
    assert e12.a == 2400 and e12.b is None and e12.ratio is None and "no value for TP=4" in e12.note
    assert e50.a is None and e50.b == 600 and "no value for TP=2" in e50.note
    assert any("only TP=4 was measured above 40.0" in v for v in c.verdict)
    assert any("only TP=2 was measured below 15.0" in v for v in c.verdict)


def test_disjoint_ranges_give_no_verdict() -> None:
    a = StepFrontier.build([1, 2], [10, 5])
    b = StepFrontier.build([5, 6], [10, 5])
    c = compare_frontiers(a, b, a_label="A", b_label="B")
    assert c.overlap is None and c.ranges == [] and c.crossovers == []
    assert c.verdict[0].startswith("no comparison")
    assert all(e.ratio is None for e in c.ladder)


def test_no_fixed_tie_band() -> None:
    # 1 % apart: the point estimates differ (no 2 % tie band any more); with no interval the verdict
    # is inconclusive, with tight intervals across trials it is "equivalent within 5 %"
    a = StepFrontier.build([10, 20], [1000, 500])
    b = StepFrontier.build([10, 20], [1010, 505])
    c = compare_frontiers(a, b, a_label="A", b_label="B")
    assert [r.higher for r in c.ranges] == ["b"]
    assert {v.decision for v in c.targets} == {"inconclusive"}
    tight = dict(rel_se=[0.005, 0.005], df=[4, 4], trials=[5, 5])
    a = StepFrontier.build([10, 20], [1000, 500], **tight)
    b = StepFrontier.build([10, 20], [1010, 505], **tight)
    c = compare_frontiers(a, b, a_label="A", b_label="B")
    assert {v.decision for v in c.targets} == {"equivalent"} and "equivalent within ±5%" in c.verdict[0]


def test_default_ladder_spans_both_measured_ranges() -> None:
    a = StepFrontier.build([10, 20, 40], [4000, 2400, 400])
    b = StepFrontier.build([15, 30, 60], [2800, 2000, 600])
    c = compare_frontiers(a, b, a_label="A", b_label="B", ladder_points=6)
    assert [e.x for e in c.ladder] == pytest.approx([10, 20, 30, 40, 50, 60])


def test_per_node_needs_gpus_per_node() -> None:
    with pytest.raises(InfxError, match="GPUs per node unknown"):
        compare_arms([meas("r", 2, 1, 10, 100, gpn=None)], "r", norm="node")
    cs = compare_arms([meas("r", 2, 1, 10, 100, gpn=None), meas("r", 4, 1, 12, 150, gpn=None)], "r", norm="gpu")
    assert len(cs.comparisons) == 1


def test_arm_selectors() -> None:
    assert match_arm("tp=2", ArmKey("TP=2", "mtp", "none"))
    assert match_arm("TP=8 ep=8", ArmKey("TP=8 EP=8 DP-attn", "none", "none"))
    assert not match_arm("tp=2", ArmKey("TP=4", "none", "none"))
    cs = compare_arms(TP2 + TP4, "r", "tp=3", "tp=4")
    assert cs.comparisons == [] and "no arm matches 'tp=3'" in cs.notes[0]


def test_seed_scenario_end_to_end(seed_results: ResultsDir) -> None:
    with Store(seed_results.db_path) as st:
        st.ingest_dir(seed_results.root)
        measured = load_measured(st)
    assert {m.gpus_per_node for m in measured} == {8}  # from the manifests
    arms = compare_arms(measured, "pr-1234", norm="node")
    (c,) = arms.comparisons
    assert (c.a_label, c.b_label) == ("TP=2", "TP=4")
    assert [r.higher for r in c.ranges][0] == "a" and c.ranges[-1].higher == "b"
    assert len(c.crossovers) == 1 and 15 < c.crossovers[0].lo < 30
    runs = compare_runs(measured, "pr-1234", "baseline", norm="node")
    rc, best = runs.comparisons
    assert rc.a_label == "TP=4 (pr-1234)" and rc.b_label == "TP=4 (baseline)"
    # the run's best deployment (envelope of TP=2 and TP=4) against the baseline's
    assert best.a_label == "best of TP=2, TP=4 (pr-1234)" and best.b_label == "best of TP=4 (baseline)"
    assert best.a_range[0] < rc.a_range[0]  # TP=2 reaches lower interactivity than TP=4
    assert any("TP=2 is new in pr-1234" in n for n in runs.notes)


def test_bulk_membership_matches_per_arm_frontiers() -> None:
    from infx.analysis.dataset import frontier_membership, series

    pts = TP2 + TP4 + [meas("r", 4, 32, 16, 900), meas("r", 3, 8, 25, 700)]
    for norm in ("gpu", "node", "server"):
        mask = frontier_membership(pts, norm=norm)
        expected = set()
        for arms in series(pts, norm=norm).values():
            for s in arms:
                expected |= {s.points[i].point_id for i in s.frontier().members.tolist()}
        assert {m.point_id for m, k in zip(pts, mask, strict=True) if k} == expected


def test_per_node_differs_from_per_gpu_when_servers_do_not_pack() -> None:
    # TP=3 on an 8-GPU node: 2 servers (2 GPUs idle); per GPU it looks better than per node
    tp3 = [meas("r", 3, 16, 20, 900), meas("r", 3, 1, 40, 150)]
    tp4 = [meas("r", 4, 16, 20, 1150), meas("r", 4, 1, 40, 200)]
    gpu = compare_arms(tp3 + tp4, "r", "tp=3", "tp=4", norm="gpu", at=[20]).comparisons[0]
    node = compare_arms(tp3 + tp4, "r", "tp=3", "tp=4", norm="node", at=[20]).comparisons[0]
    assert gpu.ladder[0].ratio == pytest.approx((900 / 3) / (1150 / 4))  # > 1: TP=3 wins per GPU
    assert node.ladder[0].ratio == pytest.approx((900 * 2) / (1150 * 2))  # < 1: TP=4 wins per node


def test_gpus_per_node_from_runners_yaml_and_override(seed_results: ResultsDir, tmp_path) -> None:
    from infx.analysis.dataset import gpus_per_node_resolver

    runners = tmp_path / "runners.yaml"
    runners.write_text("labels:\n  cluster:x:\n    - x_0\nhardware:\n  cluster:x:\n"
                       "    available-cpu-dram-mib: 1000\n    gpus-per-node: 4\n")
    with Store(seed_results.db_path) as st:
        st.ingest_dir(seed_results.root)
        resolve = gpus_per_node_resolver(st, runners_path=runners)
        assert resolve("pr-1234", "cluster:mi355x-amds") == 8  # the manifest's snapshot wins
        assert resolve("pr-1234", "cluster:x") == 4  # else runners.yaml
        assert resolve("pr-1234", "elsewhere") is None
        assert gpus_per_node_resolver(st, override=2)("pr-1234", "cluster:mi355x-amds") == 2


def test_zero_on_both_sides_is_a_tie() -> None:
    a = StepFrontier.build([10, 20], [0, 0])
    b = StepFrontier.build([10, 20], [0, 0])
    c = compare_frontiers(a, b, a_label="A", b_label="B", at=[15])
    assert [r.higher for r in c.ranges] == ["tie"] and c.crossovers == []
    assert c.ladder[0].ratio is None and "both are 0" in c.ladder[0].note


def test_zero_on_one_side_loses_with_unbounded_ratio() -> None:
    # B's frontier is 0 throughout: A wins, ratio unbounded (no division by the ratio)
    a = StepFrontier.build([10, 20], [1000, 500])
    b = StepFrontier.build([10, 20], [0, 0])
    c = compare_frontiers(a, b, a_label="A", b_label="B", at=[15])
    assert [(r.higher, r.ratio_min) for r in c.ranges] == [("a", math.inf)]
    assert "A wins outright over B" in c.verdict[0] and "unbounded" in c.verdict[0]
    assert c.targets[0].decision == "a"
    assert c.ladder[0].ratio is None and "ratio unbounded: B is 0" in c.ladder[0].note
    # A's frontier is 0 throughout: B wins (before the fix: "a wins" at ratio inf)
    c = compare_frontiers(b, a, a_label="B0", b_label="A1", at=[15])
    assert [(r.higher, r.ratio_min) for r in c.ranges] == [("b", math.inf)]
    assert c.ladder[0].ratio == 0


def test_zero_with_lower_is_better_axis() -> None:
    # lower y wins: a y of 0 is the unbounded winner
    a = StepFrontier.build([10, 20], [0, 0], y_dir=Direction.MIN)
    b = StepFrontier.build([10, 20], [5, 5], y_dir=Direction.MIN)
    c = compare_frontiers(a, b, a_label="A", b_label="B")
    assert [(r.higher, r.ratio_max) for r in c.ranges] == [("a", math.inf)]
    c = compare_frontiers(b, a, a_label="B", b_label="A")
    assert [(r.higher, r.ratio_max) for r in c.ranges] == [("b", math.inf)]


def test_zero_in_part_of_the_range_keeps_finite_ratios_elsewhere() -> None:
    a = StepFrontier.build([10, 20, 40], [4000, 2400, 400])
    b = StepFrontier.build([10, 20, 40], [2000, 1200, 0])
    c = compare_frontiers(a, b, a_label="A", b_label="B")
    (rg,) = c.ranges
    assert rg.higher == "a" and rg.ratio_min == pytest.approx(2.0) and math.isinf(rg.ratio_max)
    assert "2.00x or more" in rg.text


def _est(rel: float, n: int) -> dict:
    return dict(rel_se=[rel] * 3, df=[n - 1] * 3, trials=[n] * 3)


def test_noise_aware_verdicts_winner_equivalent_inconclusive() -> None:
    xs = [10, 20, 40]
    base = [4000.0, 2400.0, 400.0]
    b = StepFrontier.build(xs, base, **_est(0.01, 3))
    # 30 % better with 1 % standard errors: A better, and the interval covers the true 1.30
    a = StepFrontier.build(xs, [y * 1.3 for y in base], **_est(0.01, 3))
    c = compare_frontiers(a, b, a_label="A", b_label="B", at=[12, 15])
    assert [v.decision for v in c.targets] == ["a", "a"]
    assert all(v.ratio_lo < 1.3 < v.ratio_hi for v in c.targets)
    assert c.verdict[0].startswith("at 12.0-15.0 tok/s/user (2 targets): A better by 30.0% [")
    # on the steep segment (2400 -> 400 over 20-40) a 5 % shift of interactivity halves the lead: no win
    steep = compare_frontiers(a, b, a_label="A", b_label="B", at=[30]).targets[0]
    assert steep.decision == "inconclusive" and "shifts by ±5%" in steep.text
    # 3 % better, however tight the intervals, is a difference inside the margin: equivalent, never a win
    a3 = StepFrontier.build(xs, [y * 1.03 for y in base], **_est(0.002, 5))
    small = compare_frontiers(a3, StepFrontier.build(xs, base, **_est(0.002, 5)), a_label="A", b_label="B", at=[12])
    assert small.targets[0].decision == "equivalent"
    # B better when reversed
    c = compare_frontiers(b, a, a_label="B", b_label="A", at=[15])
    assert c.targets[0].decision == "b" and "A better by 30.0%" in c.targets[0].text
    # 3 % apart with 10 % standard errors: inconclusive, and it says how many more trials
    a = StepFrontier.build(xs, [y * 1.03 for y in base], **_est(0.10, 3))
    c = compare_frontiers(a, StepFrontier.build(xs, base, **_est(0.10, 3)), a_label="A", b_label="B", at=[15])
    (v,) = c.targets
    assert v.decision == "inconclusive" and v.trials_needed and v.trials_needed > 0
    assert f"{v.trials_needed} more trial(s) per point would decide" in v.text
    # a single trial's within-run interval never names a winner, however tight
    a = StepFrontier.build(xs, [y * 1.3 for y in base], rel_se=[0.001] * 3, trials=[1] * 3)
    c = compare_frontiers(a, StepFrontier.build(xs, base, rel_se=[0.001] * 3, trials=[1] * 3),
                          a_label="A", b_label="B", at=[15])
    assert c.targets[0].decision == "inconclusive" and "within-run" in c.targets[0].text


def test_interpolated_verdict_does_not_flip_on_a_small_interactivity_shift() -> None:
    # The same arm measured twice; run 2's points sit 3 % higher in interactivity. The step
    # frontiers then differ by up to 2x between breakpoints; the interpolated ratio stays near 1.
    xs = [10.0, 20.0, 40.0]
    ys = [4000.0, 2400.0, 400.0]
    one = StepFrontier.build(xs, ys, **_est(0.03, 3))
    two = StepFrontier.build([x * 1.03 for x in xs], ys, **_est(0.03, 3))
    c = compare_frontiers(two, one, a_label="R2", b_label="R1", at=[15, 20.3, 30])
    steps = [e.ratio for e in c.ladder]
    assert max(steps) > 1.5  # the step functions jump
    assert all(v.decision in ("equivalent", "inconclusive") for v in c.targets)
    assert all(abs(v.ratio - 1) < 0.1 for v in c.targets)


def test_margin_validation() -> None:
    a = StepFrontier.build([10, 20], [1000, 500])
    with pytest.raises(ValueError, match="margin"):
        compare_frontiers(a, a, a_label="A", b_label="B", margin=-0.05)


def test_compare_cli_rejects_a_negative_margin(seed_results: ResultsDir) -> None:
    import typer
    from typer.testing import CliRunner

    from infx.report.cli import register

    app = typer.Typer()
    register(app)
    r = CliRunner().invoke(app, ["compare", str(seed_results.root), "--margin", "-0.05"])
    assert r.exit_code == 2 and "--margin must be a fraction" in r.output and "Traceback" not in r.output


def test_compare_prints_max_users_at_tier(seed_results: ResultsDir) -> None:
    import json as _json

    import typer
    from typer.testing import CliRunner

    from infx.loadgen.search import Probe, search_max_concurrency
    from infx.report.cli import register

    res = search_max_concurrency(lambda c: Probe(conc=c, met=c <= 12), tier="interactive",
                                 slo={"ttft_p95_ms": 500.0}, start=1, limit=64)
    d = seed_results.root / "pr-1234" / "search"
    d.mkdir()
    (d / "abc.json").write_text(_json.dumps({"template_point": "tp2-c1", **res.model_dump(mode="json")}))
    app = typer.Typer()
    register(app)
    r = CliRunner().invoke(app, ["compare", str(seed_results.root), "--run", "pr-1234", "--per", "node"])
    assert r.exit_code == 0, r.output
    assert "pr-1234 tp2-c1: max users at tier 'interactive': 12 (probes bracket [12, 13)" in r.output


def test_run_to_run_drift_widens_matched_intervals() -> None:
    from infx.analysis.compare import drift_variance

    uniform = [(float(c), (125.0 * c, 0.01, 2.0, 3.0), (100.0 * c, 0.01, 2.0, 3.0)) for c in (1, 2, 4, 8)]
    assert drift_variance(uniform) == pytest.approx(0.0)  # a real, uniform 25 %: no drift
    erratic = [(float(c), (y * c, 0.01, 2.0, 3.0), (100.0 * c, 0.01, 2.0, 3.0))
               for c, y in zip((1, 2, 4, 8, 16), (102.0, 131.0, 109.0, 91.0, 160.0), strict=True)]
    tau2 = drift_variance(erratic)
    assert tau2 > 0.01
    a = StepFrontier.build([10.0, 20.0], [1.0, 1.0])
    c = compare_frontiers(a, a, a_label="R2", b_label="R1", by_conc=erratic, drift=True)
    assert all(v.decision == "inconclusive" for v in c.by_conc) and any("run-to-run drift" in v for v in c.verdict)
    assert c.targets == []  # matched by concurrency: no interactivity-target verdicts
    c = compare_frontiers(a, a, a_label="R2", b_label="R1", by_conc=uniform, drift=True)
    assert all(v.decision == "a" for v in c.by_conc)


def test_energy_verdicts_read_the_energy_interval() -> None:
    """`infx compare --metric energy`: tokens per joule carry the per-trial interval of J/token, so
    two arms of the same energy are never a winner, and a 30% difference with tight intervals is."""
    import dataclasses
    import struct

    from infx.analysis.compare import compare_arms
    from infx.analysis.dataset import ArmKey, Measured, WorkloadKey

    wl = WorkloadKey("m", "bf16", "h100", "vllm", "fixed-seq-len", 1024, 1024)
    nan = float("nan")

    def pts(topo: str, j: float, rel: float) -> list[Measured]:
        # energy's interval only (3 trials, df 2): bounds 1 -+ rel of the J/token
        ci = struct.pack("<Bf10f", 0, 2.0, *(nan,) * 8, 1 - rel, 1 + rel)
        out = []
        for c, inter in ((1, 100.0), (4, 60.0), (16, 30.0)):
            m = Measured("r", f"{topo}{c}", wl, ArmKey(topo, "none", "none"), "h100-cw", "img", c, 1, 8, None,
                         Figures(inter, inter, 1000.0 * c ** 0.5, 2000.0 * c ** 0.5, *(None,) * 11),
                         joules_per_output_token=j / c ** 0.3, trials=3, ci=ci)
            out.append(m)
        return out

    same = pts("TP=1", 1.0, 0.04) + [dataclasses.replace(m, arm=ArmKey("TP=2", "none", "none"),
                                                         point_id="b" + m.point_id) for m in pts("TP=1", 1.0, 0.04)]
    cs = compare_arms(same, "r", "tp=1", "tp=2", y_metric="energy", norm="gpu")
    decisions = {t.decision for c in cs.comparisons for t in c.targets}
    assert decisions and decisions <= {"equivalent", "inconclusive"}, decisions
    better = pts("TP=1", 1.0, 0.01) + pts("TP=2", 1.3, 0.01)  # TP=2 needs 30% more J/token
    cs = compare_arms(better, "r", "tp=1", "tp=2", y_metric="energy", norm="gpu")
    targets = [t for c in cs.comparisons for t in c.targets]
    wins = [t for t in targets if t.decision == "a"]  # (a target at a frontier's edge stays inconclusive)
    assert wins and {t.decision for t in targets} <= {"a", "inconclusive"}, [t.text for t in targets]
    assert all(t.ratio_lo is not None and t.ratio_lo < 1.3 < t.ratio_hi for t in wins)  # type: ignore[operator]
    assert "in output tokens per joule" in wins[0].text and "3 trials" in wins[0].text
