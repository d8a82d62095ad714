"""An engine that stops answering mid-stream without dying: its point ends at the first stalled request (no
waiting out every request's stall timeout) as ``engine-stalled`` with a one-line reason, the engine's whole
process group is stopped, the group's remaining points are left for the next run, the sweep goes on with the
other launches, and the same sweep again measures what is missing, each point once.

The engine is a real process started through the sweep's real launch path (the local starter: its own process
group, the parent-death signal, the workspace's engine record) and measured by the real load generator; it is
a stand-in server (``stall_server.py``) because no GPU engine can stall on cue in a fast test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infx.engines import reaper
from infx.engines.launch import Launch
from infx.engines.procgroup import group_alive
from infx.matrix.point import Point
from infx.sweep.execute import Wiring, run_sweep
from infx.sweep.local import LocalMeasurer, LocalStarter
from infx.sweep.prepare import LoadProfile, RunRequest, prepare
from infx.telemetry.session import TelemetryOptions
from tests.faults.killing import REPO, records
from tests.sweep.fakes import make_point

SERVER = Path(__file__).with_name("stall_server.py")
STALL_TIMEOUT_S = 1.0


def _sweep(tmp_path: Path, model_dir: Path, started: list[int]):  # type: ignore[no-untyped-def]
    """The same sweep each time: arm ``a`` (conc 1, 2: one launch) and arm ``b`` (conc 1: another launch)."""
    stall_file = tmp_path / "stalled-once"

    def render(point: Point, port: int) -> Launch:
        return Launch(engine="vllm", recipe="stall-stand-in", image="local",
                      argv=[sys.executable, str(SERVER), str(port), str(stall_file), "40"],
                      fingerprint=f"fp-{point.model_prefix}", port=port, served_model_name="m",
                      model_path=str(model_dir))

    class Starter(LocalStarter):
        def start(self, group, log_path):  # type: ignore[no-untyped-def]
            engine = super().start(group, log_path)
            started.append(engine.proc.pid)
            return engine

    load = LoadProfile(prompts_per_conc=2, min_prompts=4, warmup_per_conc=0, max_isl=32, max_osl=16,
                       stall_timeout_s=STALL_TIMEOUT_S)
    req = RunRequest(config_files=[], runner_config="", config_keys=["k"], results=str(tmp_path / "results"),
                     run_id="r", preflight=False, load=load, ready_timeout=60)
    points = [make_point("a", 1, 1), make_point("a", 1, 2), make_point("b", 1, 1)]
    prep = prepare(req, points=points, render=lambda p: render(p, 8000))
    measurer = LocalMeasurer(load, telemetry=TelemetryOptions(enabled=False))
    return prep, Wiring(Starter(render), measurer)


@pytest.mark.timeout(120)
def test_a_stalled_engine_ends_its_point_is_stopped_and_the_rerun_measures_what_is_missing(
        tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "infx.toml").write_text("")
    monkeypatch.setenv("INFX_WORKSPACE", str(ws))  # engines are recorded in the workspace, as `infx run` does
    started: list[int] = []
    prep, wiring = _sweep(tmp_path, tiny_model_dir, started)
    rd = prep.run_dir

    first = run_sweep(prep, wiring)

    # the stalled point: failed with its class and a one-line reason, at the first stalled request
    st = rd.read_status("a-tp1-c1")
    assert st is not None and st.state == "failed" and st.failure_class == "engine-stalled", st
    assert "\n" not in st.reason and "stopped answering mid-stream" in st.reason
    assert f"no data for {STALL_TIMEOUT_S:g} s" in st.reason and "the engine was stopped" in st.reason
    result = rd.read_result("a-tp1-c1")
    assert result is not None and result.metrics.error_classes.get("timeout_stall", 0) >= 1
    assert result.metrics.issued < 4  # the point ended at the stall: the rest of its requests were never sent
    assert "stalling" in (tmp_path / "stalled-once").read_text() + rd.group_log("fp-a").read_text()
    # the engine and its worker are gone; its record with them
    assert len(started) == 2
    assert not group_alive(started[0]) and reaper.start_ticks(started[0]) is None
    assert records(ws) == []
    # its launch's other point was left for the next run; the other launch went on
    assert rd.read_status("a-tp1-c2") is None
    assert first.not_run == ["a-tp1-c2"] and first.failed == ["a-tp1-c1"] and first.done == ["b-tp1-c1"]
    assert {g.fingerprint: (g.state, g.reason) for g in rd.groups()}["fp-a"] == ("failed", "engine-stalled")

    # the same sweep again: only what is missing, once; the stalled point keeps its failure (--rerun-failed)
    prep2, wiring2 = _sweep(tmp_path, tiny_model_dir, started)
    second = run_sweep(prep2, wiring2)
    assert second.done == ["a-tp1-c2"] and second.reused == ["b-tp1-c1"] and second.launches == 1
    assert second.previously_failed == ["a-tp1-c1"] and not second.failed and not second.not_run
    st2 = rd.read_status("a-tp1-c2")
    assert st2 is not None and st2.state == "done"
    assert len(started) == 3 and not any(group_alive(pid) for pid in started)
    assert records(ws) == []
    assert [p for p in rd.root.rglob("*") if p.name.endswith(".tmp")] == []


@pytest.mark.timeout(60)
def test_the_load_generator_sends_nothing_after_the_first_stalled_request(tiny_model_dir: Path) -> None:
    """``stop_on_stall`` (what a sweep's points run with): the first request that gets no byte for the stall
    timeout ends the run; requests in flight come back cancelled, none is sent after it, and the result is
    complete (nothing was interrupted) with the stall counted. Without it every request is sent."""
    from infx.loadgen.config import BenchConfig
    from infx.loadgen.runner import execute
    from infx.loadgen.testserver import SyntheticServer

    cfg = dict(model="m", tokenizer=str(tiny_model_dir), input_len=16, output_len=8, ignore_eos=True,
               progress=False, concurrency=2, num_prompts=12, stall_timeout_s=1.0, total_timeout_s=30.0)
    with SyntheticServer(faults=("ok", "ok", "ok", "stall")) as srv:  # every fourth request stalls
        stopped = execute(BenchConfig(base_url=srv.base_url, stop_on_stall=True, **cfg)).result
        full = execute(BenchConfig(base_url=srv.base_url, **cfg)).result
    assert stopped.complete and stopped.metrics.error_classes.get("timeout_stall") == 1
    assert stopped.metrics.issued < 12 and len(srv.requests) == stopped.metrics.issued + 12
    assert "stop_on_stall" not in stopped.config.model_dump()  # how the run went, not a setting it records
    assert full.metrics.issued == 12 and full.metrics.error_classes.get("timeout_stall") == 3


def test_a_bad_stall_timeout_is_one_line_exit_2(tmp_path: Path) -> None:
    got = subprocess.run([sys.executable, "-m", "infx", "run", "--config-keys", "tinyllama-bf16-cpu-vllm",
                          "--stall-timeout", "0", "--results", str(tmp_path / "results")], cwd=REPO,
                         capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert got.returncode == 2, got.stderr
    assert got.stderr.strip().splitlines() == ["error: --stall-timeout must be > 0, not 0.0 (at --stall-timeout)"]
    assert not (tmp_path / "results").exists()
