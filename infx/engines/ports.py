"""Ports: claimed by the process that starts the server, right before it starts it, and a lost port retried.

A port number is only a promise: the kernel says it is free when asked (bind to port 0, read, close), and the
server binds it seconds to minutes later (a vLLM start-up imports for ~10 s before ``create_server_socket``;
a deployment's router starts after ~80 s of worker start-up). Any process that binds in between takes it. No
choice of number closes that window, so infx makes it short and survives it:

* :meth:`PortClaims.pick` is called on the host that binds the port, immediately before the start: by the
  process that spawns the server (inside a Slurm job ``infx run-group`` on the compute node), or by a
  deployment role's own Slurm step (:mod:`infx.engines.portstep`); a deployment's router port is picked only
  once every worker is ready;
* :func:`lost_port` is the one classifier of "this server exited because its port was taken" (vLLM,
  SGLang and TRT-LLM's uvicorn ``[Errno 98] ... address already in use``, vllm-router's ``Address already in
  use (os error 98)``), the engines stage's ``port-in-use`` failure kind;
* a launch whose port was lost is relaunched on a new port, at most :data:`MAX_PORT_ATTEMPTS` times per role;
  every retry is a :class:`PortRetry`, kept in the start-up facts (``status.json``) and the deployment record.
  Any other failure is never retried: its classification stays as it is.

``INFX_PORTS_FIRST`` (``KEY=PORT,...``, KEY a role's port key: ``engine``, ``prefill_0``, ``decode_0``,
``router``...) makes the chooser hand out the given port first, once per process: the deterministic way to
reproduce a lost port (the tests bind and hold it) without waiting for the race.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from infx.engines.logparse import FailureKind, classify_failure

MAX_PORT_ATTEMPTS = 3  # a role's launches, the first one included
PORTS_FIRST_ENV = "INFX_PORTS_FIRST"


class PortRetry(BaseModel):
    """One launch that lost its port and was relaunched on another."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str  # engine, prefill, decode, router...
    attempt: int  # the launch that lost its port (1 = the first)
    port: int  # the port it lost
    new_port: int | None = None  # the port of the next launch (None: no launch left)
    message: str  # the log line (or check) that said so
    at: float  # unix time


class PortsExhausted(Exception):
    """Every allowed launch of a role lost its port."""


def lost_port(engine: str, log_text: str) -> str | None:
    """The log line saying the server could not bind its port, or None (the one classifier)."""
    found = classify_failure(engine, log_text)
    return found.message if found is not None and found.kind is FailureKind.PORT_IN_USE else None


def kernel_port(host: str = "127.0.0.1") -> int:
    """A port the kernel says is free right now on ``host`` (a promise, not a reservation)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


_handed_first: set[str] = set()  # keys of INFX_PORTS_FIRST already handed out by this process


def _first_port(key: str) -> int | None:
    spec = os.environ.get(PORTS_FIRST_ENV, "")
    for item in spec.split(","):
        name, _, value = item.strip().partition("=")
        if name == key and value.isdigit() and key not in _handed_first:
            _handed_first.add(key)
            return int(value)
    return None


def pick_port(key: str = "engine", host: str = "127.0.0.1", avoid: Iterable[int] = ()) -> int:
    """The port for ``key``'s next launch on ``host``: ``INFX_PORTS_FIRST``'s once, else a free one
    the kernel gives that is not in ``avoid`` (ports this launch already uses or lost)."""
    taken = set(avoid)
    first = _first_port(key)
    if first is not None and first not in taken:
        return first
    while True:
        port = kernel_port(host)
        if port not in taken:
            return port


class PortClaims:
    """The ports one launch (one engine, or every role of a deployment) claimed, and its retries."""

    def __init__(self, host: str = "127.0.0.1", attempts: int = MAX_PORT_ATTEMPTS):
        self.host = host
        self.attempts = attempts
        self.retries: list[PortRetry] = []
        self.lost: set[int] = set()
        self._launches: dict[str, int] = {}

    def pick(self, key: str, avoid: Iterable[int] = ()) -> int:
        return pick_port(key, self.host, {*avoid, *self.lost})

    def launches(self, role: str) -> int:
        return self._launches.get(role, 0)

    def launched(self, role: str) -> int:
        """Count one more launch of ``role``; returns its number (1 = first)."""
        self._launches[role] = self._launches.get(role, 0) + 1
        return self._launches[role]

    def may_retry(self, role: str) -> bool:
        return self.launches(role) < self.attempts

    def record(self, role: str, port: int, message: str, new_port: int | None) -> PortRetry:
        self.lost.add(port)
        retry = PortRetry(role=role, attempt=self.launches(role), port=port, new_port=new_port,
                          message=message[:500], at=time.time())
        self.retries.append(retry)
        return retry

    def note(self, retry: PortRetry) -> str:
        """The line written to the role's log when it is relaunched (or not)."""
        if retry.new_port is None:
            return (f"[infx] {retry.role} lost port {retry.port} ({retry.message}); {retry.attempt} of "
                    f"{self.attempts} launches used, not relaunched\n")
        return (f"[infx] {retry.role} lost port {retry.port} ({retry.message}); relaunching on port "
                f"{retry.new_port} (launch {retry.attempt + 1} of {self.attempts})\n")
