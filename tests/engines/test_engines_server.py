"""EngineProcess with real (non-engine) processes: readiness, crash classification, time-out,
busy port, process-group cleanup. The vLLM versions of these checks are in test_engines_e2e.py."""

from __future__ import annotations

import os
import socket
import sys
import textwrap
import time
from pathlib import Path

import pytest

from infx.engines.launch import Launch
from infx.engines.logparse import FailureKind
from infx.engines.server import EngineFailure, EngineProcess, RetryingEngine, free_port, port_is_free

from .helpers import pid_alive


def _launch(code: str, port: int, readiness: str = "/health") -> Launch:
    return Launch(engine="vllm", recipe="test", image="local",
                  argv=[sys.executable, "-c", textwrap.dedent(code), str(port)],
                  fingerprint="x", port=port, served_model_name="m", model_path="m", readiness_path=readiness)


SERVER = """
import http.server, os, subprocess, sys, time
port = int(sys.argv[1])
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("child", child.pid, flush=True)
time.sleep(0.5)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404); self.end_headers()
    def log_message(self, *a): pass
print("INFO CPU KV cache size: 4,096 tokens, Maximum concurrency for 2,048 tokens per request: 2.00x", flush=True)
print("INFO:     Application startup complete.", flush=True)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def test_ready_then_stop_kills_the_whole_group(tmp_path: Path) -> None:
    # picked right before the start and relaunched if another process takes it first (as the sweep does)
    engine = RetryingEngine(lambda p: _launch(SERVER, p), tmp_path / "e.log")
    engine.start()
    facts = engine.wait_ready(timeout=30)
    proc = engine.proc
    assert engine.launch is not None
    port = engine.launch.port
    assert facts.ready and facts.kv_cache_tokens == 4096 and facts.max_concurrency == 2.0
    child = int(next(line for line in proc.log_text().splitlines() if line.startswith("child")).split()[1])
    assert pid_alive(child) and proc.pid is not None and pid_alive(proc.pid)
    # its own process group (what stop() signals), but our session: under Linux's autogroup scheduler a
    # session of its own would make the engine an equal CPU-share group against the load generator
    assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
    assert os.getsid(proc.pid) == os.getsid(0)
    proc.stop(grace=5)
    time.sleep(0.3)
    assert not pid_alive(proc.pid) and not pid_alive(child)
    assert port_is_free(port)


def test_crash_is_classified_at_once(tmp_path: Path) -> None:
    code = """
    import sys, time
    time.sleep(0.3)
    print("usage: api_server.py [-h] [--model MODEL]", file=sys.stderr)
    print("api_server.py: error: unrecognized arguments: --bogus 3", file=sys.stderr)
    sys.exit(2)
    """
    proc = EngineProcess()
    proc.start(_launch(code, free_port()), tmp_path / "e.log")
    t0 = time.monotonic()
    with pytest.raises(EngineFailure) as exc:
        proc.wait_ready(timeout=300)
    assert time.monotonic() - t0 < 10
    e = exc.value
    assert e.kind is FailureKind.BAD_ARGUMENT and e.returncode == 2
    assert "unrecognized arguments: --bogus 3" in e.log_tail
    assert "engine failed (bad-argument)" in str(e)


def test_unknown_crash_is_reported_as_crashed(tmp_path: Path) -> None:
    proc = EngineProcess()
    proc.start(_launch("import sys; print('bye'); sys.exit(3)", free_port()), tmp_path / "e.log")
    with pytest.raises(EngineFailure) as exc:
        proc.wait_ready(timeout=300)
    assert exc.value.kind is FailureKind.CRASHED and exc.value.returncode == 3 and "bye" in exc.value.log_tail


def test_timeout_stops_the_engine(tmp_path: Path) -> None:
    proc = EngineProcess()
    proc.start(_launch("import time; print('loading...', flush=True); time.sleep(600)", free_port()),
               tmp_path / "e.log")
    deadline = time.monotonic() + 30  # the child has printed (a loaded machine starts Python slowly)
    while "loading..." not in (tmp_path / "e.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(EngineFailure) as exc:
        proc.wait_ready(timeout=1.5)
    assert exc.value.kind is FailureKind.TIMEOUT and "loading..." in exc.value.log_tail
    assert proc.pid is not None and not pid_alive(proc.pid)


def test_busy_port_is_reported_before_launch(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert not port_is_free(port)
        proc = EngineProcess()
        with pytest.raises(EngineFailure) as exc:
            proc.start(_launch("raise SystemExit(0)", port), tmp_path / "e.log")
        assert exc.value.kind is FailureKind.PORT_IN_USE and f"port {port}" in str(exc.value)
        assert proc.proc is None  # nothing was started
