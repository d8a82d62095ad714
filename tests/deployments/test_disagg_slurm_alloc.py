"""One Slurm allocation per deployment: every node the worker pools take, the GPUs of one node each."""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.sweep import slurm
from infx.sweep.deployment import allocation
from infx.sweep.layout import RunDir
from infx.sweep.prepare import PlannedGroup


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


def _row(compat: Path, key: str):  # type: ignore[no-untyped-def]
    from infx.matrix.select import select_points

    return select_points([str(compat / "nvidia-master.yaml")], str(compat / "runners.yaml"), [key], evals="none",
                         conc=None)


def test_roles_are_pinned_to_their_pool_nodes(compat: Path) -> None:
    from infx.engines.disagg.placement import PlacementError, place
    from infx.engines.disagg.render import render_deployment

    (p, *_) = _row(compat, "dsr1-fp4-b200-dynamo-trt")  # prefill 1 x 4 GPUs, decode 1 x 8 GPUs
    dep = render_deployment(p)
    at8 = place(dep, 8, job_nodes=2)
    assert (at8["prefill"].first_node, at8["prefill"].nodes, at8["prefill"].gpus_per_task) == (0, 1, 4)
    assert (at8["decode"].first_node, at8["decode"].nodes, at8["decode"].gpus_per_task) == (1, 1, 8)
    assert at8["frontend"].first_node == 0 and at8["frontend"].gpus_per_task == 0
    at4 = place(dep, 4, job_nodes=3)  # the 8-GPU decode instance spans two 4-GPU nodes: one rank per node
    assert at4["decode"].model_dump() == {"first_node": 1, "nodes": 2, "ntasks": 2, "gpus_per_task": 4}
    assert at4["decode"].srun_args() == ["--nodes=2", "--relative=1", "--ntasks=2", "--ntasks-per-node=1",
                                         "--gpus-per-task=4"]
    with pytest.raises(PlacementError, match="take 3 node"):
        place(dep, 4, job_nodes=2)
    assert {r.first_node for r in place(dep, None).values()} == {0}  # no GPUs in the job: one node


def test_placement_takes_exactly_the_nodes_sbatch_asked_for(compat: Path) -> None:
    from infx.diagnostics import InfxError
    from infx.engines.disagg.placement import place
    from infx.engines.disagg.render import render_deployment

    seen = 0
    for key in ("dsr1-fp8-h200-dynamo-sglang", "dsr1-fp4-b200-dynamo-trt", "dsr1-fp8-h200-dynamo-trt"):
        for p in _row(compat, key):
            try:
                dep = render_deployment(p)
            except InfxError:
                continue
            nodes, _ = allocation(p, 8)
            placed = place(dep, 8, job_nodes=nodes)
            used = {n for pl in placed.values() for n in range(pl.first_node, pl.first_node + pl.nodes)}
            assert used == set(range(nodes)), (key, p.point_id)
            workers = [placed[r.name] for r in dep.roles if r.kind in ("prefill", "decode")]
            assert sum(pl.nodes for pl in workers) == nodes
            seen += 1
    assert seen > 10


def test_role_step_carries_its_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    from infx.engines.disagg.placement import RolePlacement
    from infx.engines.disagg.process import step_argv

    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    argv = step_argv("decode", ["python", "-m", "x"], RolePlacement(first_node=2, nodes=1, ntasks=1, gpus_per_task=8))
    assert "--relative=2" in argv and "--gpus-per-task=8" in argv and "--nodes=1" in argv
    assert "--relative=0" in step_argv("router", ["r"])


def test_a_cpu_deployment_on_a_two_node_fleet_takes_a_node_per_pool(tmp_path: Path) -> None:
    import yaml

    from infx.engines.disagg.placement import place
    from infx.sweep.prepare import RunRequest, planned_groups, prepare

    repo = Path(__file__).resolve().parents[2]
    runners = yaml.safe_load((repo / "configs/runners.yaml").read_text())
    req = dict(config_files=[str(repo / "configs/cpu-master.yaml")], config_keys=["disagg-tinyllama-bf16-cpu-vllm"],
               results=str(tmp_path), preflight=False)
    one = prepare(RunRequest(runner_config=str(repo / "configs/runners.yaml"), **req))  # type: ignore[arg-type]
    assert [(g.nodes, g.gpus) for g in planned_groups(one)] == [(1, 0)]  # no nodes declared: one node
    for fleet in ("local", "cluster:local"):
        runners["hardware"][fleet]["nodes"] = 2
    (tmp_path / "runners.yaml").write_text(yaml.safe_dump(runners))
    two = prepare(RunRequest(runner_config=str(tmp_path / "runners.yaml"), **req))  # type: ignore[arg-type]
    assert [(g.nodes, g.gpus) for g in planned_groups(two)] == [(2, 0)]
    dep = two.groups[0].launch
    from infx.engines.disagg.model import Deployment

    assert isinstance(dep, Deployment)
    placed = place(dep, None, job_nodes=2)
    assert (placed["prefill"].first_node, placed["decode"].first_node) == (0, 1)
    assert {placed[r.name].first_node for r in dep.roles if r.kind not in ("prefill", "decode")} == {0}
    assert {r.first_node for r in place(dep, None, job_nodes=1).values()} == {0}
