"""No engine outlives the infx process that started it: the kernel's parent-death signal, and the record the
next launch (or ``infx engine down``) reaps from. Real processes killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infx.engines import reaper
from infx.engines.procgroup import group_alive

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _wait(cond, timeout: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def _alive(pid: int) -> bool:
    return reaper.start_ticks(pid) is not None


def _worker_pid(log: Path) -> int:
    assert _wait(lambda: "worker" in log.read_text() if log.exists() else False)
    return int(log.read_text().split("worker", 1)[1].split()[0])


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "infx.toml").write_text("")
    monkeypatch.setenv("INFX_WORKSPACE", str(ws))
    return ws


def _orphan(behaviour: str, ws: Path) -> tuple[int, int, int]:
    """An infx process with one engine, killed with SIGKILL: (its pid, the engine's pid, the worker's pid)."""
    log = ws / "engine.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), "INFX_WORKSPACE": str(ws)}
    parent = subprocess.Popen([sys.executable, str(HERE / "orphan_parent.py"), behaviour, str(log)],
                              stdout=subprocess.PIPE, text=True, env=env)
    assert parent.stdout is not None
    engine = int(parent.stdout.readline())
    worker = _worker_pid(log)
    assert len(list((ws / ".infx" / "engines").glob("*.json"))) == 1  # recorded while it runs
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    return parent.pid, engine, worker


@pytest.mark.timeout(60)
def test_a_killed_parent_takes_its_engine_down_with_it(workspace: Path) -> None:
    _, engine, _ = _orphan("polite", workspace)
    assert _wait(lambda: not _alive(engine)), "the parent-death signal did not stop the engine"


@pytest.mark.timeout(60)
def test_an_engine_that_ignores_the_signal_is_reaped_before_the_next_launch(workspace: Path) -> None:
    owner, engine, worker = _orphan("stubborn", workspace)
    time.sleep(0.5)
    assert _alive(engine) and _alive(worker)  # SIGTERM ignored: the kernel's layer alone is not enough
    said = reaper.reap_orphans(grace=2.0)
    assert len(said) == 1 and f"pid {engine}" in said[0] and f"killed infx process (pid {owner})" in said[0]
    assert _wait(lambda: not _alive(engine) and not _alive(worker)) and not group_alive(engine)
    assert list((workspace / ".infx" / "engines").glob("*.json")) == []
    assert reaper.reap_orphans() == []  # nothing left to say


@pytest.mark.timeout(60)
def test_infx_engine_down_reaps_orphans_in_one_line(workspace: Path) -> None:
    _, engine, _ = _orphan("stubborn", workspace)
    env = {**os.environ, "PYTHONPATH": str(REPO), "INFX_WORKSPACE": str(workspace)}
    r = subprocess.run([sys.executable, "-m", "infx", "engine", "down", "--grace", "2"], capture_output=True,
                       text=True, env=env, check=False)
    assert r.returncode == 0, r.stderr
    assert f"stopped vllm engine pid {engine}" in r.stderr and r.stderr.count(f"pid {engine}") == 1
    assert _wait(lambda: not _alive(engine))


def test_a_process_that_is_not_the_recorded_one_is_never_touched(workspace: Path) -> None:
    """A recycled pid (another program, started at another time) and a record whose owner still runs."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], process_group=0)
    try:
        ticks = reaper.start_ticks(bystander.pid)
        assert ticks is not None
        d = workspace / ".infx" / "engines"
        d.mkdir(parents=True)
        dead_owner = dict(owner_pid=2**22 + 1, owner_start_ticks=1, port=None, what="x engine")
        recycled = reaper.EngineRecord(pid=bystander.pid, start_ticks=ticks - 1, pgid=bystander.pid, **dead_owner)
        (d / "recycled.json").write_text(recycled.model_dump_json())
        live_owner = reaper.EngineRecord(pid=bystander.pid, start_ticks=ticks, pgid=bystander.pid, port=None,
                                         owner_pid=os.getpid(), owner_start_ticks=reaper.start_ticks(os.getpid()) or 0,
                                         what="x engine")
        (d / "owned.json").write_text(live_owner.model_dump_json())
        not_a_group = reaper.EngineRecord(pid=bystander.pid, start_ticks=ticks, pgid=1, **dead_owner)
        (d / "not-a-group.json").write_text(not_a_group.model_dump_json())
        (d / "garbage.json").write_text("{")
        assert reaper.reap_orphans(grace=1.0) == []
        assert bystander.poll() is None
        assert sorted(p.name for p in d.iterdir()) == ["owned.json"]  # its owner runs: kept
    finally:
        bystander.kill()
        bystander.wait()


def test_an_orphans_scratch_directory_goes_with_it_and_only_an_infx_one(workspace: Path, tmp_path: Path) -> None:
    """A deployment's KV directory is named in its roles' records: reaped with them once their owner is gone
    (a kill -9 of infx runs no clean-up); a directory infx did not name ``infx-*`` is never removed."""
    d = workspace / ".infx" / "engines"
    d.mkdir(parents=True)
    kv, other = tmp_path / "infx-kv-abc", tmp_path / "users-data"
    for p in (kv, other):
        p.mkdir()
        (p / "f").write_text("x")
    ended = subprocess.Popen([sys.executable, "-c", "pass"], process_group=0)
    ticks = reaper.start_ticks(ended.pid)
    ended.wait()
    assert ticks is not None
    rec = reaper.EngineRecord(pid=ended.pid, start_ticks=ticks, pgid=ended.pid, port=None, owner_pid=2**22 + 1,
                              owner_start_ticks=1, what="prefill role", scratch=[str(kv), str(other)])
    (d / "r.json").write_text(rec.model_dump_json())
    assert reaper.reap_orphans(grace=1.0) == []  # nothing was running any more: nothing to say
    assert not kv.exists() and (other / "f").is_file()
    assert list(d.iterdir()) == []
