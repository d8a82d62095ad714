"""Concurrency headroom, CUDA-graph ceiling, eval coverage, placeholders, argv parsing."""

from __future__ import annotations

import pytest
from pfhelpers import hand_launch

from infx.preflight.checks import PlaceholderScan, concurrency_headroom, eval_coverage, graph_ceiling
from infx.preflight.gate import preflight_points
from infx.preflight.launchargs import engine_settings, parse_argv


def _settings(launch, point, cap=288e9):
    return engine_settings(launch.engine, launch.argv, launch.env, capacity_bytes=int(cap), point_tp=point.tp)


def test_parse_argv_forms():
    a = parse_argv(["python", "-m", "x", "--max_num_seqs", "64", "--enforce-eager", "--max-model-len=4096",
                    "-tp", "2", "--no-enable-prefix-caching", "--offset", "-1", "--flag"])
    assert a == {"max-num-seqs": "64", "enforce-eager": True, "max-model-len": "4096", "tensor-parallel-size": "2",
                 "enable-prefix-caching": False, "offset": "-1", "flag": True}
    assert parse_argv(["--x", "1", "--x", "2"])["x"] == "2"  # last wins, as argparse


def test_vllm_defaults_by_device_class():
    big = engine_settings("vllm", ["vllm", "serve", "m"], {}, capacity_bytes=int(288e9))
    assert big.max_num_seqs.value == 1024 and big.max_num_seqs.source == "default"
    assert big.max_num_batched_tokens.value == 16384
    small = engine_settings("vllm", ["vllm", "serve", "m"], {}, capacity_bytes=int(48e9))
    assert small.max_num_seqs.value == 256
    cpu = engine_settings("vllm", ["x"], {"VLLM_CPU_KVCACHE_SPACE": "1"}, device_kind="cpu")
    assert cpu.max_num_seqs.value == 128 and cpu.kv_cache_bytes.value == 2**30 and cpu.graph_ceiling.value is None


def test_headroom_ok_with_engine_default(seed_points):
    for p in seed_points:
        c = concurrency_headroom(p, _settings(hand_launch(p), p), fanout=2)
        assert c.status == "ok", c.message
        assert c.details["cap"] == 1024


def test_headroom_warns_only_at_c128_when_cap_is_128(seed_points):
    for p in seed_points:
        c = concurrency_headroom(p, _settings(hand_launch(p, max_num_seqs=128), p), fanout=2)
        assert c.status == ("warn" if p.conc == 128 else "ok"), (p.exp_name, c.message)
    p128 = next(p for p in seed_points if p.conc == 128)
    c = concurrency_headroom(p128, _settings(hand_launch(p128, max_num_seqs=128), p128), fanout=2)
    assert "conc 128 x fan-out 2" in c.message and "128 (--max-num-seqs)" in c.message


def test_fixed_seq_len_points_have_no_fanout():
    from infx.matrix.point import Point

    p = Point.from_row({"image": "i:v1.0", "model": "m", "model-prefix": "m", "precision": "bf16", "framework": "vllm",
                        "runner": "h200", "exp-name": "m", "point-id": "x", "isl": 1024, "osl": 1024, "tp": 1,
                        "conc": 128})
    s = engine_settings("vllm", ["--max-num-seqs", "128"], {}, capacity_bytes=int(141e9))
    assert concurrency_headroom(p, s, fanout=2).status == "ok"


def test_graph_ceiling_seed_recipe_covers_batches(seed_points):
    for p in seed_points:
        c = graph_ceiling(p, _settings(hand_launch(p), p), fanout=2)
        assert c.status == "ok", c.message
        assert c.details["ceiling_tokens"] == (2048 if p.conc == 128 else 1024)


def test_graph_ceiling_warns_below_largest_batch(seed_points):
    p = next(p for p in seed_points if p.conc == 128)
    low = hand_launch(p, extra=["--max-cudagraph-capture-size", "512"])
    c = graph_ceiling(p, _settings(low, p), fanout=2)
    assert c.status == "warn" and "512" in c.message and "2048" in c.message
    eager = hand_launch(p, extra=["--enforce-eager"])
    assert graph_ceiling(p, _settings(eager, p), fanout=2).status == "skip"  # eager: no graphs at all
    plain = hand_launch(p)
    no_graphs = ["--compilation-config", '{"cudagraph_mode":"NONE"}']
    plain = plain.model_copy(update={"argv": [a for a in plain.argv if a] + no_graphs})
    assert graph_ceiling(p, _settings(plain, p), fanout=2).status == "skip"


def test_every_arm_needs_an_eval_point(seed_points):
    both = [p.model_copy(update={"run_eval": p.conc == 128}) for p in seed_points]
    out = eval_coverage(both, "default")
    assert all(c.status == "ok" for c in out.values())
    # The reference generator's bug: the TP=2 arm lost its eval.
    lost = [p.model_copy(update={"run_eval": p.conc == 128 and p.tp == 4}) for p in seed_points]
    out = eval_coverage(lost, "evals-only")
    bad = {pid for pid, c in out.items() if c.status == "warn"}
    assert bad == {p.point_id for p in seed_points if p.tp == 2}
    assert "tp=2" in out[next(iter(bad))].message
    assert eval_coverage(lost, "none") == {}


def test_placeholders_in_catalog_recipe_changelog_and_launch(tmp_path, seed_points):
    cat = tmp_path / "master.yaml"
    cat.write_text("a-key:\n  image: img:TBD\n  model: m\n\n"
                   "# TODO: documents b-key\nb-key:\n  model: m  # FIXME later\n")
    rec = tmp_path / "r.yaml"
    rec.write_text("name: r\n# TODO tune this\nargs: {x: 1}\n")
    cl = tmp_path / "perf-changelog.yaml"
    cl.write_text("- config-keys: [a-*]\n  description: [\"added\"]\n  pr-link: TBD\n")
    scan = PlaceholderScan.build([cat], [rec], cl)
    a = scan.check("a-key", None)
    assert a.status == "fail" and "master.yaml:2:10" in a.message and "perf-changelog.yaml:3:12" in a.message
    assert "TODO" not in a.message  # the comment above b-key documents b-key
    b = scan.check("b-key", None)
    assert b.status == "warn" and "(comment)" in b.message and "master.yaml:5:3" in b.message and "FIXME" in b.message
    r = scan.check(None, str(rec))
    assert r.status == "warn" and "r.yaml:2" in r.message
    assert scan.check("c-key", None).status == "ok"
    assert scan.check(None, None, ["--foo", "FIXME"]).status == "fail"


def test_placeholder_in_rendered_argv_fails_the_point(seed_points, cards, runners):
    p = seed_points[0]
    launch = hand_launch(p, extra=["--tool-call-parser", "TODO"])
    v = preflight_points([p], cards=cards, runners=runners, launches={p.point_id: launch},
                         placeholders=PlaceholderScan())[0]
    assert v.check("placeholders").status == "fail" and v.status == "fail"


def test_bad_argument_value_is_a_launch_args_failure(seed_points, cards, runners):
    p = seed_points[0]
    launch = hand_launch(p, extra=["--max-num-seqs", "lots"])
    v = preflight_points([p], cards=cards, runners=runners, launches={p.point_id: launch})[0]
    assert v.check("launch-args").status == "fail" and "max-num-seqs" in v.reason


def test_unrenderable_point_fails_with_reason(seed_points, cards, runners):
    v = preflight_points([seed_points[0]], cards=cards, runners=runners, recipes=None)[0]
    assert v.status == "fail" and v.check("launch").status == "fail"
    assert v.check("image-pinned").status == "ok"  # other checks still ran


@pytest.mark.parametrize("runner,expect", [("cluster:mi355x-amds", "ok"), ("rtx6000pro-lat", "warn")])
def test_runner_check(seed_points, cards, runners, runner, expect):
    p = seed_points[0].model_copy(update={"runner": runner})
    v = preflight_points([p], cards=cards, runners=runners, launches={p.point_id: hand_launch(p)})[0]
    assert v.check("runner").status == expect


def test_fanout_measured_from_traces(tmp_path, seed_points):
    from infx.agentic.synth import SynthConfig, synth_traces
    from infx.agentic.trace import write_traces
    from infx.preflight.checks import fanout_from_traces

    f = tmp_path / "traces.jsonl"
    write_traces(f, synth_traces(SynthConfig(sessions=6, fanout_prob=1.0, fanout_width_min=3, fanout_width_max=3)))
    fan = fanout_from_traces(f)
    assert fan == 3
    p = next(p for p in seed_points if p.conc == 64)
    c = concurrency_headroom(p, _settings(hand_launch(p, max_num_seqs=128), p), fanout=fan)
    assert c.status == "warn" and c.details["worst_in_flight"] == 192
    write_traces(f, synth_traces(SynthConfig(sessions=2, fanout_prob=0.0)))
    assert fanout_from_traces(f) == 1
