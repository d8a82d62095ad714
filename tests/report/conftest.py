"""Synthetic results directories (infx.results.synthetic: a closed-form model, not measurements)."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from infx.results.layout import ResultsDir
from infx.results.synthetic import write_seed_scenario


@pytest.fixture(scope="session")
def _seed_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_seed_scenario(tmp_path_factory.mktemp("seed") / "results").root


@pytest.fixture
def seed_results(_seed_template: Path, tmp_path: Path) -> ResultsDir:
    """A fresh copy of: an official TP=4 baseline run and an unofficial PR run with TP=2 and TP=4
    arms (plus one start-up OOM and one skipped point)."""
    dest = tmp_path / "results"
    shutil.copytree(_seed_template, dest)
    return ResultsDir(dest)


@dataclass
class RunningDashboard:
    base_url: str
    host: str
    port: int
    root: Path


@pytest.fixture(scope="module")
def dashboard(_seed_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDashboard]:
    """The real aiohttp dashboard on a free port of 127.0.0.1, in a background thread, over a
    copy of the seed results shared by the module's tests."""
    from aiohttp import web

    from infx.report.server import make_app

    seed_results = ResultsDir(tmp_path_factory.mktemp("dash") / "results")
    shutil.copytree(_seed_template, seed_results.root)

    loop = asyncio.new_event_loop()
    started = threading.Event()
    state: dict[str, object] = {}

    async def start() -> None:
        runner = web.AppRunner(make_app(seed_results.root), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        state["runner"] = runner
        state["port"] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        started.set()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(30), "dashboard did not start"
    port = int(state["port"])  # type: ignore[arg-type]
    try:
        yield RunningDashboard(f"http://127.0.0.1:{port}", "127.0.0.1", port, seed_results.root)
    finally:
        fut = asyncio.run_coroutine_threadsafe(state["runner"].cleanup(), loop)  # type: ignore[union-attr]
        fut.result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
