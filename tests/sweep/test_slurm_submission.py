"""What Slurm is asked for, through the real submission path: ``infx run --backend slurm``, the ``infx run-group``
its job runs, and ``infx repro --backend slurm``. ``sbatch`` and ``srun`` are recorded at the boundary (a script
on PATH that writes its argv and answers as Slurm would): no 8-GPU node exists here, and the request is what is
under test. The real single-node Slurm runs the CPU sweep in tests/sweep/test_slurm.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
KEY = "dsr1-fp4-b200-dynamo-trt"  # prefill pools of 4 GPUs, decode pools of 8 and more: 2-6 nodes each

RECORDER = """#!/bin/sh
python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@" >> "{log}"
{answer}
"""


def _tools(tmp: Path) -> tuple[dict[str, str], Path, Path]:
    """A PATH whose ``sbatch`` records its argv and prints a job id, and whose ``srun`` records its argv and
    fails the step (so a deployment's roles are placed but nothing heavy starts)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    sbatch_log, srun_log = tmp / "sbatch.jsonl", tmp / "srun.jsonl"
    for name, log, answer in (("sbatch", sbatch_log, "echo 4242"), ("srun", srun_log, "exit 3")):
        f = bin_dir / name
        f.write_text(RECORDER.format(log=log, answer=answer))
        f.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO)}
    return env, sbatch_log, srun_log


def _runners(compat: Path, tmp: Path) -> Path:
    """The corpus' runners.yaml with the multinode runner's node size declared, as a new user would."""
    data = yaml.safe_load((compat / "runners.yaml").read_text())
    data["hardware"]["b200-multinode"] = {"gpus-per-node": 8, "available-cpu-dram-mib": 3_095_781}
    out = tmp / "runners.yaml"
    out.write_text(yaml.safe_dump(data))
    return out


def _infx(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)


def _records(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []


def _opt(argv: list[str], name: str) -> str | None:
    return next((a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")), None)


def _groups_of(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == "--group"]


def test_multinode_sweep_asks_slurm_for_the_planned_nodes(compat: Path, tmp_path: Path) -> None:
    env, sbatch_log, srun_log = _tools(tmp_path)
    runners = _runners(compat, tmp_path)
    r = _infx(env, "run", "--backend", "slurm", "--config-files", str(compat / "nvidia-master.yaml"),
              "--runner-config", str(runners), "--config-keys", KEY, "--results", str(tmp_path / "res"),
              "--run-id", "mn")
    assert r.returncode == 0, r.stderr[-3000:]
    plan = json.loads((tmp_path / "res" / "mn" / "plan.json").read_text())
    planned = {g["fingerprint"]: (g["nodes"], g["gpus"]) for g in plan["groups"]}
    assert {n for n, _ in planned.values()} >= {2, 3, 6} and {g for _, g in planned.values()} == {8}

    asked: dict[str, tuple[int, int]] = {}
    for argv in _records(sbatch_log):
        nodes, gres = int(_opt(argv, "nodes") or 1), _opt(argv, "gres")
        assert gres is not None and gres.startswith("gpu:"), argv
        for prefix in _groups_of(argv):
            (fp,) = [f for f in planned if f.startswith(prefix)]
            asked[fp] = (nodes, int(gres.removeprefix("gpu:")))
    assert asked == planned  # every group, on the nodes x GPUs per node plan.json records

    # the job's own command (`infx run-group`), in the allocation sbatch was asked for: every worker step
    # lands on a node of the job, and no step asks for more GPUs than one node has
    argv = next(a for a in _records(sbatch_log) if not _opt(a, "array"))
    nodes, gpus = int(_opt(argv, "nodes") or 1), int((_opt(argv, "gres") or "gpu:0").removeprefix("gpu:"))
    job = argv[argv.index(next(a for a in argv if a.endswith("job.sh"))) + 1:]
    g = _infx({**env, "SLURM_JOB_ID": "4242", "SLURM_JOB_NUM_NODES": str(nodes), "SLURM_GPUS_ON_NODE": str(gpus)},
              *job[job.index("run-group"):])
    assert g.returncode == 1, g.stderr[-3000:]  # the recorded srun fails every step: the group fails
    steps = {_opt(s, "job-name"): s for s in _records(srun_log)}
    workers = [s for name, s in steps.items() if name in ("infx-prefill", "infx-decode")]
    assert len(workers) == 2, steps.keys()
    used = {int(_opt(s, "relative") or 0) + k for s in workers for k in range(int(_opt(s, "nodes") or 1))}
    assert used == set(range(nodes))  # prefill on one node, decode on the next: exactly the job's nodes
    assert all(int(_opt(s, "gpus-per-task") or 0) <= gpus for s in workers)


def test_repro_asks_slurm_for_what_its_plan_records(tmp_path: Path) -> None:
    from infx.matrix.point import Point
    from tests.repro.helpers import bundle, demo_point, render

    env, sbatch_log, _ = _tools(tmp_path)
    cpu = demo_point()
    point = Point.from_row({**cpu.to_row(), "runner": "cluster:mi355x-amds", "tp": 8})  # 8 GPUs on one node
    src = bundle(tmp_path / "orig", "o1", point, render(cpu))
    r = _infx(env, "repro", str(src), "--backend", "slurm", "--results", str(tmp_path / "res"), "--wait-timeout", "5")
    assert "submitted job 4242" in r.stderr, r.stderr[-3000:]
    (run,) = [d for d in (tmp_path / "res").iterdir() if d.name.startswith("repro-")]
    plan = json.loads((run / "plan.json").read_text())
    (argv,) = _records(sbatch_log)
    (g,) = plan["groups"]
    assert (g["nodes"], g["gpus"]) == (1, 8)
    assert _opt(argv, "gres") == "gpu:8" and _opt(argv, "nodes") is None
    assert _groups_of(argv) == [g["fingerprint"][:16]]


def test_dry_run_plan_matches_the_submission(compat: Path, tmp_path: Path) -> None:
    """The plan a dry run writes is the one a submission writes (one ``planned_groups``)."""
    env, sbatch_log, _ = _tools(tmp_path)
    runners = _runners(compat, tmp_path)
    common = ["--config-files", str(compat / "nvidia-master.yaml"), "--runner-config", str(runners),
              "--config-keys", KEY, "--results", str(tmp_path / "res")]
    assert _infx(env, "run", *common, "--run-id", "dry", "--dry-run").returncode == 0
    assert _infx(env, "run", *common, "--run-id", "sub", "--backend", "slurm").returncode == 0
    dry = json.loads((tmp_path / "res" / "dry" / "plan.json").read_text())["groups"]
    sub = json.loads((tmp_path / "res" / "sub" / "plan.json").read_text())["groups"]
    assert dry == sub and len(_records(sbatch_log)) >= 1
