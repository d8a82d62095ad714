"""Eval files for a point directory, written from known answers (what infx run leaves after an eval)."""

from __future__ import annotations

import time
from pathlib import Path

from infx.atomic import write_json
from infx.evals.protocol import EVAL_FILE, EvalProtocol, EvalResult, EvalSample, EvalStatus, FilterScore
from infx.evals.runner import write_samples
from infx.evals.thresholds import judge
from infx.sweep.layout import write_eval_status

FILTERS = ("strict-match", "flexible-extract")


def write_eval(point_dir: Path, correct: dict[int, bool], *, threshold: float = 0.5,
               protocol: EvalProtocol | None = None, failed: str | None = None) -> EvalStatus:
    protocol = protocol or EvalProtocol(max_length=9472, max_tokens=5376, limit=len(correct))
    now = time.time()
    if failed:
        st = EvalStatus(state="failed", reason=failed, failure_class="eval-server", protocol=protocol,
                        started_at=now, ended_at=now)
        write_eval_status(point_dir, st)
        return st
    score = sum(correct.values()) / len(correct)
    result = EvalResult(task="gsm8k", filters=[FilterScore(name=f, score=score, stderr=0.01) for f in FILTERS],
                        n=len(correct), protocol=protocol, lm_eval_version="0.4.13", base_url="http://x",
                        model="m", started_at=now, ended_at=now, wall_s=0.0)
    write_samples(point_dir / "eval-samples.jsonl", [
        EvalSample(doc_id=d, prompt="Question: q", response="#### 1", target="#### 1",
                   extracted={f: "1" for f in FILTERS}, correct={f: ok for f in FILTERS})
        for d, ok in sorted(correct.items())])
    write_json(point_dir / EVAL_FILE, result.model_dump(mode="json"))
    verdict = judge(result, threshold, "test")
    st = EvalStatus(state="pass" if verdict.passed else "accuracy-fail", verdict=verdict, protocol=protocol,
                    started_at=now, ended_at=now)
    write_eval_status(point_dir, st)
    return st


def table(both: int, only_a: int, only_b: int, neither: int) -> tuple[dict[int, bool], dict[int, bool]]:
    """Answers of two arms with the given 2x2 counts (question ids 0..n-1)."""
    a: dict[int, bool] = {}
    b: dict[int, bool] = {}
    i = 0
    for n, ra, rb in ((both, True, True), (only_a, True, False), (only_b, False, True), (neither, False, False)):
        for _ in range(n):
            a[i], b[i] = ra, rb
            i += 1
    return a, b
