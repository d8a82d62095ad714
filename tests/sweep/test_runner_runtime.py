"""A runner declares where its launches run (runners.yaml ``hardware.<fleet>.runtime``): the sweep renders each
point in that runtime, a scripted launch keeps the script's own entrypoint inside it, and preflight warns when a
GPU row would run ``local`` on a machine without that GPU."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from infx.preflight.gate import PreflightOptions, preflight_points
from infx.sweep.prepare import RunRequest, prepare

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "compat" / "inferencex"
KEY = "dsv4-fp8-h200-vllm"

pytestmark = [
    pytest.mark.skipif(not (CORPUS / "benchmarks").is_dir(), reason="InferenceX corpus absent"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) not installed"),
]


def _workspace(tmp_path: Path, runtime: str | None) -> Path:
    root = tmp_path / "ws"
    (root / "configs").mkdir(parents=True)
    shutil.copy(CORPUS / "nvidia-master.yaml", root / "configs" / "nvidia-master.yaml")
    runners = yaml.safe_load((CORPUS / "runners.yaml").read_text())
    if runtime is not None:
        runners["hardware"]["h200"] = {"gpus-per-node": 8, "available-cpu-dram-mib": 1_471_356, "runtime": runtime}
    (root / "configs" / "runners.yaml").write_text(yaml.safe_dump(runners))
    (root / "benchmarks").symlink_to(CORPUS / "benchmarks")
    (root / "infx.toml").write_text("")
    return root


def _prepared(tmp_path: Path, runtime: str | None):  # type: ignore[no-untyped-def]
    ws = _workspace(tmp_path, runtime)
    req = RunRequest(config_files=[str(ws / "configs" / "nvidia-master.yaml")],
                     runner_config=str(ws / "configs" / "runners.yaml"), config_keys=[KEY], conc=[4],
                     results=str(tmp_path / "res"), workspace=str(ws), preflight=False)
    return prepare(req)


def test_a_runner_that_declares_docker_runs_the_scripts_own_entrypoint_in_the_image(tmp_path: Path) -> None:
    prep = _prepared(tmp_path, "docker")
    assert prep.groups and not prep.rejects
    for g in prep.groups:
        launch = g.launch
        assert launch is not None and launch.runtime == "docker"
        assert launch.argv[:2] == ["docker", "run"] and "--gpus" in launch.argv
        inside = launch.argv[launch.argv.index(launch.image) + 1:]
        assert inside[:2] == ["vllm", "serve"], inside[:6]  # the script's entrypoint, not this venv's python


def test_without_a_declared_runtime_the_row_runs_local_and_preflight_warns(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    prep = _prepared(tmp_path, None)
    launch = prep.groups[0].launch
    assert launch is not None and launch.runtime == "local"
    assert launch.argv[0].endswith("python3") or launch.argv[0].endswith("python")  # this machine's interpreter
    point = prep.groups[0].points[0]
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine with no nvidia-smi
    (v,) = preflight_points([point], launches={point.point_id: launch},
                            options=PreflightOptions(local_gpu_check=True))
    (check,) = [c for c in v.checks if c.name == "runtime"]
    assert check.status == "warn" and "would run `local`" in check.message and "runners.yaml" in check.message
    (tool := tmp_path / "nvidia-smi").write_text("#!/bin/sh\n")
    tool.chmod(0o755)  # the GPU's tools are here: no warning
    (v,) = preflight_points([point], launches={point.point_id: launch},
                            options=PreflightOptions(local_gpu_check=True))
    assert not [c for c in v.checks if c.name == "runtime"]
