"""Request sources and the driver: arrival schedules, concurrency cap, queue delay, on_complete."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from infx.loadgen.drive import Counters, drive
from infx.loadgen.http import Target, make_session
from infx.loadgen.source import RequestSource, ScheduledSource, arrival_offsets_s, sleep_until
from infx.loadgen.testserver import SyntheticServer
from infx.records import RequestRecord, RequestSpec


def test_constant_arrivals():
    assert list(arrival_offsets_s(4, 10.0, arrival="constant")) == pytest.approx([0, 0.1, 0.2, 0.3])


@pytest.mark.parametrize("arrival,burst", [("poisson", 1.0), ("gamma", 0.5), ("gamma", 4.0)])
def test_random_arrivals_have_the_requested_mean_rate_and_shape(arrival, burst):
    offs = np.array(list(arrival_offsets_s(20000, 50.0, arrival=arrival, burstiness=burst, seed=3)))
    gaps = np.diff(offs)
    assert offs[0] == 0
    assert gaps.mean() == pytest.approx(1 / 50, rel=0.03)
    # gamma(shape k): coefficient of variation 1/sqrt(k); Poisson: 1
    k = 1.0 if arrival == "poisson" else burst
    assert gaps.std() / gaps.mean() == pytest.approx(1 / np.sqrt(k), rel=0.05)


def test_arrivals_are_reproducible_and_infinite_mode():
    a = list(arrival_offsets_s(100, 5.0, seed=7))
    b = list(arrival_offsets_s(100, 5.0, seed=7))
    assert a == b
    it = arrival_offsets_s(None, 5.0, seed=7)
    assert [next(it) for _ in range(100)] == a
    with pytest.raises(ValueError):
        next(arrival_offsets_s(1, 0.0))


def _specs(n: int, max_tokens: int = 4) -> list[RequestSpec]:
    return [RequestSpec(request_id=f"r-{i}", prompt="x", max_tokens=max_tokens) for i in range(n)]


async def _drive(url: str, source: RequestSource, cap: int | None) -> tuple[list[RequestRecord], Counters]:
    counters = Counters()
    target = Target(base_url=url, model="m", stall_timeout_s=2, total_timeout_s=5)
    async with make_session() as session:
        recs = await drive(source, session, target, max_concurrency=cap, counters=counters)
    return recs, counters


def test_sleep_until_never_wakes_before_the_target_on_uvloop():
    # the load generator's loop: uvloop's millisecond timers round a 0.3 ms sleep to 0 and a 1.4 ms one
    # to 1 ms, so one sleep wakes early; a sharded run then stamped closed-loop sends before the window
    uvloop = pytest.importorskip("uvloop")

    async def early_wakes() -> list[int]:
        early = []
        for delay_ns in [300_000, 1_400_000, 2_700_000, 50_000] * 5:
            target = time.monotonic_ns() + delay_ns
            await sleep_until(target)
            if time.monotonic_ns() < target:
                early.append(delay_ns)
        return early

    assert uvloop.run(early_wakes()) == []


def test_closed_loop_never_exceeds_concurrency_and_stamps_slot_time():
    with SyntheticServer(ttft_s=0.005, token_interval_s=0.002) as srv:
        recs, counters = asyncio.run(_drive(srv.base_url, ScheduledSource(_specs(30)), cap=3))
    assert len(recs) == 30 and all(r.ok for r in recs)
    assert counters.issued == 30 and counters.completed == 30 and counters.output_tokens == 120
    # at any send instant, at most 3 requests are in flight
    for r in recs:
        inflight = sum(1 for o in recs if o.send_ns <= r.send_ns < o.end_ns)
        assert inflight <= 3
    # closed loop: intended = the moment a slot was freed, never before: when the k-th request (in send
    # order) was due, at least k-3 requests had ended; and it went out at or after that instant
    ends = sorted(r.end_ns for r in recs)
    for k, r in enumerate(sorted(recs, key=lambda r: r.send_ns)):
        assert r.send_ns >= r.intended_send_ns
        if k >= 3:
            assert ends[k - 3] <= r.intended_send_ns


def test_open_loop_sends_on_schedule_and_records_cap_wait():
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.02) as srv:  # each request ~ 80 ms
        start = time.monotonic_ns() + 20_000_000
        offsets = [0.0, 0.0, 0.01, 0.01]  # the first two due together: both go out in one loop turn
        src = ScheduledSource(_specs(4), offsets_s=offsets, start_ns=start)
        recs, _ = asyncio.run(_drive(srv.base_url, src, cap=2))
    recs.sort(key=lambda r: r.request_id)
    for r, off in zip(recs, offsets, strict=True):
        assert r.intended_send_ns == start + int(off * 1e9)
        assert r.send_ns >= r.intended_send_ns
    # the first two go before anything ended (no cap wait); the next two each wait for a slot: the third
    # after the first request ended, the fourth after the second, so their lag is recorded, not hidden
    ends = sorted(r.end_ns for r in recs)
    assert recs[0].send_ns < ends[0] and recs[1].send_ns < ends[0]
    assert recs[2].send_ns >= ends[0] > recs[2].intended_send_ns
    assert recs[3].send_ns >= ends[1] > recs[3].intended_send_ns


def test_source_deadline_and_on_complete_feedback():
    seen: list[str] = []

    class Chain(RequestSource):
        """Each request is issued only after the previous one completed (agentic-style)."""

        def __init__(self) -> None:
            self.done = asyncio.Event()

        async def specs(self):
            for i in range(3):
                self.done.clear()
                yield RequestSpec(request_id=f"s-{i}", prompt="x", max_tokens=2, session_id="s", turn=i)
                await self.done.wait()

        def on_complete(self, record: RequestRecord) -> None:
            seen.append(record.request_id)
            self.done.set()

    with SyntheticServer(ttft_s=0.001, token_interval_s=0.001) as srv:
        recs, _ = asyncio.run(_drive(srv.base_url, Chain(), cap=None))
        # a deadline stops an endless source
        deadline = time.monotonic_ns() + 200_000_000
        endless = ScheduledSource((RequestSpec(request_id=f"e-{i}", prompt="x", max_tokens=1) for i in range(10**9)),
                                  deadline_ns=deadline)
        recs2, _ = asyncio.run(_drive(srv.base_url, endless, cap=2))
    assert seen == ["s-0", "s-1", "s-2"]
    assert [r.turn for r in recs] == [0, 1, 2]
    assert all(recs[i].send_ns >= recs[i - 1].end_ns for i in (1, 2))
    assert 2 <= len(recs2) < 10**6 and all(r.ok for r in recs2)  # the cap's two went; the source stopped
    assert all(r.intended_send_ns < deadline for r in recs2)  # nothing was issued after the deadline


def test_cancel_turns_inflight_into_cancelled_records():
    async def go(url: str) -> list[RequestRecord]:
        records: list[RequestRecord] = []
        target = Target(base_url=url, model="m")
        async with make_session() as session:
            task = asyncio.create_task(drive(ScheduledSource(_specs(10, max_tokens=1000)), session, target,
                                             max_concurrency=4, records=records))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return records

    with SyntheticServer(ttft_s=0.001, token_interval_s=0.01) as srv:
        records = asyncio.run(go(srv.base_url))
    assert len(records) == 4
    assert {r.error_class for r in records} == {"cancelled"}
