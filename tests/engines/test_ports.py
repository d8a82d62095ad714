"""Lost ports: the one classifier, the chooser's deterministic hook, and the single-engine relaunch
(:class:`infx.engines.server.RetryingEngine`, what the sweep, ``infx engine up`` and the suite's vLLM server
use) with real processes that really fail to bind a port the test holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.engines import ports
from infx.engines.logparse import FailureKind
from infx.engines.server import EngineFailure, RetryingEngine, port_is_free

from .portfakes import fake_launch, held_port

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "engines"


@pytest.fixture(autouse=True)
def _fresh_first_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_handed_first", set())
    monkeypatch.delenv(ports.PORTS_FIRST_ENV, raising=False)


@pytest.mark.parametrize("engine, text", [
    ("vllm", (FIXTURES / "vllm_cpu_port_in_use.log").read_text()),  # real vLLM-CPU log
    ("vllm-router", (FIXTURES / "vllm_router_port_in_use.log").read_text()),  # real vllm-router 0.1.17 log
    ("sglang", "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): "
               "address already in use"),  # uvicorn, as SGLang and TRT-LLM's serve print it
    ("trt", "OSError: [Errno 98] Address already in use"),
])
def test_lost_port_is_recognised_in_every_engine_log(engine: str, text: str) -> None:
    line = ports.lost_port(engine, text)
    assert line is not None and "already in use" in line.lower()


@pytest.mark.parametrize("text", [
    (FIXTURES / "vllm_cpu_bad_argument.log").read_text(),
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "INFO: Application startup complete.",
])
def test_other_logs_are_not_a_lost_port(text: str) -> None:
    assert ports.lost_port("vllm", text) is None


def test_first_ports_are_handed_out_once_per_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ports.PORTS_FIRST_ENV, "decode_0=41001,engine=41002")
    assert ports.pick_port("engine") == 41002
    assert ports.pick_port("engine") != 41002  # then the kernel's
    assert ports.pick_port("decode_0") == 41001
    assert ports.pick_port("prefill_0") not in (41001, 41002)
    taken = {ports.pick_port("engine") for _ in range(3)}
    assert ports.pick_port("engine", avoid=taken) not in taken


def test_an_engine_that_loses_its_port_is_relaunched_on_another(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "engine.log"
    with held_port() as port:  # the chooser hands out a port this test holds: the race, made certain
        monkeypatch.setenv(ports.PORTS_FIRST_ENV, f"engine={port}")
        engine = RetryingEngine(fake_launch, log)
        engine.start()
        try:
            facts = engine.wait_ready(30)
            assert facts.ready
            assert engine.launch is not None and engine.launch.port != port
            (retry,) = engine.retries
            assert (retry.role, retry.attempt, retry.port, retry.new_port) == ("engine", 1, port, engine.launch.port)
            assert "Address already in use" in retry.message
            assert engine.claims.launches("engine") == 2
            text = log.read_text()  # never hidden: the lost launch's own error stays in the log
            assert "OSError: [Errno 98] Address already in use" in text
            assert f"lost port {port}" in text and f"relaunching on port {engine.launch.port}" in text
        finally:
            engine.proc.stop(grace=5)
    assert port_is_free(engine.launch.port)


def test_a_port_lost_on_every_launch_gives_up_after_the_bound(tmp_path: Path) -> None:
    with held_port() as port:
        engine = RetryingEngine(lambda _p: fake_launch(port), tmp_path / "engine.log")  # always the held one
        engine.start()
        with pytest.raises(EngineFailure) as exc:
            engine.wait_ready(30)
    assert exc.value.kind is FailureKind.PORT_IN_USE
    assert f"each of {ports.MAX_PORT_ATTEMPTS} launches" in exc.value.message
    assert engine.claims.launches("engine") == ports.MAX_PORT_ATTEMPTS == len(engine.retries)
    assert engine.retries[-1].new_port is None


def test_an_engine_failing_for_another_reason_is_not_relaunched(tmp_path: Path) -> None:
    engine = RetryingEngine(lambda p: fake_launch(p, mode="oom"), tmp_path / "engine.log")
    engine.start()
    with pytest.raises(EngineFailure) as exc:
        engine.wait_ready(30)
    assert exc.value.kind is FailureKind.OOM_LOADING  # classified as it is
    assert engine.retries == [] and engine.claims.launches("engine") == 1


def test_a_port_the_user_fixed_is_reported_not_changed(tmp_path: Path) -> None:
    with held_port() as port:
        engine = RetryingEngine(fake_launch, tmp_path / "engine.log", port=port)
        with pytest.raises(EngineFailure) as exc:
            engine.start()
    assert exc.value.kind is FailureKind.PORT_IN_USE and f"port {port}" in exc.value.message
    assert engine.retries == [] and engine.proc.proc is None  # nothing was started


def test_a_relaunch_failing_for_another_reason_is_not_relaunched_again(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The relaunch is judged on its own lines: the earlier launch's "address already in use" (kept in the same
    log) does not turn a later out-of-memory into another lost port."""
    with held_port() as port:
        monkeypatch.setenv(ports.PORTS_FIRST_ENV, f"engine={port}")
        engine = RetryingEngine(lambda p: fake_launch(p, mode="ok" if p == port else "oom"), tmp_path / "e.log")
        engine.start()
        with pytest.raises(EngineFailure) as exc:
            engine.wait_ready(30)
    assert exc.value.kind is FailureKind.OOM_LOADING
    assert [r.port for r in engine.retries] == [port] and engine.claims.launches("engine") == 2
    text = (tmp_path / "e.log").read_text()
    assert "Address already in use" in text and "CUDA out of memory" in text  # both launches kept


def test_portstep_picks_records_and_becomes_the_role(tmp_path: Path) -> None:
    """``python -m infx.engines.portstep``: the step's own pick replaces only the slotted tokens, is recorded,
    and the role runs in the same process (exec)."""
    import json
    import subprocess
    import sys

    record = tmp_path / "decode.port.json"
    code = "import os, sys; print(os.getpid(), *sys.argv[1:])"
    r = subprocess.run([sys.executable, "-m", "infx.engines.portstep", "--record", str(record), "--avoid", "1,2",
                        "--slot=decode_0=3:41000", "--slot=decode_0=5:41000", "--",
                        sys.executable, "-c", code, "41000", "--max-model-len", "http://127.0.0.1:41000"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rec = json.loads(record.read_text())
    port = rec["ports"]["decode_0"]
    assert port not in (1, 2)
    pid, *args = r.stdout.strip().splitlines()[-1].split()
    assert int(pid) == rec["pid"]  # exec: the recorded pid is the role's
    assert args == [str(port), "--max-model-len", f"http://127.0.0.1:{port}"]


def test_portstep_refuses_a_slot_that_does_not_match(tmp_path: Path) -> None:
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "infx.engines.portstep", "--record", str(tmp_path / "r.json"),
                        "--slot=router=1:9999", "--", "true", "8000"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "does not match argv[1]" in r.stderr and not (tmp_path / "r.json").exists()
