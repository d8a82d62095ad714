"""``infx run --evals-only`` selects only eval points and plans their launch at the eval context."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARGS = ["run", "--config-files", str(REPO / "configs/cpu-master.yaml"), "--runner-config",
        str(REPO / "configs/runners.yaml"), "--config-keys", "tinyllama-bf16-cpu-vllm-eval"]


def infx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", *args], cwd=REPO, capture_output=True, text=True)


def test_evals_only_plans_eval_points_at_the_eval_context(tmp_path):
    r = infx(*ARGS, "--evals-only", "--eval-limit", "8", "--dry-run", "--results", str(tmp_path))
    assert r.returncode == 0, r.stderr
    plan = json.loads(next(tmp_path.glob("*/plan.json")).read_text())
    (row,) = plan["points"].values()
    assert row["eval-only"] is True and row["run-eval"] is True
    assert row["max-model-len"] == 8192  # min(8192 + 1024 + 256, the card's max-context 8192)
    assert plan["request"]["evals"] == "evals-only" and plan["request"]["eval_limit"] == 8
    # without evals the same entry plans a throughput point at its own 8k1k context
    r = infx(*ARGS, "--dry-run", "--results", str(tmp_path / "t"))
    (row,) = json.loads(next((tmp_path / "t").glob("*/plan.json")).read_text())["points"].values()
    assert row["max-model-len"] == 9472 and not row.get("eval-only")


def test_bad_eval_options_are_one_line_errors(tmp_path):
    for extra, text in ((["--evals-only", "--evals", "all"], "contradicts"), (["--eval-limit", "0"], ">= 1")):
        r = infx(*ARGS, *extra, "--dry-run", "--results", str(tmp_path))
        assert r.returncode == 2 and text in r.stderr and "Traceback" not in r.stderr, r.stderr
