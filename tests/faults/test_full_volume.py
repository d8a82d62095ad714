"""A full results volume: one line naming the file being written, exit 2, nothing half-written, and the same
command resumes once space is back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infx.atomic import WriteFault, write_text
from infx.sweep.layout import RunDir
from infx.sweep.orchestrator import Orchestrator, SweepOptions
from tests.faults.conftest import fill
from tests.sweep.fakes import FakeMeasurer, FakeStarter, make_point

KEY = "tinyllama-bf16-cpu-vllm"


def _temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tmp")]


def test_a_refused_write_names_the_file_and_leaves_no_temp_file(small_volume: Path) -> None:
    filler = fill(small_volume)
    target = small_volume / "run" / "manifest.json"
    target.parent.mkdir()
    with pytest.raises(WriteFault) as info:
        write_text(target, "x" * 100_000)
    (diag,) = info.value.diagnostics
    assert str(target) in str(diag) and "No space left on device" in str(diag) and "run the same command" in str(diag)
    assert not target.exists() and _temp_files(small_volume) == []
    filler.unlink()
    write_text(target, "x" * 100_000)
    assert target.read_text() == "x" * 100_000


def test_a_read_only_volume_is_one_fault_naming_the_file(small_volume: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(small_volume)], check=True)
    with pytest.raises(WriteFault) as info:
        write_text(small_volume / "run" / "x.json", "{}")
    target = small_volume / "run" / "x.json"
    assert str(info.value) == f"{target}: error: cannot write {target}: Read-only file system"


def test_the_volume_filling_mid_sweep_stops_it_and_the_rerun_resumes(small_volume: Path) -> None:
    """The fault is the environment's: the sweep stops (the engine stopped, finished points kept) instead of
    recording every later point as failed; the same sweep again measures only what is missing."""
    points = [make_point("a", 1, c) for c in (1, 2, 4)]
    filler: list[Path] = []

    class FillsTheDisk(FakeMeasurer):
        def measure(self, point, engine, point_dir, progress=None):  # type: ignore[no-untyped-def]
            if point.conc == 2 and not filler:
                filler.append(fill(small_volume))
            return super().measure(point, engine, point_dir, progress)

    from infx.sweep.grouping import group_points

    run_dir = RunDir(small_volume / "run1")
    starter = FakeStarter()
    o = Orchestrator(run_dir, starter, FillsTheDisk(), SweepOptions(), lambda e: None)
    with pytest.raises(WriteFault) as info:
        o.run(group_points(points))
    assert str(small_volume / "run1") in str(info.value) and "No space left on device" in str(info.value)
    assert starter.engines[0].stopped
    assert run_dir.read_status("a-tp1-c1").state == "done"  # type: ignore[union-attr]
    assert run_dir.read_status("a-tp1-c4") is None  # never attempted, never recorded as failed
    assert _temp_files(small_volume) == []
    filler[0].unlink()
    again = FakeMeasurer()
    Orchestrator(run_dir, FakeStarter(), again, SweepOptions(), lambda e: None).run(group_points(points))
    assert again.measured == ["a-tp1-c2", "a-tp1-c4"]
    assert {p: run_dir.read_status(p).state for p in ("a-tp1-c1", "a-tp1-c2", "a-tp1-c4")} == {  # type: ignore[union-attr]
        "a-tp1-c1": "done", "a-tp1-c2": "done", "a-tp1-c4": "done"}


@pytest.mark.timeout(60)
def test_infx_run_on_a_full_volume_is_one_line_exit_2(small_volume: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    subprocess.run([sys.executable, "-m", "infx", "init", str(ws)], check=True, capture_output=True, env=env)
    fill(small_volume)
    r = subprocess.run([sys.executable, "-m", "infx", "-w", str(ws), "run", "--config-keys", KEY, "--results",
                        str(small_volume / "results")], capture_output=True, text=True, env=env, check=False)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "error: cannot write " + str(small_volume / "results") in lines[0], lines
    assert "No space left on device" in lines[0]
    assert _temp_files(small_volume) == []
