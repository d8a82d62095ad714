"""GPU power on every node of a multi-node deployment: inside its Slurm job, the vendor tool's CSV loop runs
as one ``srun`` step with one task per node (``--output=...node%n.csv``: one file per node), and the files
are merged into the point's one ``gpu_metrics.csv`` with node-qualified device ids (``n1:3``: GPU 3 of the
job's second node), so energy is integrated per device over all the deployment's GPUs and the device
count is checked against every role's GPUs.

A step without a GPU request sees the GPUs the job holds on its node (Slurm gives a step all of the job's
generic resources by default); of those, node ``i`` keeps the first ``devices[i]`` ids, the GPUs the
deployment's roles were placed on there. AMD rows go through the same header filter as the local loop.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import time
from pathlib import Path

from infx.telemetry.gpu import AmdSmiFilter, GpuTool, _stop, amd_argv, drop_truncated_tail, nvidia_argv, wait_next_rows
from infx.telemetry.powercsv import detect_columns


class NodeSampler:
    """``node_devices[i]``: the device ids to keep on node ``i`` of the job (``srun --relative`` order);
    None keeps every device the node's tool reports."""

    def __init__(self, tool: GpuTool, out: Path, node_devices: list[list[str] | None], interval_s: float = 1.0,
                 settle_s: float | None = None, start_timeout_s: float = 30.0):
        self.tool, self.out, self.node_devices = tool, out, node_devices
        self.interval = max(1, round(interval_s))
        self.settle_s = self.interval + 2.0 if settle_s is None else settle_s
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def nodes(self) -> int:
        return len(self.node_devices)

    def node_file(self, i: int, tail: bool = False) -> Path:
        return self.out.with_name(f"{self.out.stem}.node{i}{'.tail' if tail else ''}{self.out.suffix}")

    def _tool_argv(self, one_shot: bool = False) -> list[str]:
        if self.tool == "nvidia-smi":
            return nvidia_argv("csv,noheader") if one_shot else nvidia_argv("csv", loop_s=self.interval)
        return amd_argv(self.interval)

    def step_argv(self, one_shot: bool = False) -> list[str]:
        """One task per node, each writing its own file (``%n``: the node's index in the step)."""
        pattern = self.out.with_name(f"{self.out.stem}.node%n{'.tail' if one_shot else ''}{self.out.suffix}")
        return [shutil.which("srun") or "srun", "--overlap", f"--nodes={self.nodes}", f"--ntasks={self.nodes}",
                "--ntasks-per-node=1", "--relative=0", f"--output={pattern}", "--quiet",
                "--job-name=infx-gpu-power", *self._tool_argv(one_shot)]

    def start(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        for i in range(self.nodes):
            self.node_file(i).unlink(missing_ok=True)
            self.node_file(i, tail=True).unlink(missing_ok=True)
        self.proc = subprocess.Popen(self.step_argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + self.start_timeout_s  # every node's first sample brackets the start
        while time.monotonic() < deadline and self.proc.poll() is None:
            if all(self._rows(i) >= 1 for i in range(self.nodes)):
                return
            time.sleep(0.05)

    def _rows(self, i: int) -> int:
        try:
            text = self.node_file(i).read_text(errors="replace")
        except FileNotFoundError:
            return 0
        return sum(1 for ln in text.splitlines() if ln and ln[0].isdigit())

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.tool == "amd-smi":
            time.sleep(self.settle_s)  # amd-smi stamps whole seconds
        elif self.proc.poll() is None:
            wait_next_rows([self.node_file(i) for i in range(len(self.node_devices))], self.interval + 1.0)
        _stop(self.proc, timeout=10)
        if self.tool == "nvidia-smi":  # one more sample on every node after the window's end
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(self.step_argv(one_shot=True), stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=30, check=False)
        self.merge()

    def merge(self) -> None:
        """The node files as one CSV: one header, device ids ``n<i>:<id>``, only the placed devices."""
        header: str | None = None
        rows: list[str] = []
        for i, keep in enumerate(self.node_devices):
            path = self.node_file(i)
            drop_truncated_tail(path)
            try:
                lines = path.read_text(errors="replace").splitlines(True)
            except FileNotFoundError:
                continue
            tail = self.node_file(i, tail=True)
            if tail.is_file():
                drop_truncated_tail(tail)
                lines += tail.read_text(errors="replace").splitlines(True)
            if self.tool == "amd-smi":
                sink = io.StringIO()
                filt = AmdSmiFilter(sink)
                for ln in lines:
                    filt.feed(ln)
                lines = sink.getvalue().splitlines(True)
            if not lines:
                continue
            head, body = lines[0], lines[1:]
            cells = [c.strip() for c in head.rstrip("\n").split(",")]
            gid = detect_columns(cells).gpu
            if gid is None:
                continue
            col = cells.index(gid)
            header = header or head
            for ln in body:
                parts = ln.rstrip("\n").split(",")
                if len(parts) <= col or not parts[col].strip():
                    continue
                dev = parts[col].strip()
                if keep is not None and dev not in keep:
                    continue
                lead = parts[col][: len(parts[col]) - len(parts[col].lstrip())]
                parts[col] = f"{lead}n{i}:{dev}"
                rows.append(",".join(parts) + "\n")
        if header is None:
            return  # nothing sampled: validation reports the missing file
        from infx.atomic import write_text

        write_text(self.out, header + "".join(rows))


def node_devices(gpus_on_nodes: list[int]) -> list[list[str]]:
    """Node ``i`` keeps ids ``0 .. gpus_on_nodes[i]-1`` (Slurm hands a job's GPUs out from the lowest id)."""
    return [[str(d) for d in range(k)] for k in gpus_on_nodes]
