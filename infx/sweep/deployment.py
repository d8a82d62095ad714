"""A multi-role deployment as the sweep's :class:`~infx.sweep.interfaces.RunningEngine`.

Every role gets a loopback port picked right before it starts (the workers' when the deployment starts, the
router's once every worker is ready) and ExampleConnector a fresh shared directory per start; the deployment
is rendered again with them and must keep its planned fingerprint. A role that loses its port before it is
ready is relaunched on a new one (:mod:`infx.engines.ports`, bounded); ``port_retries`` in the deployment
record and the start-up facts keep each retry. Role logs go next to the
group's engine log (``groups/FP.ROLE.log``); ``groups/FP.deployment.json`` records the rendered roles,
their pids, per-role ready times, the deployment's start-up and teardown seconds and, read from the
workers' Prometheus pages just before teardown, the evidence that KV moved from prefill to decode.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from infx.atomic import write_text
from infx.engines.disagg.model import Deployment
from infx.engines.logfile import log_excerpt, log_size
from infx.matrix.point import Point
from infx.results.layout import StartupSummary
from infx.sweep.grouping import LaunchGroup
from infx.sweep.interfaces import LaunchFailed
from infx.sweep.rendering import RenderAtPort

if TYPE_CHECKING:
    from infx.engines.disagg.process import DeploymentProcess, RoleFailure
    from infx.engines.ports import PortClaims, PortRetry

StepRecord = dict[str, str | int | list[int] | None]  # what a role's step wrote when it picked its port


def allocation(point: Point, gpus_per_node: int) -> tuple[int, int]:
    """(nodes, GPUs per node) of one allocation for a multinode point: each worker pool on nodes of its own."""
    from infx.engines.disagg.placement import pool_nodes

    assert point.prefill is not None and point.decode is not None
    pools = [w.gpus for w in (point.prefill, point.decode) if w.num_worker > 0]
    nodes = sum(pool_nodes(g, gpus_per_node) for g in pools) or 1
    return nodes, min(gpus_per_node, max(pools, default=0))


def free_ports(point: Point, claims: PortClaims | None = None, keys: list[str] | None = None) -> dict[str, int]:
    """A port for every role of the point's deployment, picked now (``claims``: a launch's
    :class:`~infx.engines.ports.PortClaims`, which hands out ``INFX_PORTS_FIRST`` ports; without it plain
    kernel ports, e.g. for a port the start picks again later). ``keys``: only those go through ``claims``."""
    from infx.engines.disagg.vllm_pd import default_ports
    from infx.engines.ports import kernel_port

    assert point.prefill is not None and point.decode is not None
    ports: dict[str, int] = {}
    for key in default_ports(0, point.prefill.num_worker, point.decode.num_worker):
        while True:
            port = claims.pick(key, ports.values()) if claims is not None and (keys is None or key in keys) \
                else kernel_port()
            if port not in ports.values():
                break
        ports[key] = port
    return ports


def _classified(exc: RoleFailure, retries: list[PortRetry] | None = None) -> LaunchFailed:
    return LaunchFailed(f"deployment-role-{exc.kind}:{exc.role}", exc.message, exc.log_tail, port_retries=retries)


class LocalDeployment:
    def __init__(self, deployment: Deployment, log_path: Path, kv_dir: Path | None,
                 ready_timeout_cap: float | None = None, render: Callable[[dict[str, int]], Deployment] | None = None,
                 ports: dict[str, int] | None = None, claims: PortClaims | None = None):
        """``render(ports) -> Deployment`` renders the deployment again with other ports (``ports``: the
        ones ``deployment`` was rendered with); without it the ports are fixed and a lost one is final."""
        from infx.engines.disagg.process import DeploymentProcess
        from infx.engines.disagg.vllm_pd import port_keys
        from infx.engines.ports import PortClaims

        self.planned = deployment
        self.log_path = log_path
        self.ready_timeout_cap = ready_timeout_cap
        self.render = render
        prefix = log_path.name.split(".", 1)[0]
        self.proc = DeploymentProcess(deployment, log_path.parent, prefix, kv_dir=kv_dir, claims=claims or PortClaims(),
                                      render=self._render_checked if render is not None else None,
                                      ports=dict(ports or {}), keys_of=port_keys)
        self.record_path = log_path.parent / f"{prefix}.deployment.json"
        self.evidence: dict[str, float] = {}

    # what the measurer reads, from the deployment as last rendered (ports change when one is lost)
    @property
    def deployment(self) -> Deployment:
        return self.proc.deployment

    @property
    def launch(self) -> Deployment:
        return self.proc.deployment

    @property
    def base_url(self) -> str:
        return str(self.proc.deployment.base_url)

    @property
    def served_model_name(self) -> str:
        return str(self.proc.deployment.served_model_name)

    @property
    def model_path(self) -> str:
        return str(self.proc.deployment.model_path)

    def _render_checked(self, ports: dict[str, int]) -> Deployment:
        assert self.render is not None
        fresh = self.render(ports)
        if fresh.fingerprint != self.planned.fingerprint:
            raise LaunchFailed("fingerprint-drift",
                               "the deployment rendered with new ports differs from the planned one")
        return fresh

    def _log(self, msg: str) -> None:
        with open(self.log_path, "a") as fh:
            fh.write(f"[infx deployment {time.strftime('%H:%M:%S')}] {msg}\n")

    def start(self) -> None:
        from infx.engines.disagg.process import RoleFailure

        self._log(f"{self.deployment.framework} deployment {self.deployment.fingerprint[:16]}: "
                  + ", ".join(f"{r.name} x{r.count} on :{r.launch.port}" for r in self.deployment.roles
                              if r.kind not in ("router", "frontend"))
                  + ("; the router's port is picked once the workers are ready" if self.render is not None else "")
                  + ("; each role's step picks its own port on its node" if self.proc.step_ports else ""))
        try:
            self.proc.start_workers()
        except RoleFailure as exc:
            self.proc.stop(grace=2.0)
            self._write()
            raise _classified(exc, self.proc.claims.retries) from None
        self._log("workers started: " + ", ".join(f"{k}={v}" for k, v in self.proc.pids().items()))
        self._write()

    def wait_ready(self, timeout: float) -> StartupSummary:
        from infx.engines.disagg.process import RoleFailure
        from infx.engines.logparse import parse_startup_log

        if self.ready_timeout_cap is not None:
            timeout = min(timeout, self.ready_timeout_cap)
        try:
            secs = self.proc.wait_ready(timeout)
        except LaunchFailed:
            self.stop()
            raise
        except RoleFailure as exc:
            self._log(f"role {exc.role} failed ({exc.kind}): {exc.message}")
            self.stop()
            raise _classified(exc, self.proc.claims.retries) from None
        self._log(f"every role ready after {secs:.1f} s: "
                  + ", ".join(f"{rp.role.name} {rp.ready_s:.1f} s" for rp in self.proc.roles if rp.ready_s))
        self._write()
        decode = next((rp for rp in self.proc.roles if rp.role.kind == "decode"), None)
        facts = parse_startup_log("vllm", decode.log_text()) if decode else None
        summary = (StartupSummary.from_facts(facts) if facts else None) or StartupSummary()
        other = {"deployment_startup_s": round(secs, 3), "deployment_roles": len(self.deployment.roles)}
        for rp in self.proc.roles:
            if rp.ready_s is not None:
                other[f"ready_s.{rp.role.name}"] = round(rp.ready_s, 3)
        summary.other.update(other)
        return summary.model_copy(update={"startup_s": secs, "port_retries": list(self.proc.claims.retries)})

    def failure(self) -> LaunchFailed | None:
        exc = self.proc.failure()
        return None if exc is None else _classified(exc)

    def log_size(self) -> int:
        return log_size(self.log_path)

    def log_excerpt(self, start: int, end: int | None = None) -> str:
        return log_excerpt(self.log_path, start, end)

    def log_tail(self, lines: int = 40) -> str:
        per = max(5, lines // max(1, len(self.proc.roles)))
        return "".join(f"--- {rp.role.name} ---\n{rp.tail(per)}" for rp in self.proc.roles)

    def stop(self) -> None:
        from infx.engines.disagg.process import pd_evidence

        if self.proc.teardown_s is not None:
            return
        self.evidence = pd_evidence(self.proc)
        secs = self.proc.stop()
        self._log(f"teardown {secs:.1f} s; every role process group gone: {self.proc.all_gone()}")
        self._write()

    def _write(self) -> None:
        import json
        import os

        from infx.engines.disagg.process import in_slurm_job

        d = self.proc.deployment.redacted()
        record = {
            "fingerprint": d.fingerprint, "framework": d.framework, "entry": d.entry, "disagg": d.disagg,
            "kv_transfer": d.kv_transfer.model_dump() if d.kv_transfer else None, "notes": d.notes,
            "roles": [{"name": r.name, "kind": r.kind, "count": r.count, "gpus_per_instance": r.gpus_per_instance,
                       "argv": rp.role.launch.argv, "exec_argv": rp.argv, "port": rp.role.launch.port,
                       "launches": self.proc.claims.launches(r.name), "log": str(rp.log_path),
                       "step_port": _step_record(self.proc, r.name),
                       "pid": rp.proc.pid if rp.proc else None, "ready_s": rp.ready_s, "stop_s": rp.stop_s,
                       "placement": self.proc.placed[r.name].model_dump() if r.name in self.proc.placed else None}
                      for r, rp in zip(d.roles, self.proc.roles, strict=False)],
            "startup_s": self.proc.startup_s, "teardown_s": self.proc.teardown_s,
            "all_gone": self.proc.all_gone() if self.proc.teardown_s is not None else None,
            "pd_evidence": self.evidence,
            "port_retries": [r.model_dump(mode="json") for r in self.proc.claims.retries],
            "step_ports": self.proc.step_ports,  # each role's step picked its port on its node (inside Slurm)
            "slurm_job": os.environ.get("SLURM_JOB_ID"), "slurm_steps": in_slurm_job(),
        }
        write_text(self.record_path, json.dumps(record, indent=2) + "\n")


def _step_record(proc: DeploymentProcess, role: str) -> StepRecord | None:
    """What the role's step recorded when it picked its port (host, ports, pid); None when it did not."""
    import json

    try:
        record: StepRecord = json.loads(proc.step_record_path(role).read_text())
    except (OSError, ValueError):
        return None
    return record


def start_deployment(render_at_port: RenderAtPort, group: LaunchGroup, log_path: Path,
                     ready_timeout_cap: float | None = None) -> LocalDeployment:
    from infx.engines.disagg.vllm_pd import port_keys
    from infx.engines.ports import PortClaims

    point = group.points[0]
    claims = PortClaims()
    kv_dir = Path(tempfile.mkdtemp(prefix="infx-kv-"))

    def render(ports: dict[str, int]) -> Deployment:
        rendered = render_at_port(point, ports["router"], ports=ports, kv_dir=str(kv_dir))
        if not isinstance(rendered, Deployment):
            raise LaunchFailed("launch-error", f"point {point.point_id} renders to one engine, not a deployment")
        return rendered

    # the workers' ports are picked now, the router's again once the workers are ready
    ports = free_ports(point, claims, keys=[k for k in free_ports(point) if k not in port_keys("router")])
    try:
        deployment = render(ports)
    except Exception:
        import shutil

        shutil.rmtree(kv_dir, ignore_errors=True)
        raise
    if deployment.fingerprint != group.fingerprint:
        import shutil

        shutil.rmtree(kv_dir, ignore_errors=True)
        raise LaunchFailed("fingerprint-drift", "the deployment rendered now differs from the planned one")
    if deployment.model_builder == "tiny-model":
        from infx.engines.tiny_model import ensure_tiny_model

        ensure_tiny_model(deployment.model_path)
    engine = LocalDeployment(deployment, log_path, kv_dir, ready_timeout_cap, render=render, ports=ports,
                             claims=claims)
    engine.start()
    return engine
