"""Helpers of the ``kill -9`` fault tests: run ``infx run`` in a workspace, kill it when a condition holds, and
check that nothing of the killed run is left (the processes whose command line names the workspace, and every
process group the killed run recorded in ``<workspace>/.infx/engines/``)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from infx.engines import reaper
from infx.engines.procgroup import group_alive
from infx.results.receipt import has_receipt
from infx.sweep.layout import RunDir

REPO = Path(__file__).resolve().parents[2]


def env(ws: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "INFX_WORKSPACE": str(ws), "PYTHONUNBUFFERED": "1", **extra}


def of_workspace(ws: Path) -> list[int]:
    """Live processes whose command line names the workspace (an engine serves its model from it)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if str(ws).encode() in cmd and state != "Z":
            out.append(int(entry.name))
    return out


def wait(cond: Callable[[], bool], timeout: float, every: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(every)
    return cond()


def records(ws: Path) -> list[reaper.EngineRecord]:
    d = ws / ".infx" / "engines"
    out = []
    for p in d.glob("*.json") if d.is_dir() else []:
        try:
            out.append(reaper.EngineRecord.model_validate_json(p.read_bytes()))
        except (OSError, ValueError):  # being written or removed right now
            continue
    return out


def done(rd: RunDir) -> set[str]:
    """Points that are final: done, with their receipt (a kill between the two leaves one that is not)."""
    return {pid for pid in rd.results.points(rd.run_id) if (st := rd.read_status(pid)) is not None
            and st.state == "done" and has_receipt(rd.point_dir(pid))}


def kill_when(argv: list[str], ws: Path, log: Path, when: Callable[[], bool], what: str,
              environ: dict[str, str] | None = None, timeout: float = 400) -> list[reaper.EngineRecord]:
    """Start ``argv`` in the workspace, SIGKILL it once ``when()`` holds; then wait until no process of it is
    left: none names the workspace, no process group it recorded has a member. The records it had."""
    with log.open("w") as fh:
        proc = subprocess.Popen(argv, cwd=ws, env=environ or env(ws), stdout=fh, stderr=subprocess.STDOUT)
    try:
        assert wait(lambda: when() or proc.poll() is not None, timeout), f"{what}: never reached"
        assert proc.poll() is None, f"{what}: the run ended before the kill: {log.read_text()[-2000:]}"
        recs = records(ws)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert recs, f"{what}: no engine was recorded"

    def left() -> list[int]:
        return [*of_workspace(ws), *(r.pgid for r in recs if group_alive(r.pgid))]

    # the kernel's parent-death signal stops every engine and role, and they stop their own children
    assert wait(lambda: not left(), 90), (what, left())
    return recs
