"""InferenceX's own collection and gate as an independent oracle: ``collect_eval_results.py`` and
``validate_scores.py`` (run from ``../shared``, never copied; with the eval venv's Python, which has their
``tabulate``/``yaml``) read the lm-eval output infx keeps (``lm-eval/``) and reach infx's score and verdict."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from infx.evals.protocol import LMEVAL_DIR, EvalProtocol
from infx.evals.runner import eval_python, run_eval
from infx.evals.thresholds import judge

from .oracle import running_oracle
from .test_eval_oracle import HAVE_LMEVAL

REPO = Path(__file__).resolve().parents[2]
ORACLE = Path(os.environ.get("INFX_SHARED", REPO / ".." / "shared")).resolve() / "compat" / "inferencex" / "oracle"

pytestmark = [
    pytest.mark.skipif(not HAVE_LMEVAL, reason="lm-eval venv missing: run `make eval-venv`"),
    pytest.mark.skipif(not (ORACLE / "validate_scores.py").is_file(),
                       reason=f"InferenceX oracle scripts not found at {ORACLE} (set INFX_SHARED)"),
]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("ix") / "point"
    with running_oracle() as o:
        result = run_eval(EvalProtocol(limit=10, num_concurrent=4, max_length=2048, max_tokens=64),
                          o.base_url, "oracle", out,
                          meta={"is_multinode": False, "framework": "vllm", "precision": "bf16", "tp": 1, "ep": 1,
                                "dp_attention": False, "conc": 4, "model": "oracle", "infmax_model_prefix": "oracle",
                                "hw": "cpu", "isl": "8192", "osl": "1024", "spec_decoding": "none"})
    return result, out / LMEVAL_DIR


def test_collect_eval_results_reads_the_same_scores(graded, tmp_path):
    result, kept = graded
    r = subprocess.run([str(eval_python()), str(ORACLE / "collect_eval_results.py"), str(kept), "t"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = json.loads((tmp_path / "agg_eval_t.json").read_text())
    assert len(rows) == 1
    row = rows[0]
    assert row["task"] == "gsm8k" and row["n_eff"] == result.n == 10
    assert row["score"] == row["em_strict"] == result.score("strict-match") == 0.5
    assert row["em_flexible"] == result.score("flexible-extract") == 0.5
    assert row["em_strict_se"] == pytest.approx(result.filters[0].stderr)


@pytest.mark.parametrize("threshold", [0.9, 0.5, 0.51])
def test_validate_scores_gives_the_same_verdict(graded, tmp_path, threshold):
    result, kept = graded
    cfg = tmp_path / "thresholds.json"
    cfg.write_text(json.dumps({"default": {"gsm8k": 0.9}, "models": {"oracle": {"gsm8k": threshold}}}))
    r = subprocess.run([str(eval_python()), str(ORACLE / "validate_scores.py"), "--thresholds", str(cfg)],
                       cwd=kept, capture_output=True, text=True)
    ours = judge(result, threshold, "test")
    assert (r.returncode == 0) == ours.passed, r.stdout + r.stderr
    assert ours.passed == (threshold <= 0.5)  # inclusive, both filters
