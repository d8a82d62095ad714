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
    assert "prefill x1 (on the CPU)" in checks["memory:prefill"].message and "decode x1 (on the CPU)" in checks["memory:decode"].message
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
    small = RunnerConfig.model_validate({"labels": {p.runner: ["n_0"]},
                                         "hardware": {p.runner: {"available-cpu-dram-mib": 2_000_000,
                                                                 "gpus-per-node": 8}}})
    (v,) = preflight_points([p], runners=small, launches={p.point_id: dep})
    cap = next(c for c in v.checks if c.name == "capacity")
    assert cap.status == "fail" and f"deployment takes {total} GPU(s)" in cap.message and "has 1 node(s)" in cap.message
    assert {"memory:prefill", "memory:decode"} <= {c.name for c in v.checks}
    assert not v.ok_to_run


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
                                 "decode tp 0")):
        with pytest.raises(InfxError, match=text):
            render_deployment(point)
