"""Run a :class:`~infx.engines.disagg.model.Deployment` on this host: every role instance is a local
process in its own process group.

Order: workers (prefill and decode) start together (on 2 cores two vLLM-CPU servers take ~90 s to be
healthy together), then the router once every worker answers its readiness endpoint, then the router's
own readiness. A role that exits at any time is reported with its name, exit status and log tail.
Teardown stops the router first, then every worker group (SIGTERM, SIGKILL after a grace period), waits
until each group is empty and removes the KV connector's shared directory.

Ports (:mod:`infx.engines.ports`): with ``render`` (the deployment rendered again with other ports) each role's
port is picked right before it starts: by this process, or inside a Slurm job by the role's own step on its
node (:mod:`infx.engines.portstep`, which records it; the deployment is rendered again with what it found). The
router starts only once its workers are ready, rendered then with their final ports. A role that loses its port
before it is ready (the role exiting with "address already in use") is relaunched on a new port, at most
``claims.attempts`` launches per role; each retry is a :class:`~infx.engines.ports.PortRetry` in
``claims.retries``. A role failing for any other reason is never relaunched.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from infx.engines import reaper
from infx.engines.disagg.model import Deployment, Role
from infx.engines.disagg.placement import PlacementError, RolePlacement, place
from infx.engines.logfile import log_excerpt
from infx.engines.ports import PortClaims, lost_port
from infx.engines.procgroup import group_alive, stop_group
from infx.engines.server import http_ok, port_is_free
from infx.failures import Failure


class RoleFailure(Failure):
    """A role that did not come up or died: ``kind`` is ``port-in-use``, ``exited``, ``killed`` or ``timeout``."""

    def __init__(self, role: str, kind: str, message: str, log_tail: str = ""):
        self.role = role
        super().__init__(kind, message, log_tail)

    def __str__(self) -> str:
        return f"role {self.role} {self.kind}: {self.message}"


def in_slurm_job() -> bool:
    """Inside a Slurm allocation (``infx run --backend slurm``): every role becomes one job step."""
    return bool(os.environ.get("SLURM_JOB_ID")) and os.environ.get("INFX_SLURM_STEPS", "1") != "0" \
        and shutil.which("srun") is not None


def step_argv(role: str, argv: list[str], placement: RolePlacement | None = None) -> list[str]:
    """``srun`` wrapper that makes one role one step of the deployment's allocation, pinned to its nodes
    (``--relative``; :mod:`infx.engines.disagg.placement`). ``--overlap``: the roles share the allocation's
    CPUs; SIGTERM to srun is forwarded to the step and Slurm reaps its process tree. Outside a Slurm job
    the argv is unchanged (a local process group)."""
    if not in_slurm_job():
        return list(argv)
    return [shutil.which("srun") or "srun", "--overlap", *(placement or RolePlacement()).srun_args(),
            f"--job-name=infx-{role}", "--kill-on-bad-exit=1", "--quiet", *argv]


def job_layout() -> tuple[int | None, int | None]:
    """(GPUs per node, nodes) of the Slurm job this process runs in (``SLURM_GPUS_ON_NODE``,
    ``SLURM_JOB_NUM_NODES``); None where Slurm does not say."""
    def num(name: str) -> int | None:
        try:
            return int(os.environ[name])
        except (KeyError, ValueError):
            return None
    return num("SLURM_GPUS_ON_NODE") or None, num("SLURM_JOB_NUM_NODES")


@dataclass
class RoleProcess:
    role: Role
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    ready_s: float | None = None
    stop_s: float | None = None
    argv: list[str] = field(default_factory=list)  # what was executed (srun-wrapped inside a Slurm job)
    log_offset: int = 0  # where this launch's lines start in the log (earlier launches lost their port)
    record: Path | None = None  # this process in the workspace's engine records (reaper)
    scratch: Path | None = None  # the deployment's KV directory: the reaper removes it if infx is killed

    def start(self, placement: RolePlacement | None = None, append: bool = False, check_port: bool = True,
              prefix: list[str] | None = None) -> None:
        """Start the role; ``append`` keeps the log of an earlier launch (one that lost its port).
        ``check_port``: report a busy port before the start (off where a lost port is relaunched: the
        role's own bind claims it, as late as possible). ``prefix``: run in front of the role's argv inside
        its step (:mod:`infx.engines.portstep`: the step picks its port)."""
        launch = self.role.launch
        reaper.announce(reaper.reap_orphans())
        if check_port and not port_is_free(launch.port, launch.host):
            raise RoleFailure(self.role.name, "port-in-use", f"port {launch.port} on {launch.host} is in use")
        env = dict(os.environ)
        env.update(launch.env)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # an appended log is read from here on: this launch's failure is classified from its own lines only
        self.log_offset = self.log_path.stat().st_size if append and self.log_path.exists() else 0
        with open(self.log_path, "ab" if append else "wb") as log:
            self.argv = step_argv(self.role.name, [*(prefix or []), *launch.argv], placement)
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         env=env, process_group=0, preexec_fn=reaper.parent_death_signal())
        self.record = reaper.track(self.proc.pid, launch.port, f"{self.role.name} role",
                                   scratch=[self.scratch] if self.scratch is not None else None)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        """This launch's log (an earlier launch's lines in the same file are not part of it)."""
        return log_excerpt(self.log_path, self.log_offset)

    def tail(self, lines: int = 30) -> str:
        return "".join(self.log_text().splitlines(True)[-lines:])

    def exit_failure(self) -> RoleFailure | None:
        if self.proc is None or self.proc.poll() is None:
            return None
        rc = self.proc.returncode
        if rc < 0:
            name = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else str(-rc)
            return RoleFailure(self.role.name, "killed", f"pid {self.proc.pid} killed by {name}", self.tail())
        time.sleep(0.1)  # let the last lines reach the log file
        lost = lost_port(self.role.launch.engine, self.log_text())
        if lost is not None:
            return RoleFailure(self.role.name, "port-in-use", f"pid {self.proc.pid} exited with code {rc}: {lost}",
                               self.tail())
        return RoleFailure(self.role.name, "exited", f"pid {self.proc.pid} exited with code {rc}", self.tail())

    def stop(self, grace: float = 15.0) -> None:
        if self.proc is None:
            return
        t0 = time.monotonic()
        stop_group(self.proc, grace)
        self.stop_s = time.monotonic() - t0
        reaper.untrack(self.record)
        self.record = None

    def group_alive(self) -> bool:
        return self.proc is not None and group_alive(self.proc.pid)


@dataclass
class DeploymentProcess:
    """Start, await and stop every role of a deployment (local runtime)."""

    deployment: Deployment
    log_dir: Path
    log_prefix: str
    kv_dir: Path | None = None  # removed at stop()
    roles: list[RoleProcess] = field(default_factory=list)
    started_at: float = 0.0
    startup_s: float | None = None
    placed: dict[str, RolePlacement] = field(default_factory=dict)  # inside a Slurm job: each role's nodes
    teardown_s: float | None = None
    claims: PortClaims = field(default_factory=PortClaims)  # launches per role, port retries
    # the deployment rendered again with other ports (port key -> port); None: the ports are fixed, a lost one final
    render: Callable[[dict[str, int]], Deployment] | None = None
    ports: dict[str, int] = field(default_factory=dict)  # the ports ``deployment`` was rendered with
    keys_of: Callable[[str], list[str]] | None = None  # a role's port keys (``decode`` -> ``decode_0``)
    step_ports: bool | None = None  # each role's step picks its own port (default: inside a Slurm job)

    def __post_init__(self) -> None:
        self.roles = [RoleProcess(r, self.log_dir / f"{self.log_prefix}.{r.name}.log", scratch=self.kv_dir)
                      for r in self.deployment.roles]
        if self.step_ports is None:
            self.step_ports = self.render is not None and in_slurm_job()

    def role(self, name: str) -> RoleProcess:
        return next(rp for rp in self.roles if rp.role.name == name)

    @property
    def workers(self) -> list[RoleProcess]:
        return [rp for rp in self.roles if rp.role.kind != "router" and rp.role.kind != "frontend"]

    @property
    def entries(self) -> list[RoleProcess]:
        return [rp for rp in self.roles if rp.role.kind in ("router", "frontend")]

    def placements(self) -> dict[str, RolePlacement]:
        """Inside a Slurm job: the nodes of each role (a :class:`RoleFailure` ``placement`` when the pools
        need more nodes than the job has). Outside: {} (every role a local process group)."""
        if not in_slurm_job():
            return {}
        try:
            return place(self.deployment, *job_layout())
        except PlacementError as exc:
            raise RoleFailure(exc.role, "placement", str(exc)) from None

    def use(self, deployment: Deployment) -> None:
        """Take a re-rendered deployment (new ports): every role's launch from it, by name."""
        self.deployment = deployment
        for rp in self.roles:
            rp.role = deployment.role(rp.role.name)

    # -- ports ---------------------------------------------------------------------------------------------
    def _rerender(self, ports: dict[str, int]) -> None:
        assert self.render is not None
        self.use(self.render(ports))
        self.ports = dict(ports)

    def _keys(self, name: str) -> list[str]:
        return [k for k in (self.keys_of(name) if self.keys_of else []) if k in self.ports]

    def pick_ports(self, name: str) -> None:
        """New ports for role ``name``, picked now (with step ports: placeholders its step replaces)."""
        if self.render is None:
            return
        ports = dict(self.ports)
        for key in self._keys(name):
            ports[key] = self.claims.pick(key, {v for k, v in ports.items() if k != key})
        self._rerender(ports)

    def step_record_path(self, name: str) -> Path:
        return self.log_dir / f"{self.log_prefix}.{name}.port.json"

    def _step_prefix(self, rp: RoleProcess) -> list[str]:
        """``python -m infx.engines.portstep ... --``: the role's step picks its ports on its own node. The slots
        are the argv tokens that change when only that port changes (two renders compared)."""
        import sys

        assert self.render is not None
        name, base = rp.role.name, rp.role.launch.argv
        slots: list[str] = []
        for key in self._keys(name):
            other, taken = dict(self.ports), set(self.ports.values())
            other[key] = next(p for p in range(1024, 65536) if p not in taken)
            alt = self.render(other).role(name).launch.argv
            if len(alt) != len(base):
                raise RoleFailure(name, "placement", f"its argv changes length with port {key}; no step port")
            slots += [f"--slot={key}={i}:{self.ports[key]}"
                      for i, (a, b) in enumerate(zip(base, alt, strict=True)) if a != b]
        record = self.step_record_path(name)
        record.unlink(missing_ok=True)
        return [sys.executable, "-m", "infx.engines.portstep", "--record", str(record), "--host", rp.role.launch.host,
                "--avoid", ",".join(str(p) for p in sorted(self.claims.lost)), *slots, "--"]

    def _read_step_ports(self, rp: RoleProcess, timeout: float = 120.0, poll: float = 0.1) -> None:
        """Wait for the role's step to record the ports it picked; render the deployment with them."""
        import json

        name, record = rp.role.name, self.step_record_path(rp.role.name)
        deadline = time.monotonic() + timeout
        while not record.exists():
            if not rp.alive():
                return  # the step died first: _await reports (or relaunches) it
            if time.monotonic() >= deadline:
                raise RoleFailure(name, "timeout", f"its step recorded no port in {timeout:g} s ({record})", rp.tail())
            time.sleep(poll)
        picked = {k: int(v) for k, v in json.loads(record.read_text())["ports"].items()}
        placeholder = rp.role.launch.port
        self._rerender({**self.ports, **picked})
        port = rp.role.launch.port
        for i, r in enumerate(self.claims.retries):  # a retry names the port the step really took
            if r.role == name and r.new_port == placeholder:
                self.claims.retries[i] = r.model_copy(update={"new_port": port})

    # -- start ---------------------------------------------------------------------------------------------
    def _start(self, rp: RoleProcess) -> None:
        """Start one role; a port found taken before the start is relaunched at once (within the bound)."""
        while True:
            append = self.claims.launches(rp.role.name) > 0
            self.claims.launched(rp.role.name)
            try:
                prefix = self._step_prefix(rp) if self.step_ports else []
                rp.start(self.placed.get(rp.role.name), append=append, check_port=self.render is None, prefix=prefix)
                if self.step_ports:
                    self._read_step_ports(rp)
                return
            except RoleFailure as exc:
                if not self._relaunch_needed(rp, exc):
                    raise

    def _relaunch_needed(self, rp: RoleProcess, failure: RoleFailure) -> bool:
        """A role lost its port before it was ready: record it, take a new port; True when it may start again."""
        if failure.kind != "port-in-use" or self.render is None:
            return False
        name = rp.role.name
        again = self.claims.may_retry(name)
        lost = rp.role.launch.port
        self.claims.lost.add(lost)
        if again:
            self.pick_ports(name)
        retry = self.claims.record(name, lost, failure.message, rp.role.launch.port if again else None)
        with open(rp.log_path, "a") as fh:
            fh.write(self.claims.note(retry))
        if not again:
            failure.message += f" (lost its port on each of {self.claims.attempts} launches)"
        return again

    def start_workers(self) -> None:
        self.started_at = time.monotonic()
        self.placed = self.placements()
        for rp in self.workers:
            self._start(rp)

    def _await(self, group: list[RoleProcess], deadline: float, poll: float) -> None:
        pending = list(group)
        while pending:
            for rp in self.roles:
                failure = rp.exit_failure()
                if failure is None:
                    continue
                if rp in pending and self._relaunch_needed(rp, failure):  # lost its port before it was ready
                    rp.stop(grace=2.0)  # whatever the failed launch left in its group
                    rp.stop_s = None
                    self._start(rp)
                    continue
                raise failure
            for rp in list(pending):
                if http_ok(rp.role.launch.readiness_url, timeout=1.0):
                    rp.ready_s = time.monotonic() - self.started_at
                    pending.remove(rp)
            if pending and time.monotonic() >= deadline:
                rp = pending[0]
                raise RoleFailure(rp.role.name, "timeout", f"not ready at {rp.role.launch.readiness_url} "
                                  f"after {deadline - self.started_at:.0f} s", rp.tail())
            if pending:
                time.sleep(poll)

    def wait_ready(self, timeout: float, poll: float = 0.5) -> float:
        """Every worker ready, then the router started and ready. Returns the deployment start-up seconds."""
        deadline = (self.started_at or time.monotonic()) + timeout
        self._await(self.workers, deadline, poll)
        for rp in self.entries:  # entry ports are picked now, right before their start, with the workers' final
            self.pick_ports(rp.role.name)  # ports in their argv (the router learns them here)
            self._start(rp)
        self._await(self.entries, deadline, poll)
        self.startup_s = time.monotonic() - self.started_at
        return self.startup_s

    def check(self) -> None:
        """Raise the :class:`RoleFailure` of the first role that is no longer running."""
        for rp in self.roles:
            failure = rp.exit_failure()
            if failure is not None:
                raise failure

    def failure(self) -> RoleFailure | None:
        try:
            self.check()
        except RoleFailure as exc:
            return exc
        return None

    def stop(self, grace: float = 15.0) -> float:
        """Router first, then the workers; every group gone; the KV directory removed. Returns seconds."""
        t0 = time.monotonic()
        for rp in [*self.entries, *self.workers]:
            rp.stop(grace)
        if self.kv_dir is not None:
            shutil.rmtree(self.kv_dir, ignore_errors=True)
        self.teardown_s = time.monotonic() - t0
        return self.teardown_s

    def all_gone(self) -> bool:
        return not any(rp.group_alive() for rp in self.roles)

    def pids(self) -> dict[str, int]:
        return {rp.role.name: rp.proc.pid for rp in self.roles if rp.proc is not None}


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eE]+|NaN)', re.M)


def scrape(url: str, timeout: float = 3.0) -> dict[str, float]:
    """A Prometheus text page as ``name{labels}`` -> value (empty when unreachable)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            text = resp.read().decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return {}
    out: dict[str, float] = {}
    for m in _SAMPLE.finditer(text):
        try:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
        except ValueError:
            continue
    return out


def sum_samples(samples: dict[str, float], name: str, label: str = "") -> float:
    return sum(v for k, v in samples.items() if k.split("{", 1)[0] == name and label in k)


def pd_evidence(proc: DeploymentProcess) -> dict[str, float]:
    """What shows KV really moved: decode's prompt tokens by source and prefill's generated tokens."""
    out: dict[str, float] = {}
    for rp in proc.roles:
        if rp.role.kind not in ("prefill", "decode"):
            continue
        s = scrape(rp.role.launch.metrics_url)
        out[f"{rp.role.name}.external_kv_transfer_tokens"] = sum_samples(
            s, "vllm:prompt_tokens_by_source_total", 'source="external_kv_transfer"')
        out[f"{rp.role.name}.local_compute_tokens"] = sum_samples(
            s, "vllm:prompt_tokens_by_source_total", 'source="local_compute"')
        out[f"{rp.role.name}.generation_tokens"] = sum_samples(s, "vllm:generation_tokens_total")
        out[f"{rp.role.name}.requests"] = sum_samples(s, "vllm:request_success_total")
    return out
