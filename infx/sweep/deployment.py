"""A multi-role deployment as the sweep's :class:`~infx.sweep.executors.RunningEngine`.

Every role gets a free loopback port and ExampleConnector a fresh shared directory per start; the
deployment is rendered again with them and must keep its planned fingerprint. Role logs go next to the
group's engine log (``groups/FP.ROLE.log``); ``groups/FP.deployment.json`` records the rendered roles,
their pids, per-role ready times, the deployment's start-up and teardown seconds and, read from the
workers' Prometheus pages just before teardown, the evidence that KV moved from prefill to decode.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from infx.atomic import write_text
from infx.matrix.point import Point
from infx.results.layout import StartupSummary
from infx.sweep.executors import LaunchFailed, LaunchGroup
from infx.sweep.logfile import log_excerpt, log_size


def allocation(point: Point, gpus_per_node: int) -> tuple[int, int]:
    """(nodes, GPUs per node) of one allocation for a multinode point: each worker pool on nodes of its own."""
    from infx.engines.disagg.placement import pool_nodes

    assert point.prefill is not None and point.decode is not None
    pools = [w.gpus for w in (point.prefill, point.decode) if w.num_worker > 0]
    nodes = sum(pool_nodes(g, gpus_per_node) for g in pools) or 1
    return nodes, min(gpus_per_node, max(pools, default=0))


def free_ports(point: Point) -> dict[str, int]:
    from infx.engines.disagg.vllm_pd import default_ports
    from infx.engines.server import free_port

    assert point.prefill is not None and point.decode is not None
    keys = default_ports(0, point.prefill.num_worker, point.decode.num_worker)
    ports: dict[str, int] = {}
    for key in keys:
        port = free_port()
        while port in ports.values():
            port = free_port()
        ports[key] = port
    return ports


def _classified(exc: Any) -> LaunchFailed:
    return LaunchFailed(f"deployment-role-{exc.kind}:{exc.role}", exc.message, exc.log_tail)


class LocalDeployment:
    def __init__(self, deployment: Any, log_path: Path, kv_dir: Path | None, ready_timeout_cap: float | None = None):
        from infx.engines.disagg.process import DeploymentProcess

        self.launch = deployment  # what the measurer reads (metrics_url, argv)
        self.deployment = deployment
        self.log_path = log_path
        self.base_url: str = deployment.base_url
        self.served_model_name: str = deployment.served_model_name
        self.model_path: str = deployment.model_path
        self.ready_timeout_cap = ready_timeout_cap
        prefix = log_path.name.split(".", 1)[0]
        self.proc = DeploymentProcess(deployment, log_path.parent, prefix, kv_dir=kv_dir)
        self.record_path = log_path.parent / f"{prefix}.deployment.json"
        self.evidence: dict[str, float] = {}

    def _log(self, msg: str) -> None:
        with open(self.log_path, "a") as fh:
            fh.write(f"[infx deployment {time.strftime('%H:%M:%S')}] {msg}\n")

    def start(self) -> None:
        from infx.engines.disagg.process import RoleFailure

        self._log(f"{self.deployment.framework} deployment {self.deployment.fingerprint[:16]}: "
                  + ", ".join(f"{r.name} x{r.count} on :{r.launch.port}" for r in self.deployment.roles))
        try:
            self.proc.start_workers()
        except RoleFailure as exc:
            self.proc.stop(grace=2.0)
            raise _classified(exc) from None
        self._log("workers started: " + ", ".join(f"{k}={v}" for k, v in self.proc.pids().items()))
        self._write()

    def wait_ready(self, timeout: float) -> StartupSummary:
        from infx.engines.disagg.process import RoleFailure
        from infx.engines.logparse import parse_startup_log

        if self.ready_timeout_cap is not None:
            timeout = min(timeout, self.ready_timeout_cap)
        try:
            secs = self.proc.wait_ready(timeout)
        except RoleFailure as exc:
            self._log(f"role {exc.role} failed ({exc.kind}): {exc.message}")
            self.stop()
            raise _classified(exc) from None
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
        return summary.model_copy(update={"startup_s": secs})

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

        d = self.deployment.redacted()
        record = {
            "fingerprint": d.fingerprint, "framework": d.framework, "entry": d.entry, "disagg": d.disagg,
            "kv_transfer": d.kv_transfer.model_dump() if d.kv_transfer else None, "notes": d.notes,
            "roles": [{"name": r.name, "kind": r.kind, "count": r.count, "gpus_per_instance": r.gpus_per_instance,
                       "argv": r.launch.argv, "exec_argv": rp.argv, "port": r.launch.port, "log": str(rp.log_path),
                       "pid": rp.proc.pid if rp.proc else None, "ready_s": rp.ready_s, "stop_s": rp.stop_s,
                       "placement": self.proc.placed[r.name].model_dump() if r.name in self.proc.placed else None}
                      for r, rp in zip(d.roles, self.proc.roles)],
            "startup_s": self.proc.startup_s, "teardown_s": self.proc.teardown_s,
            "all_gone": self.proc.all_gone() if self.proc.teardown_s is not None else None,
            "pd_evidence": self.evidence,
            "slurm_job": os.environ.get("SLURM_JOB_ID"), "slurm_steps": in_slurm_job(),
        }
        write_text(self.record_path, json.dumps(record, indent=2) + "\n")


def start_deployment(render_at_port: Any, group: LaunchGroup, log_path: Path,
                     ready_timeout_cap: float | None = None) -> LocalDeployment:
    point = group.points[0]
    ports = free_ports(point)
    kv_dir = Path(tempfile.mkdtemp(prefix="infx-kv-"))
    try:
        deployment = render_at_port(point, ports["router"], ports=ports, kv_dir=str(kv_dir))
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
    engine = LocalDeployment(deployment, log_path, kv_dir, ready_timeout_cap)
    engine.start()
    return engine
