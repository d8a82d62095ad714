"""SIGTERM (scancel, a killed CI job) mid-sweep: finished points stay, the engine is stopped, nothing is
half-written, and the next run measures only what is missing."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from infx.sweep.layout import RunDir

CHILD = Path(__file__).with_name("sigterm_child.py")
REPO = Path(__file__).resolve().parents[2]


def test_sigterm_keeps_finished_points_and_stops_the_engine(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, str(CHILD), str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the third point (conc 4) is now being measured
    assert line.strip() == "BLOCKING", proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=30)
    assert rc == 130
    rd = RunDir(tmp_path, "r")
    states = {c: (rd.read_status(f"a-tp1-c{c}").state if rd.read_status(f"a-tp1-c{c}") else None)
              for c in (1, 2, 4, 8)}
    assert states == {1: "done", 2: "done", 4: None, 8: None}
    assert (tmp_path / "ENGINE_STOPPED").read_text() == "yes"
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    rec = rd.groups()[0]
    assert rec.state == "interrupted"
