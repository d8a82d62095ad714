"""GPU power on every node of a multi-node deployment: one sampler task per node inside the Slurm job,
merged into one CSV with node-qualified device ids. The merge and the per-node device choice are checked
on files in the real tools' formats; the srun step runs for real on the local single-node Slurm with the
fake nvidia-smi (no GPU and no second node can exist here)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from infx.telemetry.energy import check_window, validate_power
from infx.telemetry.nodes import NodeSampler, node_devices
from tests.sweep.test_slurm import local_slurm  # noqa: F401  (the real local Slurm fixture)
from tests.telemetry.powerfiles import install_fake_tools

REPO = Path(__file__).resolve().parents[2]
HEAD = ("timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm [MHz], clocks.current.memory [MHz], "
        "utilization.gpu [%], utilization.memory [%]\n")


def _rows(t0: float, ids: range, watts: float, times: list[float]) -> str:
    from datetime import datetime

    out = ""
    for t in times:
        stamp = datetime.fromtimestamp(t0 + t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        out += "".join(f"{stamp}, {i}, {watts + i:.2f} W, 45, 1980 MHz, 2619 MHz, 97 %, 40 %\n" for i in ids)
    return out


def test_node_files_merge_into_every_placed_gpu(tmp_path: Path) -> None:
    out = tmp_path / "gpu_metrics.csv"
    s = NodeSampler("nvidia-smi", out, node_devices([4, 8]))  # prefill 4 GPUs on node 0, decode 8 on node 1
    t0 = time.time()
    # node 0 reports all 8 GPUs of the node (4 unused) and was killed mid-line; node 1 had a closing one-shot
    s.node_file(0).write_text(HEAD + _rows(t0, range(8), 100, [0, 1, 2, 3]) + "2026/12/01 10:0")
    s.node_file(1).write_text(HEAD + _rows(t0, range(8), 300, [0, 1, 2]))
    s.node_file(1, tail=True).write_text(_rows(t0, range(8), 300, [3]))
    s.merge()
    text = out.read_text()
    assert text.count("timestamp") == 1 and ", n0:3," in text and ", n0:4," not in text and ", n1:7," in text
    v = validate_power(out, check_window(t0 + 0.5, t0 + 2.5, 2.0, 10, 100, 100), 12)
    assert v.power_valid, v.reasons
    assert v.observed_gpu_count == 12
    assert v.per_gpu_energy_j["n0:0"] == pytest.approx(100 * 2.0, rel=1e-6)
    assert v.per_gpu_energy_j["n1:7"] == pytest.approx(307 * 2.0, rel=1e-6)
    missing = NodeSampler("nvidia-smi", tmp_path / "m.csv", node_devices([4, 8]))
    missing.node_file(0).write_text(HEAD + _rows(t0, range(4), 100, [0, 1, 2, 3]))
    missing.merge()  # node 1 never wrote: its GPUs are missing, so the device count check fails the point
    bad = validate_power(tmp_path / "m.csv", check_window(t0 + 0.5, t0 + 2.5, 2.0, 10, 100, 100), 12)
    assert not bad.power_valid and bad.observed_gpu_count == 4


def test_amd_node_files_go_through_the_header_filter(tmp_path: Path) -> None:
    out = tmp_path / "gpu_metrics.csv"
    s = NodeSampler("amd-smi", out, [None, ["0"]])
    head = "timestamp,gpu,socket_power,gfx_voltage,gfx_activity,umc_activity,mm_activity,hotspot,mem\n"
    t = int(time.time())
    body = lambda ids: "".join(f"{t + k},{i},{500 + i},N/A,97,40,0,65,51\n" for k in range(3) for i in ids)  # noqa: E731
    s.node_file(0).write_text("WARNING: missing groups\n\n" + head + body([0, 1]) + head + body([0, 1]))
    s.node_file(1).write_text(head + body([0, 1]))
    s.merge()
    lines = out.read_text().splitlines()
    assert lines[0] == head.strip() and sum(ln.startswith("timestamp") for ln in lines) == 1
    ids = {ln.split(",")[1] for ln in lines[1:]}
    assert ids == {"n0:0", "n0:1", "n1:0"}


def test_step_is_one_task_per_node_with_a_file_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    argv = NodeSampler("nvidia-smi", tmp_path / "gpu_metrics.csv", node_devices([8, 8, 4])).step_argv()
    assert argv[:6] == ["/usr/bin/srun", "--overlap", "--nodes=3", "--ntasks=3", "--ntasks-per-node=1", "--relative=0"]
    assert f"--output={tmp_path}/gpu_metrics.node%n.csv" in argv and argv[argv.index("nvidia-smi") + 3:] == ["-l", "1"]


def test_gpus_on_nodes_follow_the_role_placement(compat: Path) -> None:
    from infx.engines.disagg.placement import gpus_on_nodes, place
    from infx.engines.disagg.render import render_deployment
    from infx.matrix.select import select_points

    (p, *_) = select_points([str(compat / "nvidia-master.yaml")], str(compat / "runners.yaml"),
                            ["dsr1-fp4-b200-dynamo-trt"], evals="none", conc=None)
    dep = render_deployment(p)
    assert gpus_on_nodes(dep, place(dep, 8), 8) == [4, 8]
    assert gpus_on_nodes(dep, place(dep, 4), 4) == [4, 4, 4]
    assert sum(gpus_on_nodes(dep, place(dep, 4), 4)) == p.gpus_per_server


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("local_slurm")
def test_sampler_step_runs_inside_a_real_slurm_job(tmp_path: Path) -> None:
    bin_dir = install_fake_tools(tmp_path / "bin")
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import json, time
        from pathlib import Path
        from infx.telemetry.energy import check_window, validate_power
        from infx.telemetry.nodes import NodeSampler
        out = Path({str(tmp_path / "gpu_metrics.csv")!r})
        s = NodeSampler("nvidia-smi", out, [["1"]])
        s.start(); time.sleep(0.3); start = time.time(); time.sleep(1.5); end = time.time(); s.stop()
        v = validate_power(out, check_window(start, end, end - start, 10, 100, 100), 1)
        print(json.dumps({{"valid": v.power_valid, "reasons": [str(r) for r in v.reasons],
                          "energy": v.per_gpu_energy_j, "secs": end - start}}))
    """))
    wrapper = tmp_path / "job.sh"
    wrapper.write_text(f"#!/bin/bash\nexport PATH={bin_dir}:$PATH PYTHONPATH={REPO}\nexec {sys.executable} {script}\n")
    wrapper.chmod(0o755)
    job = subprocess.run(["sbatch", "--parsable", "--wait", f"--output={tmp_path}/job.out", str(wrapper)],
                         capture_output=True, text=True, timeout=240)
    log = (tmp_path / "job.out").read_text() if (tmp_path / "job.out").exists() else ""
    assert job.returncode == 0, job.stderr + log
    res = json.loads(log.strip().splitlines()[-1])
    assert res["valid"], res
    assert list(res["energy"]) == ["n0:1"]  # node 0's GPU 1 only, sampled by the step's task on that node
    assert res["energy"]["n0:1"] == pytest.approx(110 * res["secs"], rel=1e-6)
    assert (tmp_path / "gpu_metrics.node0.csv").is_file() and (tmp_path / "gpu_metrics.node0.tail.csv").is_file()
