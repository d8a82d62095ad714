"""Run one engine launch as a local process: start, wait until ready, stop.

The engine runs in its own process group (``process_group=0``) so that stopping it (SIGTERM to the
group, then SIGKILL after a grace period) also stops the workers it spawned, but in the caller's
session, not a new one: with Linux's autogroup scheduler (``/proc/sys/kernel/sched_autogroup_enabled``)
every session is one CPU-share group, and an engine in a session of its own competes with the load
generator (and the shell a later ``infx bench`` runs from) as an equal group. On a 2-core machine that
starved the load generator for ~150 ms at a time (the generation of a whole response), so streamed
responses arrived in one read and TPOT collapsed to ~0 (measured: 40-50% single-burst responses at
concurrency 1-4 with a separate session, none in the same session).
While waiting for readiness the process is polled every few hundred milliseconds: an engine that
dies is reported at once with its classified failure and log tail, not after the time-out.
:class:`RetryingEngine` picks the port right before each start and relaunches an engine that lost its port
(:mod:`infx.engines.ports`).
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from infx.engines import reaper
from infx.engines.launch import Launch
from infx.engines.logfile import log_excerpt
from infx.engines.logparse import FailureKind, StartupFacts, classify_failure, parse_startup_log, tail
from infx.engines.ports import PortClaims, PortRetry, kernel_port
from infx.engines.procgroup import kill_group, stop_group
from infx.failures import Failure


class EngineFailure(Failure):
    """An engine that did not become ready, with the reason classified and the log tail."""

    kind: FailureKind

    def __init__(
        self,
        kind: FailureKind,
        message: str,
        *,
        log_tail: str = "",
        log_path: str | Path | None = None,
        returncode: int | None = None,
    ) -> None:
        self.log_path = str(log_path) if log_path else None
        self.returncode = returncode
        super().__init__(kind, message, log_tail)

    def __str__(self) -> str:
        head = f"engine failed ({self.kind.value}): {self.message}"
        if self.returncode is not None:
            head += f" [exit code {self.returncode}]"
        if self.log_tail:
            where = f" ({self.log_path})" if self.log_path else ""
            head += f"\n--- engine log tail{where} ---\n{self.log_tail}"
        return head


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on ``host:port`` and it can be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel says is free right now (a promise only: launches pick through
    :class:`infx.engines.ports.PortClaims` and retry a lost port; see :class:`RetryingEngine`)."""
    return kernel_port(host)


def http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            status: int = resp.status
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return 200 <= status < 300


class EngineProcess:
    """One engine, started from a :class:`Launch` with the local runtime."""

    def __init__(self) -> None:
        self.launch: Launch | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self.log_offset = 0  # where this launch's lines start in the log
        self.started_at: float | None = None
        self.record: Path | None = None  # this process in the workspace's engine records (reaper)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, launch: Launch, log_path: str | Path, *, cwd: str | Path | None = None,
              append: bool = False, check_port: bool = True, bound: bool = True) -> None:
        """Launch the engine; a busy port is reported before anything is started (``check_port``; a
        port picked just now is not checked again: the engine's own bind is the check, and a lost port is
        relaunched, see :class:`RetryingEngine`). ``append``: keep what the log holds (an earlier launch).
        ``bound``: the engine dies with this process and is recorded for :func:`infx.engines.reaper.reap_orphans`
        (off only for ``infx engine up``, whose engine outlives the command)."""
        if launch.runtime != "local":
            raise ValueError(f"EngineProcess runs local launches only, not runtime {launch.runtime!r}")
        if bound:
            reaper.announce(reaper.reap_orphans())
        if check_port and not port_is_free(launch.port, launch.host):
            raise EngineFailure(
                FailureKind.PORT_IN_USE,
                f"port {launch.port} on {launch.host} is already in use by another process; "
                "choose another port (or let infx pick a free one)",
            )
        self.launch = launch
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if launch.files:
            cwd = cwd or self.log_path.parent
            launch.write_files(cwd)
        env = dict(os.environ)
        env.update(launch.env)
        # an appended log is read from here on: this launch's failure is classified from its own lines only
        self.log_offset = self.log_path.stat().st_size if append and self.log_path.exists() else 0
        with open(self.log_path, "ab" if append else "wb") as log:
            self.proc = subprocess.Popen(
                launch.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(cwd) if cwd else None,
                process_group=0,  # own group for kill_group; same session (autogroup): see module doc
                preexec_fn=reaper.parent_death_signal() if bound else None,
            )
        if bound:
            self.record = reaper.track(self.proc.pid, launch.port, f"{launch.engine} engine")
        self.started_at = time.monotonic()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        """This launch's log (an earlier launch's lines in the same file are not part of it)."""
        if not self.log_path:
            return ""
        return log_excerpt(self.log_path, self.log_offset)

    def wait_ready(self, timeout: float = 300.0, poll: float = 0.25) -> StartupFacts:
        """Block until the readiness endpoint answers 2xx; return the start-up facts.

        Raises :class:`EngineFailure` as soon as the process exits (classified from its log),
        or with kind ``timeout`` after ``timeout`` seconds (the engine is then stopped).
        """
        assert self.proc is not None and self.launch is not None, "start() first"
        deadline = time.monotonic() + timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise self._failure(rc)
            if http_ok(self.launch.readiness_url, timeout=1.0):
                return parse_startup_log(self.launch.engine, self.log_text())
            if time.monotonic() >= deadline:
                text = self.log_text()
                self.stop()
                found = classify_failure(self.launch.engine, text)
                msg = f"not ready after {timeout:g} s at {self.launch.readiness_url}"
                if found:
                    msg += f"; log says: {found.message}"
                raise EngineFailure(FailureKind.TIMEOUT, msg, log_tail=tail(text), log_path=self.log_path)
            time.sleep(poll)

    def _failure(self, rc: int) -> EngineFailure:
        assert self.launch is not None
        time.sleep(0.1)  # let the last lines reach the log file
        text = self.log_text()
        found = classify_failure(self.launch.engine, text)
        kind = found.kind if found else FailureKind.CRASHED
        msg = found.message if found else "engine process exited before it was ready"
        # Children (API server workers) may survive their parent; clean the group up.
        if self.proc is not None:
            kill_group(self.proc.pid, grace=2.0)
        return EngineFailure(kind, msg, log_tail=tail(text), log_path=self.log_path, returncode=rc)

    def stop(self, grace: float = 15.0) -> None:
        """Stop the whole process group (SIGTERM, then SIGKILL after ``grace`` s)."""
        if self.proc is not None:
            stop_group(self.proc, grace)
            reaper.untrack(self.record)
            self.record = None

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RetryingEngine:
    """One engine whose port is picked right before each start; a launch that loses its port (the
    pre-start check, or the engine exiting with "address already in use" before it is ready) is relaunched
    on a new port, up to ``claims.attempts`` launches. Every other failure is raised as it is.
    ``port`` fixes the port (the user chose it): it is never changed, so a lost one is not retried."""

    def __init__(self, render: Callable[[int], Launch], log_path: str | Path, *, claims: PortClaims | None = None,
                 role: str = "engine", port: int | None = None, host: str = "127.0.0.1",
                 prepare: Callable[[Launch], None] | None = None, bound: bool = True):
        self.render = render
        self.log_path = Path(log_path)
        self.claims = claims or PortClaims(host)
        self.role = role
        self.fixed_port = port
        self.prepare = prepare  # run on the first rendered launch before its start (e.g. build the model)
        self.bound = bound  # see EngineProcess.start
        self.proc = EngineProcess()
        self.launch: Launch | None = None
        self._next_port: int | None = None  # picked when the last launch lost its port

    @property
    def retries(self) -> list[PortRetry]:
        return self.claims.retries

    def start(self) -> None:
        """Start one launch; a port found taken before the start is retried at once."""
        while True:
            if self.fixed_port is not None:
                port = self.fixed_port
            elif self._next_port is not None:
                port, self._next_port = self._next_port, None
            else:
                port = self.claims.pick(self.role)
            launch = self.render(port)
            if self.launch is None and self.prepare is not None:
                self.prepare(launch)
            append = self.launch is not None
            self.launch = launch
            self.claims.launched(self.role)
            try:
                self.proc = EngineProcess()
                # a port the user fixed is checked first (a clear error); a picked one is claimed by the
                # engine's own bind, the latest possible moment (a lost one is relaunched)
                self.proc.start(launch, self.log_path, append=append, check_port=self.fixed_port is not None,
                                bound=self.bound)
                return
            except EngineFailure as exc:
                if not self._relaunch(exc, port):
                    raise

    def wait_ready(self, timeout: float, poll: float = 0.25) -> StartupFacts:
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.proc.wait_ready(max(0.0, deadline - time.monotonic()), poll)
            except EngineFailure as exc:
                assert self.launch is not None
                if not self._relaunch(exc, self.launch.port):
                    raise
            self.start()

    def _relaunch(self, exc: EngineFailure, port: int) -> bool:
        """Record a lost port; True when another launch may follow."""
        if exc.kind is not FailureKind.PORT_IN_USE or self.fixed_port is not None:
            return False
        again = self.claims.may_retry(self.role)
        new = self.claims.pick(self.role, avoid={port}) if again else None
        retry = self.claims.record(self.role, port, exc.message, new)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a") as fh:
            fh.write(self.claims.note(retry))
        if not again:
            exc.message += f" (lost its port on each of {self.claims.attempts} launches)"
            return False
        self._next_port = new
        return True
