"""Preflight per role: prefill and decode memory checked separately, the deployment's GPUs vs the runner."""

from __future__ import annotations

from pathlib import Path

from infx.catalog.runners import RunnerConfig
from infx.engines.disagg.render import render_deployment
from infx.matrix.select import select_points
from infx.preflight.gate import preflight_points

REPO = Path(__file__).resolve().parents[2]


def _cpu_point():  # type: ignore[no-untyped-def]
    (p,) = select_points([str(REPO / "configs/cpu-master.yaml")], str(REPO / "configs/runners.yaml"),
                         ["disagg-tinyllama-bf16-cpu-vllm"], evals="none", conc=None)
    return p


def test_cpu_deployment_is_checked_per_role(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from infx.catalog import load_runners

    router = tmp_path / "router-venv" / "bin" / "vllm-router"  # present (the gate checks only that it exists)
    router.parent.mkdir(parents=True)
    router.write_text("#!/bin/sh\n")
    monkeypatch.setenv("INFX_ROUTER_VENV", str(tmp_path / "router-venv"))
    p = _cpu_point()
    (v,) = preflight_points([p], runners=load_runners(REPO / "configs/runners.yaml"),
                            launches={p.point_id: render_deployment(p)})
    checks = {c.name: c for c in v.checks}
    assert checks["memory:prefill"].status == "ok" and checks["memory:decode"].status == "ok"
    assert "prefill x1 (on the CPU)" in checks["memory:prefill"].message
    assert "decode x1 (on the CPU)" in checks["memory:decode"].message
    assert checks["memory:host"].status == "ok" and "prefill + decode on one host" in checks["memory:host"].message
    assert checks["capacity"].status == "ok" and v.ok_to_run
    for role in ("prefill", "decode"):  # the connector's transfer buffers: a line per role, here zero (files on disk)
        mem = checks[f"memory:{role}"].details["memory"]
        (line,) = [x for x in mem["host"] if x["component"] == "KV-transfer buffer"]
        assert line["bytes"] == 0 and "ExampleConnector" in line["note"]
        assert "KV transfer 0.0 MB on the host (ExampleConnector" in checks[f"memory:{role}"].message


def test_deployment_larger_than_the_fleet_fails_capacity(compat: Path) -> None:
    (p, *_) = select_points([str(compat / "nvidia-master.yaml")], str(compat / "runners.yaml"),
                            ["dsr1-fp4-b200-dynamo-trt"], evals="none", conc=None)
    dep = render_deployment(p)
    total = dep.gpus()
    assert total > 8
    # The fleet's compute nodes come from the explicit 'nodes' fact, never from the runner names listed.
    small = RunnerConfig.model_validate({"labels": {p.runner: ["n_0", "n_1", "n_2", "n_3", "n_4"]},
                                         "hardware": {p.runner: {"available-cpu-dram-mib": 2_000_000,
                                                                 "gpus-per-node": 8, "nodes": 1}}})
    (v,) = preflight_points([p], runners=small, launches={p.point_id: dep})
    cap = next(c for c in v.checks if c.name == "capacity")
    assert cap.status == "fail" and f"deployment takes {total} GPU(s)" in cap.message and "has 1 node(s)" in cap.message
    assert {"memory:prefill", "memory:decode"} <= {c.name for c in v.checks}
    assert not v.ok_to_run


def test_capacity_without_a_node_count_is_unknown_not_a_failure(compat: Path) -> None:
    """Runner names under a label are GitHub runners (login nodes), not compute nodes: one listed name
    and no 'nodes' fact gives 'capacity unknown' (a warning), and a large enough 'nodes' passes."""
    (p, *_) = select_points([str(compat / "nvidia-master.yaml")], str(compat / "runners.yaml"),
                            ["dsr1-fp4-b200-dynamo-trt"], evals="none", conc=None)
    dep = render_deployment(p)
    need = -(-dep.gpus() // 8)
    facts = {"available-cpu-dram-mib": 2_000_000, "gpus-per-node": 8}
    one_runner = RunnerConfig.model_validate({"labels": {p.runner: ["login_0"]}, "hardware": {p.runner: facts}})
    (v,) = preflight_points([p], runners=one_runner, launches={p.point_id: dep})
    cap = v.check("capacity")
    assert cap is not None and cap.status == "warn" and cap.message.startswith("capacity unknown:")
    assert "runner names are not compute nodes" in cap.message
    big = RunnerConfig.model_validate({"labels": {p.runner: ["login_0"]},
                                       "hardware": {p.runner: {**facts, "nodes": need}}})
    (v,) = preflight_points([p], runners=big, launches={p.point_id: dep})
    cap = v.check("capacity")
    assert cap is not None and cap.status == "ok" and f"of {need} ({p.runner}.nodes)" in cap.message


def test_real_runners_yaml_gives_no_capacity_failure(compat: Path) -> None:
    """The real runners.yaml, unchanged, has no node counts: every multinode row's capacity is unknown."""
    from infx.catalog import load_runners

    runners = load_runners(compat / "runners.yaml")
    points = select_points([str(compat / "nvidia-master.yaml")], str(compat / "runners.yaml"),
                           ["dsr1-fp4-b200-dynamo-trt", "dsv4-fp4-gb200-dynamo-vllm*"], evals="none", conc=None)
    verdicts = preflight_points(points, runners=runners, launches={p.point_id: render_deployment(p) for p in points})
    caps = [v.check("capacity") for v in verdicts]
    assert caps and all(c is not None and c.status == "warn" and "capacity unknown" in c.message for c in caps)


def test_runners_yaml_nodes_extension(compat: Path, tmp_path: Path) -> None:
    """hardware.<fleet>.nodes in a runners.yaml file: a count that fits passes, a bad value is FILE:LINE."""
    import pytest

    from infx.catalog import load_runners
    from infx.diagnostics import InfxError

    text = (compat / "runners.yaml").read_text()
    assert "  cluster:gb200-nv:\n    available-cpu-dram-mib: 860_160\n    gpus-per-node: 4\n" in text
    good = tmp_path / "runners.yaml"
    good.write_text(text.replace("  cluster:gb200-nv:\n    available-cpu-dram-mib: 860_160\n    gpus-per-node: 4\n",
                                 "  cluster:gb200-nv:\n    available-cpu-dram-mib: 860_160\n    gpus-per-node: 4\n"
                                 "    nodes: 18\n"))
    runners = load_runners(good)
    points = select_points([str(compat / "nvidia-master.yaml")], str(good), ["dsv4-fp4-gb200-dynamo-vllm*"],
                           evals="none", conc=None)
    verdicts = preflight_points(points, runners=runners, launches={p.point_id: render_deployment(p) for p in points})
    caps = [v.check("capacity") for v in verdicts]
    assert caps and {c.status for c in caps if c} <= {"ok", "fail"}
    assert any(c and c.status == "ok" and "of 18 (cluster:gb200-nv.nodes)" in c.message for c in caps)
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("    nodes: 18\n", "    nodes: 0\n"))
    with pytest.raises(InfxError) as exc:
        load_runners(bad)
    d = exc.value.diagnostics[0]
    assert d.file == str(bad) and d.line and "nodes" in str(d)
def test_missing_router_fails_preflight_naming_the_install(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from infx.catalog import load_runners

    monkeypatch.setenv("INFX_ROUTER_VENV", str(tmp_path / "no-router-venv"))
    p = _cpu_point()
    (v,) = preflight_points([p], runners=load_runners(REPO / "configs/runners.yaml"),
                            launches={p.point_id: render_deployment(p)})
    checks = {c.name: c for c in v.checks}
    assert checks["helper:router"].status == "fail" and not v.ok_to_run
    assert "make router-venv" in checks["helper:router"].message and "\n" not in checks["helper:router"].message


def test_unknown_router_kv_backend_or_zero_tp_is_refused_not_rendered_as_another() -> None:
    import pytest

    from infx.diagnostics import InfxError
    from infx.matrix.point import Component

    p = _cpu_point()
    bad = [p.model_copy(update={"router": Component(name="nginx", version="1")}),
           p.model_copy(update={"framework": "sglang-disagg", "kv_p2p_transfer": "carrier-pigeon"}),
           p.model_copy(update={"decode": p.decode.model_copy(update={"tp": 0})})]
    for point, text in zip(bad, ("router 'nginx' is not one", "kv-p2p-transfer 'carrier-pigeon' is not one",
                                 "decode tp 0"), strict=True):
        with pytest.raises(InfxError, match=text):
            render_deployment(point)
