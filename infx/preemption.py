"""SIGTERM is a pause: Slurm's preemption and time limit (``--signal=B:TERM@...``), ``scancel``, a stopped
CI job. :func:`install` makes SIGTERM raise :class:`Preempted`, a ``KeyboardInterrupt``, so every clean-up
Ctrl-C runs (the engine stopped, the group's record written) runs for it too; the point in flight is
written as ``interrupted`` with what it measured, and the command exits with :data:`EXIT_PREEMPTED`.

Code that runs an event loop while a point is measured (the load generator) asks :func:`armed` and, while
its requests are in flight, takes SIGTERM as its own Ctrl-C instead (the requests are cancelled and their
records kept), calling :func:`note` so the sweep knows the stop was a preemption. Only the first SIGTERM
raises: Slurm may signal again while the engine is being stopped, and that clean-up must finish.
"""

from __future__ import annotations

import signal
import time
from types import FrameType

# sysexits' EX_TEMPFAIL: "a temporary failure, the user is invited to retry". Neither 130 (Ctrl-C) nor a
# bad input (2) or failed points (1); a cluster can requeue on it (slurm.conf ``RequeueExit=75``).
EXIT_PREEMPTED = 75
# seconds before a Slurm job's time limit it gets SIGTERM (``--signal=B:TERM@N``): stopping takes seconds (the
# point in flight is cancelled, the engine stopped), but Slurm finds the moment by a periodic check (sbatch(1):
# the signal may come up to 60 s off the asked time), so the lead leaves a margin
SIGNAL_LEAD_S = 120


class Preempted(KeyboardInterrupt):
    """SIGTERM arrived: stop now, keep what was measured, exit with :data:`EXIT_PREEMPTED`."""


_armed = False
_received_at: float | None = None


def _handler(signum: int, frame: FrameType | None) -> None:
    first = _received_at is None
    note()
    if first:
        raise Preempted("SIGTERM")


def install() -> None:
    """SIGTERM raises :class:`Preempted` (once) in the main thread from now on."""
    global _armed
    signal.signal(signal.SIGTERM, _handler)
    _armed = True


def disarm() -> None:
    """A child process that must not act on SIGTERM itself (a load-generator worker: its parent stops it)."""
    global _armed
    _armed = False


def armed() -> bool:
    """Whether this process takes SIGTERM as a pause (:func:`install` was called)."""
    return _armed


def note() -> None:
    """Record that SIGTERM arrived (the handler does; so does an event loop's own SIGTERM handler)."""
    global _received_at
    if _received_at is None:
        _received_at = time.time()


def requested() -> bool:
    """SIGTERM arrived in this process."""
    return _received_at is not None
