"""SIGTERM (Slurm's preemption or time limit, scancel, a stopped CI job) mid-sweep is a pause: the point in
flight is written ``interrupted`` with what it measured (kept, marked incomplete, never ingested), the engine
is stopped, finished points stay, nothing is half-written, the exit code says "preempted", and the next run
measures the interrupted point again and each other point once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from infx.preemption import EXIT_PREEMPTED
from infx.records import RECORDS_FILE
from infx.results.layout import DB_NAME
from infx.results.store.api import Store
from infx.results.store.ingest import ingest_point
from infx.sweep.grouping import group_points
from infx.sweep.layout import RunDir
from infx.sweep.manifest import new_manifest
from infx.sweep.orchestrator import Orchestrator

from .fakes import FakeMeasurer, FakeStarter, make_point

CHILD = Path(__file__).with_name("sigterm_child.py")
REPO = Path(__file__).resolve().parents[2]


def _state(rd: RunDir, pid: str) -> str | None:
    st = rd.read_status(pid)
    return st.state if st is not None else None


@pytest.mark.parametrize("stop", ["raises", "returns"])
def test_sigterm_pauses_the_point_in_flight_and_the_next_run_resumes_it(tmp_path: Path, stop: str) -> None:
    proc = subprocess.Popen([sys.executable, str(CHILD), str(tmp_path), stop], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the third point (conc 4) is now being measured
    assert line.strip() == "BLOCKING", proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=30)
    assert rc == EXIT_PREEMPTED == 75, proc.stderr.read() if proc.stderr else ""
    rd = RunDir(tmp_path, "r")
    ids = {c: f"a-tp1-c{c}" for c in (1, 2, 4, 8)}
    assert {c: _state(rd, pid) for c, pid in ids.items()} == {1: "done", 2: "done", 4: "interrupted", 8: None}
    cut = rd.read_status(ids[4])
    assert cut is not None and cut.failure_class == "preempted" and "SIGTERM" in cut.reason
    partial = rd.read_result(ids[4])  # what it measured is kept, marked incomplete
    assert partial is not None and partial.complete is False and partial.metrics.issued == 3
    assert (rd.point_dir(ids[4]) / RECORDS_FILE).read_bytes() == b"three requests, one cancelled"
    assert (tmp_path / "ENGINE_STOPPED").read_text() == "yes"
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert rd.groups()[0].state == "interrupted"

    # the store never takes the interrupted point for a measurement: it counts as pending
    rd.results.write_manifest(new_manifest("r", config_files=[], recipes=None, config_keys=["k"], images=[]))
    status = subprocess.run([sys.executable, "-m", "infx", "status", str(rd.root), "--json"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)[0]["counts"] == {"done": 2, "interrupted": 1, "pending": 1}
    with Store(tmp_path / DB_NAME) as st:
        rep = st.ingest_dir(tmp_path)
        assert (rep.ingested, rep.pending) == (2, 2), rep.problems
        assert ingest_point(tmp_path, "r", ids[4], store=st).pending == 1
        assert st.counts()["points"] == 2
    # the next run: the interrupted point and the one never started are measured, the done ones are not
    measurer = FakeMeasurer()
    summary = Orchestrator(rd, FakeStarter(), measurer).run(group_points([make_point("a", 1, c) for c in ids]))
    assert sorted(measurer.measured) == [ids[4], ids[8]] and summary.ok
    assert {c: _state(rd, pid) for c, pid in ids.items()} == dict.fromkeys(ids, "done")
    res = rd.read_result(ids[4])
    assert res is not None and res.complete
    with Store(tmp_path / DB_NAME) as st:
        assert st.ingest_dir(tmp_path).pending == 0 and st.counts()["points"] == 4
