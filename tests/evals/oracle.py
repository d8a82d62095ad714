"""A deterministic oracle OpenAI server for eval tests (aiohttp, on 127.0.0.1, in a background thread).

It finds the question a request asks (the last ``Question: `` of the prompt or of the last user
message), looks it up in the shipped GSM8K test set to get its id ``i``, and answers correctly when
``i`` is even and wrongly (final number + 1) when it is odd, in the ``#### N`` form, so both filters
score exactly the even fraction of the questions asked. Modes:

* ``ok``: as above, in ``message.content`` (chat) or ``text`` (completions);
* ``reasoning``: chat replies carry ``content: null`` and the text only in ``reasoning_content``;
* ``error500``: after ``fail_after`` good replies every request gets HTTP 500;
* ``timeout``: after ``fail_after`` good replies requests hang longer than the client waits;
* ``empty``: HTTP 200 with an empty body.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiohttp import web

from infx.evals.tasks import data_dir

_FINAL = re.compile(r"####\s*(-?[0-9.,]+)\s*$")


def _load_test() -> tuple[dict[str, int], list[str]]:
    index: dict[str, int] = {}
    finals: list[str] = []
    with open(data_dir() / "test.jsonl", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            d = json.loads(line)
            index.setdefault(d["question"].strip(), i)
            m = _FINAL.search(d["answer"])
            finals.append(m.group(1).replace(",", "") if m else "0")
    return index, finals


@dataclass
class OracleStats:
    requests: int = 0
    answered: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    unknown: int = 0
    ids: list[int] = field(default_factory=list)


@dataclass
class Oracle:
    base_url: str
    stats: OracleStats


def _question(text: str) -> str:
    tail = text.rsplit("Question: ", 1)[-1]
    return tail.split("\nEnd your response", 1)[0].split("\nAnswer:", 1)[0].strip()


def answer_for(i: int, finals: list[str]) -> str:
    n = finals[i]
    if i % 2 == 0:
        return f"Let me work it out step by step.\n#### {n}"
    try:
        wrong = str(int(float(n)) + 1)
    except ValueError:
        wrong = n + "1"
    return f"I think the result is this.\n#### {wrong}"


def make_app(mode: str = "ok", fail_after: int = 0, delay_s: float = 0.0) -> tuple[web.Application, OracleStats]:
    index, finals = _load_test()
    stats = OracleStats()

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "oracle", "object": "model"}]})

    async def complete(request: web.Request) -> web.StreamResponse:
        stats.requests += 1
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            body = await request.json()
            if mode == "empty":
                return web.Response(status=200, body=b"", content_type="application/json")
            if mode in ("error500", "timeout") and stats.answered >= fail_after:
                if mode == "error500":
                    return web.json_response({"error": "oracle: internal error"}, status=500)
                await asyncio.sleep(3600)
            if delay_s:
                await asyncio.sleep(delay_s)
            chat = "messages" in body
            if chat:
                users = [m for m in body["messages"] if m.get("role") == "user"]
                content = users[-1]["content"] if users else ""
                text = content if isinstance(content, str) else " ".join(
                    c.get("text", "") for c in content if isinstance(c, dict))
            else:
                p = body.get("prompt", "")
                text = p if isinstance(p, str) else (p[0] if p and isinstance(p[0], str) else "")
            i = index.get(_question(text))
            if i is None:
                stats.unknown += 1
                reply = "I do not know."
            else:
                stats.ids.append(i)
                reply = answer_for(i, finals)
            stats.answered += 1
            usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            if chat:
                msg = ({"role": "assistant", "content": None, "reasoning_content": reply} if mode == "reasoning"
                       else {"role": "assistant", "content": reply})
                return web.json_response({"id": "x", "object": "chat.completion", "model": body.get("model"),
                                          "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                                          "usage": usage})
            return web.json_response({"id": "x", "object": "text_completion", "model": body.get("model"),
                                      "choices": [{"index": 0, "text": reply, "finish_reason": "stop"}],
                                      "usage": usage})
        finally:
            stats.in_flight -= 1

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", complete)
    app.router.add_post("/v1/completions", complete)
    return app, stats


@contextmanager
def running_oracle(mode: str = "ok", fail_after: int = 0, delay_s: float = 0.0) -> Iterator[Oracle]:
    """Serve the oracle on a free loopback port for the duration of the ``with`` block."""
    app, stats = make_app(mode, fail_after, delay_s)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
    ready = threading.Event()
    port: list[int] = []

    def serve() -> None:
        asyncio.set_event_loop(loop)

        async def start() -> None:
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
            await site.start()
            port.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
            ready.set()

        loop.run_until_complete(start())
        loop.run_forever()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    ready.wait(10)
    try:
        yield Oracle(f"http://127.0.0.1:{port[0]}", stats)
    finally:
        fut = asyncio.run_coroutine_threadsafe(runner.cleanup(), loop)
        with contextlib.suppress(Exception):
            fut.result(5)
        loop.call_soon_threadsafe(loop.stop)
        t.join(5)


def expected_fraction(limit: int) -> float:
    return len([i for i in range(limit) if i % 2 == 0]) / limit


if __name__ == "__main__":  # manual use: python -m tests.evals.oracle [mode]
    import sys
    import time

    with running_oracle(sys.argv[1] if len(sys.argv) > 1 else "ok") as o:
        print(o.base_url, flush=True)
        while True:
            time.sleep(3600)
