"""The real lm-eval (in .venv-eval) against the deterministic oracle server: exact scores for both filters,
chat and completions, reasoning-only replies, and servers that fail (500s, time-outs, empty bodies)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infx.diagnostics import InfxError
from infx.evals.parse import read_samples
from infx.evals.protocol import EVAL_FILE, LMEVAL_DIR, SAMPLES_FILE, EvalProtocol, EvalResult
from infx.evals.runner import EvalFailed, eval_python, run_eval

from .oracle import expected_fraction, running_oracle

try:
    eval_python()
    HAVE_LMEVAL = True
except InfxError:
    HAVE_LMEVAL = False
pytestmark = pytest.mark.skipif(not HAVE_LMEVAL, reason="lm-eval venv missing: run `make eval-venv`")


def proto(**kw) -> EvalProtocol:
    base = dict(limit=10, num_concurrent=4, max_length=2048, max_tokens=64, timeout_s=5, max_retries=1)
    base.update(kw)
    return EvalProtocol(**base)


@pytest.mark.parametrize("endpoint,limit", [("chat", 10), ("completions", 7)])
def test_oracle_score_is_the_even_fraction_for_both_filters(tmp_path, endpoint, limit):
    with running_oracle() as o:
        r = run_eval(proto(endpoint=endpoint, limit=limit, apply_chat_template=endpoint == "chat"),
                     o.base_url, "oracle", tmp_path)
        assert sorted(o.stats.ids) == list(range(limit))  # every question reached the server once
    want = expected_fraction(limit)
    assert {f.name: f.score for f in r.filters} == {"strict-match": want, "flexible-extract": want}
    assert r.n == limit and r.lm_eval_version == "0.4.13"
    on_disk = EvalResult.model_validate_json((tmp_path / EVAL_FILE).read_text())
    assert on_disk == r
    samples = read_samples(tmp_path)
    assert [s.doc_id for s in samples] == list(range(limit))
    for s in samples:
        assert s.correct == {"strict-match": s.doc_id % 2 == 0, "flexible-extract": s.doc_id % 2 == 0}
        final = s.target.rsplit("####", 1)[-1].strip().replace(",", "")
        assert (s.extracted["strict-match"] == final) == (s.doc_id % 2 == 0)
        assert "Question:" in s.prompt and s.response.startswith(("Let me", "I think"))
    assert len(list((tmp_path / LMEVAL_DIR).glob("results_*.json"))) == 1
    assert len(list((tmp_path / LMEVAL_DIR).glob("samples_gsm8k_*.jsonl"))) == 1


def test_chat_sends_five_shot_multiturn_greedy_requests(tmp_path):
    """The InferenceX protocol: 5 few-shot user/assistant turns + the question, greedy, seed 1234."""
    with running_oracle() as o:
        run_eval(proto(limit=2), o.base_url, "oracle", tmp_path)
    samples = read_samples(tmp_path)
    messages = json.loads(samples[0].prompt)
    assert [m["role"] for m in messages] == ["user", "assistant"] * 5 + ["user"]
    assert messages[-1]["content"].endswith("formatted as: #### [number]\nAnswer:")
    gen = json.loads(next((tmp_path / LMEVAL_DIR).glob("results_*.json")).read_text())
    assert gen["configs"]["gsm8k"]["num_fewshot"] == 5
    assert gen["config"]["gen_kwargs"]["temperature"] == 0 and gen["config"]["gen_kwargs"]["top_p"] == 1


def test_reasoning_only_replies_are_graded(tmp_path):
    with running_oracle("reasoning") as o:
        r = run_eval(proto(limit=6), o.base_url, "oracle", tmp_path)
    assert [f.score for f in r.filters] == [0.5, 0.5]


# one failure mode in the fast suite; the others (a whole lm-eval run each) with the slow tests
@pytest.mark.parametrize("mode", ["error500", pytest.param("timeout", marks=pytest.mark.slow),
                                  pytest.param("empty", marks=pytest.mark.slow)])
def test_failing_server_never_yields_a_complete_score(tmp_path, mode):
    (tmp_path / EVAL_FILE).write_text('{"an": "earlier eval"}\n')  # an earlier eval in the same --out
    (tmp_path / SAMPLES_FILE).write_text('{"doc_id": 0}\n')
    with running_oracle(mode, fail_after=3) as o, pytest.raises(EvalFailed) as info:
        run_eval(proto(limit=10, timeout_s=2), o.base_url, "oracle", tmp_path)
    assert info.value.kind == "server"
    assert {"error500": "500", "timeout": "TimeoutError", "empty": "no completion"}[mode] in info.value.message
    # no score written, and the failed eval destroyed nothing: the earlier files stand (issue 26)
    assert (tmp_path / EVAL_FILE).read_text() == '{"an": "earlier eval"}\n'
    assert (tmp_path / SAMPLES_FILE).read_text() == '{"doc_id": 0}\n'
    assert (tmp_path / "lm-eval.log").is_file()


@pytest.mark.slow  # two whole lm-eval runs through the CLI (about 8 s)
def test_cli_grades_and_gates(tmp_path):
    with running_oracle() as o:
        cmd = [sys.executable, "-m", "infx", "eval", "--base-url", o.base_url, "--model", "oracle", "--limit", "4",
               "--num-concurrent", "4", "--max-length", "2048", "--out", str(tmp_path / "e")]
        fail = subprocess.run(cmd, capture_output=True, text=True)
        ok = subprocess.run(cmd + ["--threshold", "0.5"], capture_output=True, text=True)
    assert fail.returncode == 1 and "accuracy-fail" in fail.stderr and "threshold 0.9" in fail.stderr
    assert ok.returncode == 0, ok.stderr
    data = json.loads((tmp_path / "e" / EVAL_FILE).read_text())
    assert data["protocol"]["max_length"] == 2048 and data["protocol"]["max_tokens"] == 1024
    assert [f["score"] for f in data["filters"]] == [0.5, 0.5]


def test_cli_bad_input_is_one_line(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "infx", "eval", "--model", "m", "--out", str(tmp_path), *args],
                              capture_output=True, text=True)

    for args, text in ((("--base-url", "http://127.0.0.1:1", "--limit", "0"), "--limit must be >= 1"),
                       (("--base-url", "http://127.0.0.1:1", "--limit", "99999"), "more than the 1319"),
                       (("--base-url", "http://127.0.0.1:1",), "server unreachable"),
                       (("--base-url", "ftp://x",), "must start with http")):
        r = run(*args)
        assert r.returncode == 2, r.stderr
        assert text in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_unknown_task_and_unreachable_hub_are_one_line_errors(tmp_path):
    """Non-shipped tasks pass through to lm-eval (its 14k task index: slow to load)."""
    with running_oracle() as o:
        for task, text in (("no_such_task_xyz", "unknown task"), ("arc_easy", "needs the Hugging Face hub")):
            r = subprocess.run([sys.executable, "-m", "infx", "eval", "--base-url", o.base_url, "--model", "oracle",
                                "--task", task, "--limit", "2", "--out", str(tmp_path / task)],
                               capture_output=True, text=True, env={**__import__("os").environ,
                                                                    "HF_HUB_OFFLINE": "1"})
            assert r.returncode == 2, r.stderr
            assert text in r.stderr and "Traceback" not in r.stderr
