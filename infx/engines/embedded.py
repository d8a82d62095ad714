"""The embedded default engine: real vLLM on CPU serving the tiny model, as a background service.

``infx engine up`` renders the ``tinyllama`` CPU recipe for a local point, builds the model if
missing, starts the engine in its own process group, waits for ``/health`` and one streamed
completion, and records an :class:`EngineState` under ``.infx/engine/``; ``infx engine down``
reads it back and stops the process group. Without ``--port`` the port is picked right before the start
and a launch that loses it is relaunched on another (:class:`infx.engines.server.RetryingEngine`); the
state records each retry.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict, Unpack

from pydantic import BaseModel, Field

from infx import atomic
from infx.engines.launch import Launch, fingerprint
from infx.engines.ports import PortRetry
from infx.engines.procgroup import kill_group
from infx.engines.server import EngineFailure, EngineProcess, RetryingEngine
from infx.engines.tiny_model import SERVED_NAME, default_model_dir, ensure_tiny_model
from infx.workspace import current as current_workspace

DEFAULT_TIMEOUT_S = 240.0


class EngineState(BaseModel):
    """What ``infx engine up`` left running (``.infx/engine/state.json``)."""

    pid: int
    pgid: int
    port: int
    base_url: str
    model: str  # served model name
    model_dir: str
    log_path: str
    fingerprint: str
    started_at: float
    port_retries: list[PortRetry] = Field(default_factory=list)  # launches that lost their port first

    @property
    def metrics_url(self) -> str:
        return self.base_url + "/metrics"


def state_dir(override: str | Path | None = None) -> Path:
    return Path(override) if override else current_workspace().cache_dir / "engine"


def state_path(override: str | Path | None = None) -> Path:
    return state_dir(override) / "state.json"


def embedded_launch(model_dir: str | Path, port: int, *, served_name: str = SERVED_NAME,
                    extra_args: Sequence[str] = ()) -> Launch:
    """The launch of the embedded engine, rendered from the ``tinyllama`` CPU recipe (``extra_args``: engine
    flags appended to its argv, e.g. ``--speculative-config``; the fingerprint covers them)."""
    from infx.engines.render import render_embedded

    launch = render_embedded(Path(model_dir), port=port, served_name=served_name)
    if not extra_args:
        return launch
    argv = [*launch.argv, *extra_args]
    return launch.model_copy(update={"argv": argv, "fingerprint": fingerprint(launch.image, argv, launch.env)})


def read_state(sdir: str | Path | None = None) -> EngineState | None:
    try:
        return EngineState.model_validate_json(state_path(sdir).read_text())
    except (OSError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def _is_ours(state: EngineState) -> bool:
    """The recorded pid still runs the engine we started (not a recycled pid)."""
    if not _pid_alive(state.pid):
        return False
    try:
        cmd = Path(f"/proc/{state.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True
    return any(b"vllm" in part for part in cmd) and str(state.port).encode() in cmd


def start_embedded(
    *,
    port: int | None = None,
    model_dir: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    log_path: str | Path | None = None,
    probe_tokens: int = 8,
    sdir: str | Path | None = None,
    extra_args: Sequence[str] = (),
) -> tuple[EngineProcess, EngineState]:
    """Start the embedded engine and wait until it serves; raise EngineFailure otherwise."""
    from infx.engines.probe import ProbeError, stream_completion

    mdir = ensure_tiny_model(model_dir or default_model_dir())
    log = Path(log_path) if log_path else state_dir(sdir) / "engine.log"
    # `infx engine up`'s engine outlives the command (stopped by `infx engine down`): not bound to this process
    engine = RetryingEngine(lambda p: embedded_launch(mdir, p, extra_args=extra_args), log, port=port,
                            bound=False)
    engine.start()
    proc = engine.proc
    try:
        engine.wait_ready(timeout)
        proc = engine.proc
        assert engine.launch is not None
        launch = engine.launch
        try:
            stream_completion(launch.base_url, launch.served_model_name, max_tokens=probe_tokens, timeout=60)
        except ProbeError as exc:
            from infx.engines.logparse import FailureKind, tail

            raise EngineFailure(FailureKind.CRASHED, f"/health answers but no completion streamed: {exc}",
                                log_tail=tail(proc.log_text()), log_path=log) from None
    except BaseException:
        engine.proc.stop()
        raise
    assert proc.pid is not None
    state = EngineState(
        pid=proc.pid,
        pgid=os.getpgid(proc.pid),
        port=launch.port,
        base_url=launch.base_url,
        model=launch.served_model_name,
        model_dir=str(mdir),
        log_path=str(log),
        fingerprint=launch.fingerprint,
        started_at=time.time(),
        port_retries=engine.retries,
    )
    return proc, state


class StartOptions(TypedDict, total=False):
    """The keyword arguments of :func:`start_embedded` that :func:`up` passes on."""

    port: int | None
    model_dir: str | Path | None
    timeout: float
    log_path: str | Path | None
    probe_tokens: int


def up(*, sdir: str | Path | None = None, **kwargs: Unpack[StartOptions]) -> EngineState:
    """``infx engine up``: reuse a running embedded engine or start one and record its state."""
    current = read_state(sdir)
    if current is not None and _is_ours(current):
        return current
    proc, state = start_embedded(sdir=sdir, **kwargs)
    atomic.write_text(state_path(sdir), state.model_dump_json(indent=2) + "\n")
    # The engine outlives this process: forget the Popen handle without waiting on it.
    proc.proc = None
    return state


def down(grace: float = 15.0, *, sdir: str | Path | None = None) -> EngineState | None:
    """``infx engine down``: stop the recorded engine's process group; None if none was running."""
    state = read_state(sdir)
    if state is None:
        return None
    if _is_ours(state):
        kill_group(state.pgid, grace=grace)
    state_path(sdir).unlink(missing_ok=True)
    return state


__all__ = ["EngineState", "embedded_launch", "start_embedded", "up", "down", "read_state", "prepare_model",
           "fingerprint"]


def prepare_model(launch: Launch) -> None:
    """Build the launch's local model directory when infx is its builder (``model-source.builder``)."""
    if launch.model_builder == "tiny-model" and launch.runtime == "local":
        ensure_tiny_model(launch.model_path)
