"""GPU power samplers: the vendor tools' own CSV loops, run as subprocesses next to the measurement (as
InferenceX's ``start_gpu_monitor``/``stop_gpu_monitor`` do), writing ``gpu_metrics.csv``.

* NVIDIA: ``nvidia-smi --format=csv -l 1 --query-gpu=timestamp,index,power.draw,...`` straight into the file.
  On stop the loop writes one more sample (up to interval + 1 s), is killed, a truncated last line (no
  trailing newline) is dropped and one more one-shot sample (``--format=csv,noheader``) is appended, so the
  window's end is bracketed.
* AMD: ``amd-smi metric -p -c -t -u -w 1 --csv`` (``PYTHONUNBUFFERED=1``) through a filter that keeps the
  first header (the line starting ``timestamp,``), drops the preamble and repeated headers and flushes each
  row. On stop it waits interval + 2 s before killing: amd-smi stamps whole seconds.

Only the point's devices are sampled when they are known (``-i`` / ``-g``). A missing tool is a warning:
no file is written, and the validation says ``telemetry_file_missing``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Literal, TextIO

NVIDIA_FIELDS = ("timestamp,index,power.draw,temperature.gpu,clocks.current.sm,clocks.current.memory,"
                 "utilization.gpu,utilization.memory")
GpuTool = Literal["nvidia-smi", "amd-smi", "none"]
Proc = subprocess.Popen[bytes] | subprocess.Popen[str]  # a sampler loop: CSV to a file, or piped text


def detect_tool(choice: str) -> tuple[GpuTool, str | None]:
    """(tool, warning): ``auto`` takes nvidia-smi, then amd-smi, from PATH."""
    choices: dict[str, tuple[GpuTool, ...]] = {"auto": ("nvidia-smi", "amd-smi"), "nvidia": ("nvidia-smi",),
                                                "amd": ("amd-smi",)}
    wanted = choices.get(choice, ())
    for tool in wanted:
        if shutil.which(tool):
            return tool, None
    if not wanted:
        return "none", None
    return "none", f"{' / '.join(wanted)} not found on PATH: no GPU power for this point"


def drop_truncated_tail(path: Path) -> None:
    """Remove a last line that has no trailing newline (the loop was killed mid-write)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n")
        with path.open("r+b") as fh:
            fh.truncate(cut + 1 if cut >= 0 else 0)


def _poll_until(done: Callable[[], bool], timeout_s: float, proc: Proc | None = None) -> bool:
    """Poll ``done`` every 20 ms until it holds (True), ``proc`` exited or ``timeout_s`` passed (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and (proc is None or proc.poll() is None):
        if done():
            return True
        time.sleep(0.02)
    return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return -1


def wait_first_row(path: Path, proc: Proc, timeout_s: float = 10.0) -> None:
    """Return once the CSV holds a header and one sample (so the window's start is bracketed), the tool
    exited, or the timeout passed."""
    def rows() -> bool:
        try:
            return path.read_bytes().count(b"\n") >= 2
        except FileNotFoundError:
            return False

    _poll_until(rows, timeout_s, proc)


def wait_next_rows(paths: list[Path], timeout_s: float) -> None:
    """Before the loop is killed: let it write one more sample after the window's end into every file (each
    grows past its size now), or give up after ``timeout_s``. The closing one-shot then only adds a sample,
    so a slow one-shot (nvidia-smi without persistence mode, an ``srun`` step) cannot open a gap at the end."""
    before = [_size(p) for p in paths]
    if _poll_until(lambda: all(_size(p) > b for p, b in zip(paths, before, strict=True)), timeout_s):
        time.sleep(0.1)  # the rest of that sample's rows (one per device)


def _stop(proc: Proc, timeout: float = 5.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def nvidia_argv(fmt: str, devices: list[str] | None = None, loop_s: float | None = None) -> list[str]:
    """nvidia-smi's CSV query: ``fmt`` ``csv`` (with header) or ``csv,noheader``; ``loop_s``: repeat every
    that many whole seconds."""
    argv = ["nvidia-smi", f"--query-gpu={NVIDIA_FIELDS}", f"--format={fmt}"]
    if devices:
        argv.append("--id=" + ",".join(devices))
    if loop_s is not None:
        argv += ["-l", str(max(1, round(loop_s)))]
    return argv


def amd_argv(interval_s: float, devices: list[str] | None = None) -> list[str]:
    """amd-smi's CSV metric loop (power, clocks, temperature, usage) every ``interval_s`` whole seconds."""
    argv = ["amd-smi", "metric", "-p", "-c", "-t", "-u", "-w", str(max(1, round(interval_s))), "--csv"]
    if devices:
        argv += ["-g", *devices]
    return argv


class NvidiaSmiSampler:
    def __init__(self, out: Path, devices: list[str] | None = None, interval_s: float = 1.0):
        self.out, self.devices, self.interval_s = out, devices, interval_s
        self.proc: subprocess.Popen[bytes] | None = None
        self._fh: IO[bytes] | None = None

    def _argv(self, fmt: str) -> list[str]:
        return nvidia_argv(fmt, self.devices)

    def start(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.out.open("wb")
        self.proc = subprocess.Popen(nvidia_argv("csv", self.devices, self.interval_s), stdout=self._fh,
                                     stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        wait_first_row(self.out, self.proc)

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                wait_next_rows([self.out], self.interval_s + 1.0)
            _stop(self.proc)
        if self._fh is not None:
            self._fh.close()
        drop_truncated_tail(self.out)
        try:  # one more sample after the window's end
            done = subprocess.run(self._argv("csv,noheader"), capture_output=True, timeout=15, check=False)
            if done.returncode == 0 and done.stdout:
                with self.out.open("ab") as fh:
                    fh.write(done.stdout if done.stdout.endswith(b"\n") else done.stdout + b"\n")
        except (OSError, subprocess.TimeoutExpired):
            pass


class AmdSmiFilter:
    """InferenceX's awk filter: the first ``timestamp,`` line is the header; preamble and repeated headers
    are dropped; every kept row is flushed at once."""

    def __init__(self, sink: IO[str]):
        self.sink = sink
        self.header: str | None = None

    def feed(self, line: str) -> None:
        if not line.endswith("\n"):
            return  # a truncated last line (the tool was killed mid-write)
        if line.startswith("timestamp,"):
            if self.header is None:
                self.header = line
                self.sink.write(line)
                self.sink.flush()
            return
        if self.header is None or not line.strip():
            return
        self.sink.write(line)
        self.sink.flush()


class AmdSmiSampler:
    def __init__(self, out: Path, devices: list[str] | None = None, interval_s: float = 1.0,
                 settle_s: float | None = None):
        self.out, self.devices, self.interval_s = out, devices, interval_s
        self.settle_s = interval_s + 2.0 if settle_s is None else settle_s
        self.proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        fh = self.out.open("w", encoding="utf-8")  # truncated here: an older file never passes for a first row
        try:
            self.proc = subprocess.Popen(amd_argv(self.interval_s, self.devices), stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        except BaseException:
            fh.close()
            raise
        self._thread = threading.Thread(target=self._pump, args=(fh,), name="infx-amd-smi", daemon=True)
        self._thread.start()
        wait_first_row(self.out, self.proc)

    def _pump(self, fh: TextIO) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        with fh:
            filt = AmdSmiFilter(fh)
            for line in self.proc.stdout:
                filt.feed(line)

    def stop(self) -> None:
        if self.proc is None:
            return
        time.sleep(self.settle_s)
        _stop(self.proc)
        if self._thread is not None:
            self._thread.join(timeout=5)
