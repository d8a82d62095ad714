"""Process groups: stop an engine's whole group (SIGTERM, a grace period, SIGKILL), and tell whether any
member of a group is still alive (zombies aside)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path


def kill_group(pgid: int, grace: float = 15.0) -> None:
    """SIGTERM the process group, wait up to ``grace`` seconds, then SIGKILL what is left."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return
        time.sleep(0.2)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return


def stop_group(proc: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """Stop ``proc``'s process group (:func:`kill_group`) and reap ``proc``."""
    kill_group(proc.pid, grace=grace)
    with contextlib.suppress(subprocess.TimeoutExpired):  # pragma: no cover - SIGKILL already sent
        proc.wait(timeout=grace)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombies still count for killpg(0); reap our own children if any.
    try:
        while True:
            pid, _ = os.waitpid(-pgid, os.WNOHANG)
            if pid == 0:
                break
    except ChildProcessError:
        pass
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False
