"""Request sources: async iterators of :class:`RequestSpec` over time.

A source decides *what* to send and *when it should be sent*; the driver
(:func:`infx.loadgen.drive.drive`) decides whether a concurrency slot is free and sends it.

- A spec yielded with ``intended_send_ns=None`` means "as soon as a slot is free" (closed loop);
  the driver stamps the moment the slot was freed, so queue delay = client lag.
- A spec yielded with ``intended_send_ns`` set is an open-loop arrival; the source yields it no
  earlier than that time (sleeping until then), so queue delay = schedule lag + waiting for the
  concurrency cap.
- ``on_complete(record)`` is called by the driver when each request ends, so a source can
  react to responses (the agentic replay schedules the next turn of a session from it).

Write a new source by subclassing :class:`RequestSource` and implementing ``specs()``.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator

import numpy as np

from infx.metrics.run_config import Arrival
from infx.records import RequestRecord, RequestSpec

_now = time.monotonic_ns


class RequestSource:
    """Base class: ``async for spec in source`` yields specs over time."""

    def specs(self) -> AsyncIterator[RequestSpec]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __aiter__(self) -> AsyncIterator[RequestSpec]:
        return self.specs()

    def on_complete(self, record: RequestRecord) -> None:
        """Called once per finished request (success or failure). Default: nothing."""


async def sleep_until(t_ns: int) -> None:
    """Return no earlier than ``t_ns`` on the monotonic clock. One ``asyncio.sleep`` is not
    enough: uvloop's timers are whole milliseconds (a 0.3 ms sleep rounds to 0) and its clock is
    cached per loop turn, so a single sleep can wake before ``t_ns``; sleep again for what is left."""
    while (delay := t_ns - _now()) > 0:  # noqa: ASYNC110 - waiting on the clock itself, not on an event
        await asyncio.sleep(delay / 1e9)


def arrival_offsets_s(
    n: int | None, rate: float, *, arrival: Arrival = "poisson", burstiness: float = 1.0, seed: int = 0
) -> Iterator[float]:
    """Send offsets (seconds from the start) for an open loop at ``rate`` req/s.

    ``poisson``: exponential gaps (gamma with shape 1); ``gamma``: gamma gaps with shape
    ``burstiness`` and mean 1/rate (< 1 burstier, > 1 smoother); ``constant``: 1/rate apart.
    The first request goes at offset 0. ``n=None`` yields forever (duration mode)."""
    if rate <= 0:
        raise ValueError("rate must be > 0")
    rng = np.random.default_rng(seed)
    mean_gap = 1.0 / rate
    t = 0.0
    count = itertools.count() if n is None else range(n)
    block: list[float] = []
    for _ in count:
        yield t
        if arrival == "constant":
            t += mean_gap
            continue
        if not block:
            shape = 1.0 if arrival == "poisson" else burstiness
            block = list(rng.gamma(shape, mean_gap / shape, size=4096))
            block.reverse()
        t += block.pop()


class ScheduledSource(RequestSource):
    """Specs from an iterable, sent closed-loop (``offsets_s=None``) or at ``start_ns +
    offset`` (open loop); stops at the end of the iterable, of the offsets, or at ``deadline_ns``."""

    def __init__(
        self,
        specs: Iterable[RequestSpec],
        *,
        offsets_s: Iterable[float] | None = None,
        start_ns: int | None = None,
        deadline_ns: int | None = None,
        on_complete: Callable[[RequestRecord], None] | None = None,
    ) -> None:
        self._specs = specs
        self._offsets = offsets_s
        self._start_ns = start_ns
        self._deadline_ns = deadline_ns
        self._on_complete = on_complete

    def on_complete(self, record: RequestRecord) -> None:
        if self._on_complete is not None:
            self._on_complete(record)

    async def specs(self) -> AsyncIterator[RequestSpec]:
        start = self._start_ns if self._start_ns is not None else _now()
        deadline = self._deadline_ns
        if self._offsets is None:
            for spec in self._specs:
                if deadline is not None and _now() >= deadline:
                    return
                yield spec
            return
        for spec, off in zip(self._specs, self._offsets, strict=False):  # either may run out first
            t = start + int(off * 1e9)
            if deadline is not None and t >= deadline:
                return
            await sleep_until(t)
            spec.intended_send_ns = t
            yield spec
