"""Waiting on Slurm jobs: a squeue that fails (a busy slurmctld) is not 'no jobs left'. A fake squeue on
PATH plays the controller's answers (the real one is exercised by the slow Slurm tests)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from infx.sweep.slurm import poll_queue, queue_states, wait_for_jobs


def _fake_squeue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, rc: int, out: str = "", err: str = "") -> None:
    exe = tmp_path / "squeue"
    exe.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write({out!r})\nsys.stderr.write({err!r})\n"
                   f"sys.exit({rc})\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")


def test_a_failing_squeue_keeps_the_wait_going(tmp_path, monkeypatch):
    _fake_squeue(tmp_path, monkeypatch, rc=1, err="slurm_load_jobs error: Socket timed out on send/recv operation\n")
    assert poll_queue(["12"]) is None and queue_states(["12"]) == {}
    assert wait_for_jobs(["12"], timeout=0.3, poll=0.05) is False  # never 'done' on an unanswered poll


def test_forgotten_jobs_are_done_and_listed_ones_are_not(tmp_path, monkeypatch):
    _fake_squeue(tmp_path, monkeypatch, rc=1, err="slurm_load_jobs error: Invalid job id specified\n")
    assert poll_queue(["12"]) == {} and wait_for_jobs(["12"], timeout=5, poll=0.05) is True
    _fake_squeue(tmp_path, monkeypatch, rc=0, out="12_0|RUNNING\n12_[1-3]|PENDING\n")
    assert queue_states(["12"]) == {"12_0": "RUNNING", "12_[1-3]": "PENDING"}
    assert wait_for_jobs(["12"], timeout=0.3, poll=0.05) is False
