"""The measured phase's one helper: the progress ticker and Ctrl-C, the same for a dataset shard and a
custom request source."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable

from infx.loadgen.drive import Counters
from infx.loadgen.runner import _MeasuredPhase


def test_the_ticker_runs_while_the_phase_is_open_and_once_more_at_its_end() -> None:
    seen: list[int] = []
    counters = Counters()

    async def main() -> bool:
        with _MeasuredPhase(counters, lambda c: seen.append(c.completed)) as phase:
            async def work() -> None:
                await asyncio.sleep(0.6)
                counters.completed = 7

            await phase.run(work())
        return phase.interrupted

    assert asyncio.run(main()) is False
    assert len(seen) >= 3 and seen[0] == 0 and seen[-1] == 7  # ticks every 0.25 s, the last one after the work


def _signalled_phase(sig: signal.Signals, cancelled: list[bool], **phase: Callable[[], None]) -> bool:
    """A phase whose one request would take 30 s, sent ``sig`` 0.1 s in; whether the phase says interrupted
    (``cancelled`` gets True when the request was cancelled)."""

    async def main() -> bool:
        with _MeasuredPhase(Counters(), **phase) as ph:
            async def work() -> None:
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    cancelled.append(True)
                    raise

            asyncio.get_running_loop().call_later(0.1, os.kill, os.getpid(), sig)
            await ph.run(work())
        return ph.interrupted

    return asyncio.run(main())


def test_ctrl_c_cancels_the_requests_marks_the_phase_and_releases_the_others() -> None:
    aborted: list[bool] = []
    cancelled: list[bool] = []
    assert _signalled_phase(signal.SIGINT, cancelled, abort_sync=lambda: aborted.append(True)) is True
    assert cancelled == [True] and aborted == [True]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the loop's handler is gone again


def test_sigterm_is_the_phase_s_ctrl_c_where_the_process_takes_it_as_a_pause(monkeypatch) -> None:
    """A sweep arms SIGTERM as a pause (infx.preemption): inside the phase it cancels the requests like Ctrl-C
    (the records are kept by the caller), notes the preemption, and the sweep's handler is back afterwards."""
    from infx import preemption

    monkeypatch.setattr(preemption, "_armed", False)
    monkeypatch.setattr(preemption, "_received_at", None)
    old = signal.getsignal(signal.SIGTERM)
    cancelled: list[bool] = []
    try:
        preemption.install()
        assert _signalled_phase(signal.SIGTERM, cancelled) is True
        assert cancelled == [True] and preemption.requested()
        assert signal.getsignal(signal.SIGTERM) is preemption._handler  # not SIG_DFL: a later SIGTERM still pauses
    finally:
        signal.signal(signal.SIGTERM, old)
