"""One Slurm allocation per deployment: every node the worker pools take, the GPUs of one node each."""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.sweep import slurm
from infx.sweep.deployment import allocation
from infx.sweep.driver import PlannedGroup
from infx.sweep.layout import RunDir


def test_allocation_of_real_rows(compat: Path) -> None:
    from infx.matrix.select import select_points

    (p, *_) = select_points([str(compat / "nvidia-master.yaml")], str(compat / "runners.yaml"),
                            ["dsr1-fp4-b200-dynamo-trt"], evals="none", conc=None)
    assert p.prefill is not None and p.decode is not None
    assert (p.prefill.gpus, p.decode.gpus) == (4, 8)
    assert allocation(p, 8) == (2, 8)  # prefill on one node, decode on another
    assert allocation(p, 4) == (3, 4)  # GB200-style 4-GPU nodes: 1 + 2


def test_sbatch_asks_for_every_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slurm, "_need", lambda tool: tool)
    rd = RunDir(tmp_path, "r1")
    argv = slurm.sbatch_argv(rd, [PlannedGroup(fingerprint="a" * 64, point_ids=["p"], gpus=8, nodes=3)], gpus=8,
                             nodes=3, python="/py")
    assert "--nodes=3" in argv and "--gres=gpu:8" in argv
    single = slurm.sbatch_argv(rd, [PlannedGroup(fingerprint="a" * 64, point_ids=["p"])], gpus=0, python="/py")
    assert not any(a.startswith("--nodes") for a in single)


def test_roles_become_steps_only_inside_a_slurm_job(monkeypatch: pytest.MonkeyPatch) -> None:
    from infx.engines.disagg.process import step_argv

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert step_argv("decode", ["python", "-m", "x"]) == ["python", "-m", "x"]
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    argv = step_argv("decode", ["python", "-m", "x"])
    assert argv[0] == "/usr/bin/srun" and "--overlap" in argv and "--job-name=infx-decode" in argv
    assert argv[-3:] == ["python", "-m", "x"]
