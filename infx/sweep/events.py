"""Events the orchestrator emits while a sweep runs (consumed by the progress display and logs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infx.sweep.interfaces import LiveStats
    from infx.sweep.summary import SweepSummary


@dataclass
class RunStarted:
    groups: int  # groups with work to do
    points: int  # points selected
    to_run: int
    reused: int
    previously_failed: int
    skipped: int = 0  # rejected by the gate (never launched)


@dataclass
class GroupStarted:
    fingerprint: str
    point_ids: list[str]
    engine: str | None


@dataclass
class GroupReady:
    fingerprint: str
    startup_seconds: float | None
    engine_version: str | None


@dataclass
class GroupFailed:
    fingerprint: str
    reason: str
    detail: str


@dataclass
class GroupFinished:
    fingerprint: str
    state: str
    reason: str | None


@dataclass
class PointStarted:
    point_id: str
    conc: int


@dataclass
class PointProgress:
    point_id: str
    stats: LiveStats


@dataclass
class PointFinished:
    point_id: str
    state: str
    reason: str | None
    req_per_s: float | None = None
    tok_per_s: float | None = None


@dataclass
class EvalFinished:
    """A point's accuracy eval ended: ``state`` pass / accuracy-fail / failed."""

    point_id: str
    state: str
    reason: str | None


@dataclass
class Note:
    message: str


@dataclass
class RunFinished:
    summary: SweepSummary


Event = (RunStarted | GroupStarted | GroupReady | GroupFailed | GroupFinished | PointStarted | PointProgress
         | PointFinished | EvalFinished | Note | RunFinished)
