"""The sweep's view of one run directory.

The files and their models are the results stage's (:mod:`infx.results.layout`: ``manifest.json``,
``points/<point-id>/{point.json, status.json, result.json, records.jsonl.gz, engine.log}``). The sweep adds
files only it needs, next to them in the run directory:

* ``groups/<fingerprint>.json`` (:class:`GroupRecord`): one per launch group as it ran (start-up facts,
  engine version, argv, host, Slurm job), and ``groups/<fp16>.engine.log``, the whole engine log;
* ``plan.json`` (written by ``infx run --backend slurm``, read by ``infx run-group`` on the nodes);
* ``STOP``: present once ``--fail-fast`` tripped, so no new group starts anywhere;
* ``points/<point-id>/eval-status.json`` (the evals stage's ``EvalStatus``): a graded point's eval outcome,
  written last, after ``eval.json`` (:func:`write_eval_status`, :func:`read_eval_status`).

Reads used for resuming are tolerant (a missing, partial or invalid file reads as ``None``: never trusted).
Every write is atomic.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from infx.atomic import write_json, write_text
from infx.diagnostics import InfxError
from infx.evals.protocol import EVAL_STATUS_FILE, EvalStatus
from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.results.layout import (
    STATUS_FILE,
    PointFile,
    PointStatus,
    ResultsDir,
    RunManifest,
    StartupSummary,
    read_model,
)
from infx.results.receipt import discard_receipt

__all__ = ["RunDir", "GroupRecord", "PointStatus", "StartupSummary", "RunManifest", "STATUS_FILE", "write_model",
           "read_eval_status", "write_eval_status"]


class GroupRecord(BaseModel):
    """One launch group as it ran, written by whichever process (local or a Slurm job) ran it."""

    model_config = ConfigDict(extra="forbid")

    fingerprint: str
    point_ids: list[str]
    engine: str | None = None
    image: str | None = None
    argv: list[str] = Field(default_factory=list)
    state: Literal["running", "done", "failed", "partial", "interrupted"] = "running"
    reason: str | None = None
    startup: StartupSummary | None = None
    launches: int = 1
    started_at: float | None = None
    ended_at: float | None = None
    host: str | None = None
    pid: int | None = None  # the process running the group (a dead one on this host = interrupted)
    slurm_job: str | None = None


def write_model(path: Path, obj: BaseModel) -> None:
    write_text(path, obj.model_dump_json(indent=2) + "\n")


class RunDir:
    """``RESULTS/<run-id>``: paths and tolerant readers for resuming, atomic writers."""

    def __init__(self, results: str | Path | ResultsDir, run_id: str | None = None):
        if run_id is None:  # a bare run directory (tests, `infx run-group --run-dir`)
            path = Path(results) if not isinstance(results, ResultsDir) else results.root
            self.results = ResultsDir(path.parent)
            self.run_id = path.name
        else:
            self.results = results if isinstance(results, ResultsDir) else ResultsDir(results)
            self.run_id = run_id
        self.root = self.results.run_dir(self.run_id)

    # paths ---------------------------------------------------------------------------
    def point_dir(self, point_id: str) -> Path:
        return self.results.point_dir(self.run_id, point_id)

    def group_file(self, fingerprint: str) -> Path:
        return self.root / "groups" / f"{fingerprint[:32]}.json"

    def group_log(self, fingerprint: str) -> Path:
        return self.root / "groups" / f"{fingerprint[:16]}.engine.log"

    @property
    def manifest(self) -> Path:
        return self.results.manifest_path(self.run_id)

    @property
    def plan_file(self) -> Path:
        return self.root / "plan.json"

    @property
    def stop_file(self) -> Path:
        return self.root / "STOP"

    # tolerant readers ------------------------------------------------------------------
    def read_status(self, point_id: str) -> PointStatus | None:
        try:
            return self.results.read_status(self.run_id, point_id)
        except InfxError:
            return None

    def read_result(self, point_id: str) -> BenchResult | None:
        try:
            return self.results.read_result(self.run_id, point_id)
        except InfxError:
            return None

    def read_manifest(self) -> RunManifest | None:
        try:
            return self.results.read_manifest(self.run_id)
        except InfxError:
            return None

    def read_group(self, fingerprint: str) -> GroupRecord | None:
        try:
            return read_model(self.group_file(fingerprint), GroupRecord)
        except InfxError:
            return None

    def groups(self) -> list[GroupRecord]:
        out = []
        for f in sorted((self.root / "groups").glob("*.json")):
            try:
                out.append(read_model(f, GroupRecord))
            except InfxError:
                continue
        return out

    # writers -------------------------------------------------------------------------------
    def write_point(self, point: Point, fingerprint: str | None) -> None:
        self.results.write_point(self.run_id, point, fingerprint)

    def write_status(self, point_id: str, status: PointStatus) -> None:
        self.results.write_status(self.run_id, point_id, status)

    def clear_status(self, point_id: str) -> None:
        """Remove ``status.json`` (before a point is measured again: until its new status is written the
        point reads as never measured, so a result written in between is never trusted under an old status)."""
        path = self.point_dir(point_id) / STATUS_FILE
        path.unlink(missing_ok=True)
        discard_receipt(path.parent)  # nor is an old repro receipt kept over the new files
        if path.parent.is_dir():
            fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def write_result(self, point_id: str, result: BenchResult) -> None:
        self.results.write_result(self.run_id, point_id, result)

    def write_engine_log(self, point_id: str, text: str) -> None:
        self.results.write_engine_log(self.run_id, point_id, text)

    def read_point(self, point_id: str) -> PointFile | None:
        try:
            return self.results.read_point(self.run_id, point_id)
        except InfxError:
            return None

    @contextlib.contextmanager
    def locked(self, name: str = ".lock") -> Iterator[None]:
        """An exclusive lock in the run directory (manifest updates from concurrent Slurm jobs)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / name, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def update_manifest(self, fn: Callable[[RunManifest], RunManifest]) -> RunManifest | None:
        with self.locked():
            m = self.read_manifest()
            if m is None:
                return None
            m = fn(m)
            self.results.write_manifest(m)
            return m


def read_eval_status(point_dir: Path) -> EvalStatus | None:
    """The point's ``eval-status.json``; None when it is missing or unreadable (never trusted then)."""
    f = point_dir / EVAL_STATUS_FILE
    if not f.is_file():
        return None
    try:
        return EvalStatus.model_validate_json(f.read_text(encoding="utf-8"))
    except Exception:
        return None


def write_eval_status(point_dir: Path, status: EvalStatus) -> None:
    write_json(point_dir / EVAL_STATUS_FILE, status.model_dump(mode="json"))
