"""The driver: pull specs from a request source, send each when a concurrency slot is free,
collect one record per request. One asyncio loop, one aiohttp session."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from infx.loadgen.http import Target, stream_request
from infx.loadgen.source import RequestSource
from infx.records import RequestRecord, RequestSpec

_now = time.monotonic_ns


@dataclass
class Counters:
    """Live progress, read by the progress display (plain ints: one writer, the loop)."""

    issued: int = 0
    issued_measured: int = 0  # issued, warmup requests excluded (what the accounting check expects)
    completed: int = 0
    failed: int = 0
    output_tokens: int = 0

    def add(self, rec: RequestRecord) -> None:
        if rec.ok:
            self.completed += 1
            self.output_tokens += rec.output_tokens
        else:
            self.failed += 1


def _slots(cap: int) -> asyncio.Queue[int] | None:
    """The concurrency cap as a queue of free slots, each holding the time it came free (None: no cap)."""
    if cap <= 0:
        return None
    slots: asyncio.Queue[int] = asyncio.Queue()
    t0 = _now()
    for _ in range(cap):
        slots.put_nowait(t0)
    return slots


async def drive(
    source: RequestSource,
    session: aiohttp.ClientSession,
    target: Target,
    *,
    max_concurrency: int | None,
    worker: int | None = None,
    counters: Counters | None = None,
    on_record: Callable[[RequestRecord], None] | None = None,
    records: list[RequestRecord] | None = None,
) -> list[RequestRecord]:
    """Run ``source`` to exhaustion and wait for every request. ``max_concurrency`` None/0:
    no cap (pure open loop). If this coroutine is cancelled, in-flight requests are cancelled
    too and come back as ``cancelled`` records appended to ``records`` (pass your own list to
    keep them); the ``CancelledError`` is then re-raised. With ``target.stop_on_stall`` the first request that
    stalls ends the run early: no request is sent after it, and those in flight come back ``cancelled``."""
    records = records if records is not None else []
    counters = counters if counters is not None else Counters()
    slots = _slots(max_concurrency or 0)
    inflight: set[asyncio.Task[None]] = set()
    unstarted: dict[asyncio.Task[None], RequestSpec] = {}  # cancelled before its first step: no record yet
    stalled = False  # with ``target.stop_on_stall``: a request got no byte for the stall timeout

    def finish(rec: RequestRecord) -> None:
        nonlocal stalled
        stalled = stalled or (target.stop_on_stall and rec.error_class == "timeout_stall")
        records.append(rec)
        counters.add(rec)
        source.on_complete(rec)
        if on_record is not None:
            on_record(rec)

    async def one(spec: RequestSpec) -> None:
        task = asyncio.current_task()
        if task is not None:
            unstarted.pop(task, None)
        send_ns = _now()
        try:
            rec = await stream_request(session, spec, target, worker=worker)
        except asyncio.CancelledError:
            rec = RequestRecord.cancelled(spec, send_ns, _now(), worker)
        except Exception as exc:
            msg = f"{type(exc).__name__}: {exc}"
            rec = RequestRecord.for_spec(spec, send_ns, _now(), worker, error=("client_error", msg[:300]))
        finally:
            if slots is not None:
                slots.put_nowait(_now())
        finish(rec)

    async def cancel_inflight() -> None:
        for task in list(inflight):
            task.cancel()
        if inflight:
            await asyncio.wait(list(inflight))
        for spec in unstarted.values():
            now = _now()
            finish(RequestRecord.cancelled(spec, now, now, worker))
        unstarted.clear()

    agen = source.__aiter__()
    try:
        while True:
            t_free = await slots.get() if slots is not None else None
            if stalled:
                break
            try:
                spec = await agen.__anext__()
            except StopAsyncIteration:
                break
            if stalled:
                break
            if spec.intended_send_ns is None:
                spec.intended_send_ns = t_free if t_free is not None else _now()
            counters.issued += 1
            if not spec.warmup:
                counters.issued_measured += 1
            task = asyncio.create_task(one(spec))
            unstarted[task] = spec
            inflight.add(task)
            task.add_done_callback(inflight.discard)
        while inflight:
            if stalled:  # the rest would wait the stall timeout each: the server stopped answering
                await cancel_inflight()
                break
            await asyncio.wait(list(inflight), return_when=asyncio.FIRST_COMPLETED if target.stop_on_stall
                               else asyncio.ALL_COMPLETED)
    except asyncio.CancelledError:
        await cancel_inflight()
        raise
    finally:
        aclose = getattr(agen, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
    return records
