"""A fake OpenAI chat server for the replay's fast tests (no real engine in the fast suite).

It counts prompt tokens with the real tokenizer plus a fixed chat-template cost, streams
``max_tokens`` one-token SSE events with a small delay, and records what the replay did:
concurrent requests (high-water mark), session headers, prompts.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from aiohttp import web

CHAT_OVERHEAD = 9  # tokens the fake "chat template" adds


@dataclass
class FakeServer:
    count_tokens: object  # callable(str) -> int
    token_delay_s: float = 0.002
    fail_every: int = 0  # every n-th request gets HTTP 500 (0: never)
    in_flight: int = 0
    high_water: int = 0
    requests: list[dict] = field(default_factory=list)
    base_url: str = ""
    _runner: web.AppRunner | None = None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append({"headers": dict(request.headers), "body": body})
        n = len(self.requests)
        if self.fail_every and n % self.fail_every == 0:
            return web.Response(status=500, text="injected failure")
        content = "".join(m["content"] for m in body["messages"])
        prompt_tokens = self.count_tokens(content) + CHAT_OVERHEAD
        self.in_flight += 1
        self.high_water = max(self.high_water, self.in_flight)
        try:
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            k = body["max_tokens"]
            for i in range(k):
                await asyncio.sleep(self.token_delay_s)
                finish = "length" if i == k - 1 else None
                chunk = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": finish}],
                         "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": i + 1,
                                   "total_tokens": prompt_tokens + i + 1}}
                await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            final = {"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": k,
                                              "total_tokens": prompt_tokens + k}}
            await resp.write(b"data: " + json.dumps(final).encode() + b"\n\ndata: [DONE]\n\n")
            await resp.write_eof()
            return resp
        finally:
            self.in_flight -= 1

    async def start(self) -> FakeServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # aiohttp types _server as optional; started above
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
