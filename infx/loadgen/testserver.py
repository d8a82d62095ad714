"""A synthetic, fault-injecting OpenAI-compatible SSE server for tests (not an engine).

It streams ``max_tokens`` tokens, one per event, ``token_interval_s`` apart (after
``ttft_s``), with vLLM's stream shape (``continuous_usage_stats``, ``return_token_ids``, a
final usage chunk, ``[DONE]``). Faults are chosen per request by the ``x-infx-fault`` header
or by cycling through ``faults``:

``ok`` | ``http_500`` | ``http_429`` | ``reset`` (drop the connection mid-stream) |
``malformed`` (a non-JSON data line) | ``stall`` (stop sending, keep the connection) |
``trickle`` (keep sending tokens forever: a stream that never finishes) | ``no_finish``
(end the body without a finish_reason) | ``error_event`` (an error object in the stream) |
``empty`` (finish without any token) | ``double_finish``.

Used by ``tests/loadgen`` and by ``infx bench`` smoke runs; it runs in a background thread
with its own event loop on a free 127.0.0.1 port.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web

FAULTS = (
    "ok",
    "http_500",
    "http_429",
    "reset",
    "malformed",
    "stall",
    "trickle",
    "no_finish",
    "error_event",
    "empty",
    "double_finish",
)


async def _health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _version(request: web.Request) -> web.Response:
    return web.json_response({"version": "synthetic"})


class SyntheticServer:
    def __init__(
        self,
        *,
        ttft_s: float = 0.002,
        token_interval_s: float = 0.001,
        faults: Sequence[str] = ("ok",),
        tokens_per_event: int = 1,
        empty_text_every: int = 0,
        paced: bool = False,
        slots: int | None = None,
        reasoning_tokens: int = 0,
        reasoning_field: str = "reasoning_content",
    ) -> None:
        for f in faults:
            if f not in FAULTS:
                raise ValueError(f"unknown fault {f!r}")
        self.ttft_s = ttft_s
        self.token_interval_s = token_interval_s
        self.tokens_per_event = tokens_per_event
        self.empty_text_every = empty_text_every  # every k-th token has empty text (partial UTF-8)
        # paced: event j is due at (first event) + j * token_interval_s on the loop clock, so a late
        # wake-up on a busy machine is caught up instead of adding to every later token: the decode
        # speed stays known exactly (the verdict tests compare two such servers)
        self.paced = paced
        # slots: at most this many requests decode at once (a known capacity); the rest wait for a
        # free slot before their first token, so TTFT grows past the capacity
        self.slots = slots
        # chat: the first ``reasoning_tokens`` tokens stream as ``delta.<reasoning_field>`` (a reasoning model's
        # thinking), the rest as ``delta.content``
        self.reasoning_tokens = reasoning_tokens
        self.reasoning_field = reasoning_field
        self._slots: asyncio.Semaphore | None = None
        self._faults = itertools.cycle(faults)
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []  # request bodies seen (for assertions)
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> SyntheticServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="infx-synthetic-server", daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("synthetic server did not start")

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        app = web.Application()
        app.router.add_post("/v1/completions", self._handle)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_get("/health", _health)
        app.router.add_get("/version", _version)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=1024)
        loop.run_until_complete(site.start())
        self.port = int(self._runner.addresses[0][1])
        self._started.set()
        loop.run_forever()
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(self._runner.cleanup())
        loop.close()

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    # --- behaviour ---------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            if self.slots is not None:
                if self._slots is None:
                    self._slots = asyncio.Semaphore(self.slots)  # created on the server's loop
                async with self._slots:
                    return await self._serve(request)
            return await self._serve(request)
        except (ConnectionError, asyncio.CancelledError):
            # the client went away (timeouts, resets): nothing to answer
            raise web.HTTPException() from None  # closes the connection quietly

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            fault = request.headers.get("x-infx-fault") or next(self._faults)
        if fault == "http_500":
            return web.json_response({"error": {"message": "synthetic internal error"}}, status=500)
        if fault == "http_429":
            return web.json_response({"error": {"message": "synthetic rate limit"}}, status=429)
        chat = request.path.endswith("/chat/completions")
        n = int(body.get("max_tokens") or 16)
        opts = body.get("stream_options") or {}
        usage_on = bool(opts.get("include_usage"))
        cont = usage_on and bool(opts.get("continuous_usage_stats"))
        ids_on = bool(body.get("return_token_ids"))
        prompt = body.get("prompt") if not chat else json.dumps(body.get("messages"))
        prompt_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt or "").split())

        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)

        async def send(obj: dict[str, Any] | str) -> None:
            data = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))
            await resp.write(f"data: {data}\n\n".encode())

        def chunk(text: str, k: int, done_tokens: int, finish: str | None, role: bool = False) -> dict[str, Any]:
            if chat:
                thinking = not role and k > 0 and done_tokens <= self.reasoning_tokens
                delta: dict[str, Any] = ({"role": "assistant", "content": ""} if role
                                         else {self.reasoning_field: text} if thinking else {"content": text})
                choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": text, "finish_reason": finish}
            if ids_on:
                choice["token_ids"] = list(range(done_tokens - k, done_tokens))
            # vLLM's labels: AIPerf and other OpenAI clients check them
            obj = {"id": "cmpl-synthetic", "object": "chat.completion.chunk" if chat else "text_completion",
                   "model": body.get("model"), "choices": [choice]}
            if cont:
                obj["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": done_tokens,
                                "total_tokens": prompt_tokens + done_tokens}
            return obj

        if chat:
            await send(chunk("", 0, 0, None, role=True))
        await asyncio.sleep(self.ttft_s)
        if fault == "empty":
            await send(chunk("", 0, 0, "stop"))
            await self._final(send, usage_on, prompt_tokens, 0, chat)
            return resp
        if fault == "error_event":
            await send(chunk("tok", 1, 1, None))
            await send({"error": {"message": "synthetic engine error", "code": 500}})
            await send("[DONE]")
            return resp
        limit = 10**9 if fault == "trickle" else n
        done = 0
        i = 0
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        while done < limit:
            k = min(self.tokens_per_event, limit - done)
            done += k
            i += 1
            last = done >= limit
            if fault == "reset" and done > max(1, n // 2):
                assert request.transport is not None
                request.transport.abort()
                return resp
            if fault == "stall" and done > max(1, n // 2):
                await asyncio.sleep(3600)
            if fault == "malformed" and done > max(1, n // 2):
                await resp.write(b"data: {not json\n\n")
                await send("[DONE]")
                return resp
            empty = self.empty_text_every > 0 and i % self.empty_text_every == 0
            finish = "length" if last and fault not in ("no_finish", "trickle") else None
            await send(chunk("" if empty else " t", k, done, finish))
            if last and fault == "double_finish":
                await send(chunk("", 0, done, "stop"))
            if not last:
                if self.paced:
                    await asyncio.sleep(max(0.0, t0 + i * self.token_interval_s - loop.time()))
                else:
                    await asyncio.sleep(self.token_interval_s)
        await self._final(send, usage_on, prompt_tokens, done, chat)
        return resp

    @staticmethod
    async def _final(send: Callable[[dict[str, Any] | str], Awaitable[None]], usage_on: bool, prompt_tokens: int,
                     done: int, chat: bool = False) -> None:
        if usage_on:
            await send(
                {
                    "id": "cmpl-synthetic",
                    "object": "chat.completion.chunk" if chat else "text_completion",
                    "choices": [],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": done,
                              "total_tokens": prompt_tokens + done},
                }
            )
        await send("[DONE]")


