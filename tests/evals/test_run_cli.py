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


def test_eval_interpreter_resolution(tmp_path, monkeypatch):
    """$INFX_EVAL_PYTHON, then .venv-eval near the working directory, then this interpreter when lm-eval is
    installed in it (pip install 'infx[eval]'), then .venv-eval beside infx's own environment."""
    import importlib.util
    import sys
    from pathlib import Path

    from infx.evals import runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INFX_EVAL_PYTHON", "/opt/x/bin/python")
    assert runner.eval_python() == Path("/opt/x/bin/python")
    monkeypatch.delenv("INFX_EVAL_PYTHON")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "lm_eval" else real(name, *a))
    assert runner.eval_python() == Path(sys.executable)
    near = tmp_path / ".venv-eval" / "bin" / "python"
    near.parent.mkdir(parents=True)
    near.write_text("")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert runner.eval_python() == near
    near.unlink()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "lm_eval" else real(name, *a))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "nowhere" / ".venv"))
    import pytest

    with pytest.raises(runner.InfxError, match="make eval-venv"):
        runner.eval_python()
