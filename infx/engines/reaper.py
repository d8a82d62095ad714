"""No engine outlives the infx process that started it.

Two layers, because a process killed with SIGKILL runs no clean-up of its own:

* the kernel's: every engine and deployment role is started with a parent-death signal
  (``prctl(PR_SET_PDEATHSIG, SIGTERM)``), so when the infx process dies, however it dies, the engine
  is told to stop at once, and stops its own workers as it would on ``infx engine down``;
* a record: each started process's pid, start time (``/proc/PID/stat``), process group, port and owner
  (the infx process's pid and start time) is written to the workspace's ``<cache>/engines/``. Before the
  next launch (and on ``infx engine down``), :func:`reap_orphans` stops the process group of every
  recorded engine whose owner is gone and that is still alive, and says so in one line. A record is
  matched by pid *and* start time, so a recycled pid (another program now) is never touched. A record may
  name scratch directories the process used (a deployment's KV directory); they are removed with the orphan.

``infx engine up`` starts an engine meant to outlive the command: it is started without either.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from infx.engines.procgroup import group_alive, kill_group

PR_SET_PDEATHSIG = 1
#: Seconds between SIGTERM and SIGKILL when an orphan's group is stopped.
REAP_GRACE_S = 10.0


class EngineRecord(BaseModel):
    """One engine (or deployment role) process an infx process started."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pid: int
    start_ticks: int
    pgid: int
    port: int | None
    owner_pid: int
    owner_start_ticks: int
    what: str  # the program (argv[0]) and role, for the one line that reports it
    scratch: list[str] = Field(default_factory=list)  # directories infx made for it (``infx-*``), removed with it


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, ``/proc/PID/stat`` field 22); None: no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        return int(fields[19]) if fields[0] != "Z" else None
    except (IndexError, ValueError):
        return None


def is_same_process(pid: int, ticks: int) -> bool:
    """``pid`` is alive and is the process that started at ``ticks`` (not a recycled pid)."""
    return start_ticks(pid) == ticks


def parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child receive SIGTERM when this process dies, or None where the kernel
    offers none. Linux sends the signal when the *thread* that forked the child ends, so only the main thread
    binds its children (the sweep starts engines from it)."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    parent = os.getpid()
    libc = ctypes.CDLL(None, use_errno=True)

    def preexec() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def registry_dir() -> Path | None:
    """``<cache>/engines`` of the workspace a command runs in; None outside a workspace (nothing recorded)."""
    from infx.diagnostics import InfxError
    from infx.workspace import current

    try:
        ws = current()
    except InfxError:
        return None
    if ws.found_by == "working directory":
        return None
    return ws.cache_dir / "engines"


def track(pid: int, port: int | None, what: str, directory: Path | None = None,
          scratch: list[Path] | None = None) -> Path | None:
    """Record a process this infx process just started (``scratch``: directories infx made for it, named
    ``infx-*``); its record's path (None: not recorded)."""
    from infx.atomic import WriteFault, write_text

    directory = directory or registry_dir()
    ticks, own = start_ticks(pid), start_ticks(os.getpid())
    if directory is None or ticks is None or own is None:
        return None
    try:
        pgid = os.getpgid(pid)
    except ProcessLookupError:
        return None
    rec = EngineRecord(pid=pid, start_ticks=ticks, pgid=pgid, port=port, owner_pid=os.getpid(),
                       owner_start_ticks=own, what=what, scratch=[str(d) for d in scratch or []])
    path = directory / f"{pid}-{ticks}.json"
    try:
        write_text(path, rec.model_dump_json())
    except WriteFault:
        return None  # the kernel's parent-death signal still binds the engine
    return path


def untrack(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def reap_orphans(directory: Path | None = None, grace: float = REAP_GRACE_S) -> list[str]:
    """Stop every recorded engine whose owner is gone; one line per engine stopped. Records of processes
    that ended (or whose pid now names another program) are dropped; records of live owners are kept."""
    directory = directory or registry_dir()
    if directory is None or not directory.is_dir():
        return []
    said: list[str] = []
    for path in sorted(directory.glob("*.json")):
        try:
            rec = EngineRecord.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            untrack(path)  # not ours to act on: never kill from a record that cannot be read
            continue
        if is_same_process(rec.owner_pid, rec.owner_start_ticks):
            continue  # its infx process still runs (another sweep): it stops its own engines
        if _ours_alive(rec):
            kill_group(rec.pgid, grace=grace)
            port = f" on port {rec.port}" if rec.port is not None else ""
            said.append(f"stopped {rec.what} pid {rec.pid}{port} (process group {rec.pgid}), left running by a "
                        f"killed infx process (pid {rec.owner_pid})")
        _remove_scratch(rec)
        untrack(path)
    return said


def _remove_scratch(rec: EngineRecord) -> None:
    """The scratch directories of an engine whose owner is gone (only ``infx-*`` ones: a record never makes
    infx delete anything it did not name itself)."""
    import shutil

    for d in rec.scratch:
        if Path(d).name.startswith("infx-"):
            shutil.rmtree(d, ignore_errors=True)


def _ours_alive(rec: EngineRecord) -> bool:
    """The recorded engine, or what is left of its process group (workers, a resource tracker that outlived
    the leader), is alive. The leader's pid is matched with its start time; with the leader gone, its group id
    cannot have been handed to another process while members remain, so the members are the engine's."""
    if rec.pgid != rec.pid:
        return False  # only groups infx made (the engine leads its own) are ever signalled
    ticks = start_ticks(rec.pid)
    if ticks is not None:
        return ticks == rec.start_ticks
    return group_alive(rec.pgid)


def announce(lines: list[str]) -> None:
    for line in lines:
        print(f"infx: {line}", file=sys.stderr)
