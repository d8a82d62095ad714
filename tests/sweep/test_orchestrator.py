"""Grouping, isolation, resume and fail-fast of the orchestrator, with fake executors (no GPU/engine here)."""

from __future__ import annotations

import json

import pytest

from infx.metrics.sections import ResultExtra
from infx.sweep import events
from infx.sweep.grouping import LaunchGroup, group_points
from infx.sweep.layout import RunDir
from infx.sweep.orchestrator import Orchestrator, SweepOptions, decide

from .fakes import FakeMeasurer, FakeStarter, make_point, make_result


def two_groups():
    # arm a (tp1) and arm b (tp2), 3 concurrencies each, given out of order
    pts = [make_point("a", 1, c) for c in (4, 1, 2)] + [make_point("b", 2, c) for c in (2, 1, 4)]
    return group_points(pts)


def orch(tmp_path, starter=None, measurer=None, **opts):
    starter = starter or FakeStarter()
    measurer = measurer or FakeMeasurer()
    events = []
    o = Orchestrator(RunDir(tmp_path / "run1"), starter, measurer, SweepOptions(**opts), events.append)
    return o, starter, measurer, events


def states(tmp_path, ids):
    rd = RunDir(tmp_path / "run1")
    return {pid: (rd.read_status(pid).state if rd.read_status(pid) else None) for pid in ids}


def test_grouping_one_launch_per_arm_in_ascending_concurrency():
    groups = two_groups()
    assert len(groups) == 2
    assert groups[0].point_ids == ["a-tp1-c1", "a-tp1-c2", "a-tp1-c4"]
    assert groups[1].point_ids == ["b-tp2-c1", "b-tp2-c2", "b-tp2-c4"]
    assert groups[0].fingerprint != groups[1].fingerprint


def test_grouping_uses_rendered_fingerprint():
    pts = [make_point("a", 1, c) for c in (1, 2, 64, 128)]

    class L:
        def __init__(self, fp):
            self.fingerprint, self.engine, self.image, self.argv = fp, "vllm", "img", ["serve"]

    groups = group_points(pts, lambda p: L("small" if p.conc <= 64 else "big"))
    assert [(g.fingerprint, len(g.points)) for g in groups] == [("small", 3), ("big", 1)]
    assert groups[0].argv == ["serve"]


def test_all_points_measured_with_one_launch_per_group(tmp_path):
    o, starter, measurer, events = orch(tmp_path)
    s = o.run(two_groups())
    assert len(s.done) == 6 and not s.failed and s.launches == 2
    assert len(starter.started) == 2
    assert measurer.measured == ["a-tp1-c1", "a-tp1-c2", "a-tp1-c4", "b-tp2-c1", "b-tp2-c2", "b-tp2-c4"]
    assert all(e.stopped for e in starter.engines)
    d = RunDir(tmp_path / "run1").point_dir("a-tp1-c2")
    assert json.loads((d / "point.json").read_text())["point"]["point-id"] == "a-tp1-c2"
    assert json.loads((d / "result.json").read_text())["metrics"]["issued"] == 8
    assert "serving a-tp1-c2" in (d / "engine.log").read_text()
    assert "serving a-tp1-c1" not in (d / "engine.log").read_text()  # an excerpt, not the whole log
    rec = json.loads(RunDir(tmp_path / "run1").group_file(starter.started[0]).read_text())
    assert rec["state"] == "done" and rec["startup"]["engine_version"] == "fake-1.0"


@pytest.mark.parametrize("behaviour,reason", [("exit", "launch-failed:bad-argument"),
                                              ("timeout", "launch-failed:startup-timeout"),
                                              ("raise", "launch-failed:launch-error")])
def test_failed_launch_fails_only_its_group(tmp_path, behaviour, reason):
    o, starter, measurer, _ = orch(tmp_path, FakeStarter({"a": behaviour}))
    s = o.run(two_groups())
    assert sorted(s.failed) == ["a-tp1-c1", "a-tp1-c2", "a-tp1-c4"]
    assert sorted(s.done) == ["b-tp2-c1", "b-tp2-c2", "b-tp2-c4"]
    st = RunDir(tmp_path / "run1").read_status("a-tp1-c1")
    assert st.failure_class == reason and st.log_tail  # classified, with the log tail
    assert not any(pid.startswith("a") for pid in measurer.measured)


def test_engine_dying_mid_group_fails_the_rest_of_that_group_only(tmp_path):
    o, _, _, _ = orch(tmp_path, FakeStarter({"a": "die:1"}))
    s = o.run(two_groups())
    st = states(tmp_path, ["a-tp1-c1", "a-tp1-c2", "a-tp1-c4"])
    assert st == {"a-tp1-c1": "done", "a-tp1-c2": "failed", "a-tp1-c4": "failed"}
    assert RunDir(tmp_path / "run1").read_status("a-tp1-c2").failure_class == "engine-died:killed"
    assert RunDir(tmp_path / "run1").read_status("a-tp1-c4").failure_class == "engine-died:killed"
    assert sorted(p for p in s.done if p.startswith("b")) == ["b-tp2-c1", "b-tp2-c2", "b-tp2-c4"]


def test_failed_point_does_not_stop_its_group(tmp_path):
    m = FakeMeasurer(failed={"a-tp1-c2": 3}, raises={"b-tp2-c1"})
    o, starter, _, _ = orch(tmp_path, measurer=m)
    s = o.run(two_groups())
    assert sorted(s.failed) == ["a-tp1-c2", "b-tp2-c1"]
    assert len(s.done) == 4 and len(starter.started) == 2
    st = RunDir(tmp_path / "run1").read_status("a-tp1-c2")
    assert st.failure_class == "error-rate" and "3/8" in st.reason
    assert RunDir(tmp_path / "run1").read_result("a-tp1-c2") is not None  # the measurement is kept for inspection
    assert RunDir(tmp_path / "run1").read_status("b-tp2-c1").failure_class == "measure-error"


def test_error_rate_threshold_is_configurable(tmp_path):
    m = FakeMeasurer(failed={"a-tp1-c2": 1})
    o, _, _, _ = orch(tmp_path, measurer=m, max_error_rate=0.2)
    assert "a-tp1-c2" in o.run(two_groups()).done


def test_second_run_does_nothing_and_deleted_result_is_remeasured(tmp_path):
    o, _, _, _ = orch(tmp_path)
    o.run(two_groups())
    o2, starter2, m2, _ = orch(tmp_path)
    s = o2.run(two_groups())
    assert starter2.started == [] and m2.measured == [] and len(s.reused) == 6
    (RunDir(tmp_path / "run1").point_dir("b-tp2-c2") / "result.json").unlink()
    o3, starter3, m3, _ = orch(tmp_path)
    s3 = o3.run(two_groups())
    assert m3.measured == ["b-tp2-c2"] and len(starter3.started) == 1 and len(s3.reused) == 5


def test_corrupt_result_is_not_trusted(tmp_path):
    o, _, _, _ = orch(tmp_path)
    groups = two_groups()
    o.run(groups)
    (RunDir(tmp_path / "run1").point_dir("a-tp1-c1") / "result.json").write_text('{"schema_version": 1, "metr')
    assert decide(RunDir(tmp_path / "run1"), "a-tp1-c1", groups[0].fingerprint) == "run"
    assert decide(RunDir(tmp_path / "run1"), "a-tp1-c2", groups[0].fingerprint) == "done"


def test_changed_launch_fingerprint_remeasures(tmp_path):
    o, _, _, _ = orch(tmp_path)
    groups = two_groups()
    o.run(groups)
    assert decide(RunDir(tmp_path / "run1"), "a-tp1-c1", "another-fingerprint") == "run"


def test_failures_are_kept_unless_rerun_failed(tmp_path):
    o, _, _, _ = orch(tmp_path, FakeStarter({"a": "exit"}))
    o.run(two_groups())
    o2, st2, m2, _ = orch(tmp_path)
    s2 = o2.run(two_groups())
    assert st2.started == [] and len(s2.previously_failed) == 3
    o3, st3, m3, _ = orch(tmp_path, rerun_failed=True)
    s3 = o3.run(two_groups())
    assert m3.measured == ["a-tp1-c1", "a-tp1-c2", "a-tp1-c4"] and len(st3.started) == 1
    assert sorted(s3.done) == ["a-tp1-c1", "a-tp1-c2", "a-tp1-c4"]


def test_fail_fast_stops_new_groups_only(tmp_path):
    pts = [make_point(x, 1, c) for x in ("a", "b", "c") for c in (1, 2)]
    m = FakeMeasurer(failed={"a-tp1-c1": 8})
    o, starter, _, _ = orch(tmp_path, measurer=m, fail_fast=True)
    s = o.run(group_points(pts))
    # the failing group finishes its own points (running work is never killed) ...
    assert s.failed == ["a-tp1-c1"] and s.done == ["a-tp1-c2"]
    # ... and no new group starts
    assert len(starter.started) == 1 and sorted(s.not_run) == ["b-tp1-c1", "b-tp1-c2", "c-tp1-c1", "c-tp1-c2"]
    assert RunDir(tmp_path / "run1").stop_file.exists()


def test_without_fail_fast_every_group_runs(tmp_path):
    pts = [make_point(x, 1, c) for x in ("a", "b", "c") for c in (1, 2)]
    o, starter, _, _ = orch(tmp_path, FakeStarter({"a": "exit"}))
    s = o.run(group_points(pts))
    assert len(starter.started) == 3 and len(s.done) == 4 and not s.not_run


def test_relaunch_per_point_launches_once_per_point(tmp_path):
    o, starter, _, _ = orch(tmp_path, relaunch_per_point=True)
    s = o.run(two_groups())
    assert s.launches == 6 and len(starter.started) == 6 and len(s.done) == 6


def test_interrupt_keeps_finished_points_and_stops_engine(tmp_path):
    class Interrupting(FakeMeasurer):
        def measure(self, point, engine, point_dir, progress=None):
            if point.point_id == "a-tp1-c2":
                raise KeyboardInterrupt
            return super().measure(point, engine, point_dir, progress)

    o, starter, _, _ = orch(tmp_path, measurer=Interrupting())
    with pytest.raises(KeyboardInterrupt):
        o.run(two_groups())
    assert states(tmp_path, ["a-tp1-c1", "a-tp1-c2", "b-tp2-c1"]) == {
        "a-tp1-c1": "done", "a-tp1-c2": "interrupted", "b-tp2-c1": None}
    assert starter.engines[0].stopped
    assert not list(tmp_path.rglob("*.tmp"))  # nothing half-written
    rec = json.loads(RunDir(tmp_path / "run1").group_file(starter.started[0]).read_text())
    assert rec["state"] == "interrupted"
    # resume measures only what is missing
    o2, _, m2, _ = orch(tmp_path)
    o2.run(two_groups())
    assert m2.measured == ["a-tp1-c2", "a-tp1-c4", "b-tp2-c1", "b-tp2-c2", "b-tp2-c4"]


def test_gate_rejects_are_skipped_without_launch(tmp_path):
    groups = two_groups()
    o, starter, _, _ = orch(tmp_path)
    p = groups[0].points[0]
    o.mark_skipped({p.point_id: (p, groups[0].fingerprint, "preflight:kv-fit: KV cache does not fit")})
    st = RunDir(tmp_path / "run1").read_status(p.point_id)
    assert st.state == "skipped" and st.failure_class == "preflight:kv-fit" and starter.started == []


# ----------------------------------------------------------------- resume trusts only what it can prove


class Scripted(FakeMeasurer):
    """Returns ``result`` (a BenchResult factory) for every point; ``out_tok_s`` marks whose result it is."""

    def __init__(self, result=None, out_tok_s: float = 100.0):
        super().__init__()
        self.result, self.out_tok_s = result, out_tok_s

    def measure(self, point, engine, point_dir, progress=None):
        self.measured.append(point.point_id)
        engine._log(f"serving {point.point_id}\n")
        if self.result is not None:
            return self.result(point)
        return make_result(out_tok_s=self.out_tok_s).model_copy(update={"point": point.to_row()})


def one_point_group(fp: str):
    return [LaunchGroup(fp, [make_point("a", 1, 1)])]


def test_result_written_under_another_fingerprint_before_a_kill_is_not_reused(tmp_path):
    rd = RunDir(tmp_path / "run1")
    o, _, _, _ = orch(tmp_path, measurer=Scripted(out_tok_s=111.0))
    assert o.run(one_point_group("fpA")).done == ["a-tp1-c1"]
    # re-measured under fingerprint B, killed after result.json and before status.json
    o2, _, _, _ = orch(tmp_path, measurer=Scripted(out_tok_s=222.0))
    real_write_status = rd.write_status

    def killed(pid, status):
        if status.state == "done":
            raise KeyboardInterrupt
        real_write_status(pid, status)

    o2.run_dir.write_status = killed  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        o2.run(one_point_group("fpB"))
    assert rd.read_result("a-tp1-c1").metrics.throughput.output_tok_per_s == 222.0  # B's result is on disk
    # back to A: A's status must not vouch for B's result
    assert decide(rd, "a-tp1-c1", "fpA") == "run"
    assert decide(rd, "a-tp1-c1", "fpB") == "run"
    o3, _, m3, _ = orch(tmp_path, measurer=Scripted(out_tok_s=333.0))
    o3.run(one_point_group("fpA"))
    assert m3.measured == ["a-tp1-c1"] and rd.read_status("a-tp1-c1").launch_fingerprint == "fpA"


def test_result_of_another_point_is_not_reused(tmp_path):
    rd = RunDir(tmp_path / "run1")
    o, _, _, _ = orch(tmp_path, measurer=Scripted())
    o.run(one_point_group("fpA"))
    assert decide(rd, "a-tp1-c1", "fpA") == "done"
    other = make_result().model_copy(update={"point": make_point("z", 1, 1).to_row()})
    rd.write_result("a-tp1-c1", other)
    assert decide(rd, "a-tp1-c1", "fpA") == "run"


DISTS = ("session_requests", "session_subagent_requests", "session_duration_s", "session_busy_s",
         "session_max_in_flight", "agentic_interactivity")


def test_incomplete_result_fails_the_point_with_a_reason(tmp_path):
    def incomplete(point):
        r = make_result(issued=5)
        figures = {"in_flight_high_water": 2, "in_flight_high_water_profiled": 2, "concurrency": 1,
                   "records_total": 5, "records_warmup": 0, "records_cancelled": 0, "error_rate": 0.4,
                   "chat_overhead_tokens": 0, "prompt_token_mismatches": 0, "skipped_requests": 0, "cache_salt": "s",
                   "stopped_by": "error_rate", "abort_reason": "error rate 40% over 3 requests",
                   "mean_in_flight": None, "trace_file": None, "sessions_started": 1, "sessions_completed": 0,
                   "sessions_measured": 0, **{k: {"count": 0} for k in DISTS},
                   "agentic_interactivity_median": None, "agentic_interactivity_p90": None}
        return r.model_copy(update={"complete": False, "point": point.to_row(),
                                    "extra": ResultExtra.model_validate({"agentic": figures})})

    o, _, _, _ = orch(tmp_path, measurer=Scripted(incomplete))
    s = o.run(one_point_group("fpA"))
    assert s.failed == ["a-tp1-c1"] and s.done == []
    st = RunDir(tmp_path / "run1").read_status("a-tp1-c1")
    assert st.state == "failed" and st.failure_class == "incomplete"
    assert "stopped early" in st.reason and "error rate 40%" in st.reason


def test_result_without_requests_fails_the_point(tmp_path):
    o, _, _, _ = orch(tmp_path, measurer=Scripted(lambda p: make_result(issued=0).model_copy(
        update={"point": p.to_row()})))
    s = o.run(one_point_group("fpA"))
    assert s.failed == ["a-tp1-c1"]
    st = RunDir(tmp_path / "run1").read_status("a-tp1-c1")
    assert st.failure_class == "no-requests" and "no request was issued" in st.reason


def test_done_status_with_an_incomplete_result_is_remeasured(tmp_path):
    rd = RunDir(tmp_path / "run1")
    o, _, _, _ = orch(tmp_path, measurer=Scripted())
    o.run(one_point_group("fpA"))
    rd.write_result("a-tp1-c1", rd.read_result("a-tp1-c1").model_copy(update={"complete": False}))
    assert decide(rd, "a-tp1-c1", "fpA") == "run"


def test_changed_load_profile_remeasures_and_says_so(tmp_path):
    rd = RunDir(tmp_path / "run1")
    o, _, _, _ = orch(tmp_path, load_key="load-1")
    o.run(two_groups())
    assert rd.read_status("a-tp1-c1").load_profile == "load-1"
    o2, _, m2, _ = orch(tmp_path, load_key="load-1")
    assert len(o2.run(two_groups()).reused) == 6 and m2.measured == []
    o3, _, m3, ev3 = orch(tmp_path, load_key="load-2")
    s3 = o3.run(two_groups())
    assert len(m3.measured) == 6 and s3.reused == [] and rd.read_status("a-tp1-c1").load_profile == "load-2"
    notes = [e.message for e in ev3 if isinstance(e, events.Note)]
    assert any("another load profile" in n and "a-tp1-c1" in n for n in notes)
    assert decide(rd, "a-tp1-c1", two_groups()[0].fingerprint, load_key="load-1") == "run"


def test_status_without_a_load_profile_is_remeasured_when_one_is_set(tmp_path):
    rd = RunDir(tmp_path / "run1")
    o, _, _, _ = orch(tmp_path)  # no load key: none recorded (as an older infx wrote it)
    o.run(two_groups())
    assert rd.read_status("a-tp1-c1").load_profile is None
    fp = two_groups()[0].fingerprint
    assert decide(rd, "a-tp1-c1", fp) == "done"
    assert decide(rd, "a-tp1-c1", fp, load_key="load-1") == "run"


def test_load_profile_key_follows_the_requests_per_point():
    from infx.sweep.prepare import LoadProfile, RunRequest, options_of

    assert LoadProfile().key() == LoadProfile().key()
    assert LoadProfile(prompts_per_conc=3).key() != LoadProfile().key()
    assert LoadProfile(max_isl=32).key() != LoadProfile().key()
    req = RunRequest(config_files=[], runner_config="r.yaml", config_keys=[], results="out",
                     load=LoadProfile(prompts_per_conc=3))
    assert options_of(req).load_key == LoadProfile(prompts_per_conc=3).key()
