"""Evals inside a sweep: the orchestrator with fake engines (no GPU can exist here) whose URL is the oracle
server, and the real evaluator (lm-eval in .venv-eval): eval after throughput on the same launch, eval-only
points, failure isolation, resume, accuracy-fail."""

from __future__ import annotations

import pytest

from infx.evals.point import eval_launch_point, protocol_for
from infx.evals.protocol import EVAL_FILE
from infx.sweep.grouping import group_points
from infx.sweep.layout import RunDir, read_eval_status
from infx.sweep.local import LocalEvaluator
from infx.sweep.orchestrator import Orchestrator, SweepOptions
from tests.sweep.fakes import FakeMeasurer, FakeStarter, make_point

from .oracle import running_oracle
from .test_eval_oracle import HAVE_LMEVAL

pytestmark = pytest.mark.skipif(not HAVE_LMEVAL, reason="lm-eval venv missing: run `make eval-venv`")


class OracleStarter(FakeStarter):
    def __init__(self, url: str):
        super().__init__()
        self.url = url

    def start(self, group, log_path):
        eng = super().start(group, log_path)
        eng.base_url = self.url
        return eng


def run(tmp_path, url, points, evaluator, **opts):
    starter, measurer = OracleStarter(url), FakeMeasurer()
    o = Orchestrator(RunDir(tmp_path / "run1"), starter, measurer, SweepOptions(**opts), evaluator=evaluator)
    return o.run(group_points(points)), starter, measurer


def test_run_eval_point_is_graded_after_its_throughput_and_resumes(tmp_path):
    # prefix "tinyllama": its card sets gsm8k 0.0 (pass); prefix "other": task default 0.90 (the oracle's 0.5 fails)
    pts = [make_point("tinyllama", 1, 1), make_point("tinyllama", 1, 2, **{"run-eval": True}),
           make_point("other", 2, 4, **{"run-eval": True})]
    ev = LocalEvaluator(limit=4)
    with running_oracle() as o:
        s, starter, measurer = run(tmp_path, o.base_url, pts, ev)
        assert o.stats.requests == 8  # two evals of 4 questions
    assert sorted(measurer.measured) == sorted(p.point_id for p in pts)
    rd = RunDir(tmp_path / "run1")
    assert read_eval_status(rd.point_dir("tinyllama-tp1-c1")) is None
    ok = read_eval_status(rd.point_dir("tinyllama-tp1-c2"))
    bad = read_eval_status(rd.point_dir("other-tp2-c4"))
    assert ok.state == "pass" and ok.verdict.threshold == 0.0
    assert bad.state == "accuracy-fail" and bad.verdict.threshold == 0.9 and bad.verdict.failing == [
        "strict-match", "flexible-extract"]
    assert s.accuracy_failed == ["other-tp2-c4"] and not s.ok  # the run ends non-zero...
    assert sorted(s.done) == sorted(p.point_id for p in pts)  # ...after everything ran
    # resume: nothing to launch, nothing re-measured or re-graded
    with running_oracle() as o:
        s2, starter2, m2 = run(tmp_path, o.base_url, pts, ev)
        assert o.stats.requests == 0
    assert starter2.started == [] and m2.measured == []


def test_eval_missing_on_a_measured_point_relaunches_for_the_eval_only(tmp_path):
    pts = [make_point("tinyllama", 1, 16, **{"run-eval": True})]
    with running_oracle() as o:
        run(tmp_path, o.base_url, pts, None)  # a sweep without evals measured it
        s, starter, measurer = run(tmp_path, o.base_url, pts, LocalEvaluator(limit=2))
        assert o.stats.requests == 2
    assert len(starter.started) == 1 and measurer.measured == []  # throughput kept
    assert read_eval_status(RunDir(tmp_path / "run1").point_dir(pts[0].point_id)).state == "pass"


def test_eval_only_points_skip_throughput(tmp_path):
    pts = [make_point("tinyllama", 1, 16, **{"run-eval": True, "eval-only": True})]
    with running_oracle() as o:
        s, starter, measurer = run(tmp_path, o.base_url, pts, LocalEvaluator(limit=2))
    rd = RunDir(tmp_path / "run1")
    assert measurer.measured == [] and s.done == [pts[0].point_id] and s.ok
    assert rd.read_status(pts[0].point_id).state == "done" and rd.read_result(pts[0].point_id) is None
    assert (rd.point_dir(pts[0].point_id) / EVAL_FILE).is_file()


def test_a_dying_eval_is_recorded_and_other_points_go_on(tmp_path):
    pts = [make_point("tinyllama", 1, 16, **{"run-eval": True}), make_point("tinyllama", 1, 32)]
    with running_oracle("error500", fail_after=1) as o:  # one attempt: lm-eval's retry backoff is 1-10 s a try
        s, _, measurer = run(tmp_path, o.base_url, pts, LocalEvaluator(limit=4, max_retries=1))
    rd = RunDir(tmp_path / "run1")
    st = read_eval_status(rd.point_dir(pts[0].point_id))
    assert st.state == "failed" and st.failure_class == "eval-server" and "500" in st.reason
    assert not (rd.point_dir(pts[0].point_id) / EVAL_FILE).exists()
    assert rd.read_status(pts[0].point_id).state == "done"  # its throughput result stands
    assert measurer.measured == [p.point_id for p in pts] and s.eval_failed == [pts[0].point_id] and not s.ok
    # resume leaves the failed eval alone unless failures are retried
    with running_oracle() as o:
        _, starter, _ = run(tmp_path, o.base_url, pts, LocalEvaluator(limit=4))
        assert starter.started == []
        s3, starter3, m3 = run(tmp_path, o.base_url, pts, LocalEvaluator(limit=4), rerun_failed=True)
    assert len(starter3.started) == 1 and m3.measured == [] and s3.ok
    assert read_eval_status(rd.point_dir(pts[0].point_id)).state == "pass"


def test_context_rule_on_the_tiny_model():
    """8k1k asks for 8192+1024+256 = 9472 tokens; the tiny model's card caps it at 8192 (its
    max_position_embeddings), so the output budget is 8192 - 4096 = 4096."""
    p = make_point("tinyllama", 1, 16, isl=8192, osl=1024, **{"max-model-len": 9472, "eval-only": True,
                                                                "run-eval": True})
    assert eval_launch_point(p).max_model_len == 8192
    pr = protocol_for(p, launched_max_len=8192, limit=None)
    assert (pr.max_length, pr.max_tokens, pr.num_concurrent) == (8192, 4096, 16)
    # a card without max-context: the point's own max model len
    q = make_point("nocard", 1, 16, isl=8192, osl=1024, **{"max-model-len": 9472})
    assert protocol_for(q, None, None).max_length == 9472 and protocol_for(q, None, None).max_tokens == 5376
