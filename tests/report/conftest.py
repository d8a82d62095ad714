"""The dashboard over a copy of the synthetic seed results (``_seed_template``, tests/conftest.py)."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from infx.results.layout import ResultsDir


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
