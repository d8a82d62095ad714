"""The jobs the orchestrator hands out, as small interfaces.

* :class:`EngineStarter` starts one engine for a launch group and returns a :class:`RunningEngine`.
* :class:`PointMeasurer` runs one point's load (warmup, then measurement) against a running engine.
* :class:`PointEvaluator` grades a point's accuracy on the running engine.

A launch that fails raises :class:`LaunchFailed`; a measurer stopped mid-point raises :class:`PointInterrupted`
with what it measured; a measurer reports :class:`LiveStats` while it runs.
The real implementations (:mod:`infx.sweep.local`) wrap the engines, load-generator and evals stages;
the unit tests plug in fakes, so grouping, resume and isolation are tested without a server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from infx.engines.servable import Servable
from infx.failures import Failure
from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.results.layout import StartupSummary
from infx.sweep.grouping import LaunchGroup
from infx.sweep.profile import LoadProfile

if TYPE_CHECKING:
    from infx.engines.ports import PortRetry
    from infx.evals.protocol import EvalStatus
    from infx.loadgen.search import SearchResult
    from infx.telemetry.session import TelemetryOptions


class LaunchFailed(Failure):
    """The group's engine did not come up, or died. ``kind`` is a classified failure name
    (``exited-at-start``, ``startup-timeout``, ``bad-argument``, ``oom-loading``, ``engine-died``...)."""

    def __init__(self, kind: str, message: str = "", log_tail: str = "",
                 port_retries: list[PortRetry] | None = None):
        self.port_retries = list(port_retries or [])  # launches that lost their port before this failure
        super().__init__(kind, message, log_tail)


class PointInterrupted(KeyboardInterrupt):
    """The load stopped early because the sweep was interrupted (Ctrl-C, or SIGTERM: :mod:`infx.preemption`):
    ``result`` is what was measured until then (``complete: false``); its records are already written."""

    def __init__(self, result: BenchResult):
        super().__init__("interrupted mid-point")
        self.result = result


@dataclass
class LiveStats:
    """What a measurer reports while a point runs (for the progress display)."""

    done: int = 0
    total: int = 0
    req_per_s: float = 0.0
    tok_per_s: float = 0.0
    errors: int = 0


ProgressFn = Callable[[LiveStats], None]


class RunningEngine(Protocol):
    @property
    def launch(self) -> Servable:
        """What is running: the launch or deployment as last rendered (ports change when one is lost)."""
        ...

    @property
    def base_url(self) -> str: ...

    @property
    def served_model_name(self) -> str: ...

    def wait_ready(self, timeout: float) -> StartupSummary:
        """Block until ready; raise :class:`LaunchFailed` (classified) on exit or time-out."""
        ...

    def failure(self) -> LaunchFailed | None:
        """``None`` while the engine is alive; the classified failure once it has died."""
        ...

    def log_size(self) -> int:
        """Bytes written to the engine log so far (to cut per-point excerpts)."""
        ...

    def log_excerpt(self, start: int, end: int | None = None) -> str: ...

    def log_tail(self, lines: int = 40) -> str: ...

    def stop(self) -> None: ...


class EngineStarter(Protocol):
    def start(self, group: LaunchGroup, log_path: Path) -> RunningEngine:
        """Start the group's engine (may raise :class:`LaunchFailed` at once)."""
        ...


class PointMeasurer(Protocol):
    @property
    def load(self) -> LoadProfile | None:
        """The load profile (recorded in each point's repro bundle)."""
        ...

    @property
    def telemetry(self) -> TelemetryOptions | None: ...

    def measure(
        self, point: Point, engine: RunningEngine, point_dir: Path, progress: ProgressFn | None = None
    ) -> BenchResult:
        """Warmup then measurement. Writes the raw records under ``point_dir``; returns the result."""
        ...


@runtime_checkable
class SearchingMeasurer(Protocol):
    """A measurer that can also run the capacity search (``--search max-concurrency``) on a launch."""

    def search(self, point: Point, engine: RunningEngine) -> SearchResult | None: ...


class PointEvaluator(Protocol):
    limit: int | None

    def evaluate(self, point: Point, engine: RunningEngine, point_dir: Path,
                 fingerprint: str | None = None) -> EvalStatus:
        """Grade the point on the running engine; returns an ``EvalStatus`` (never raises for a failed eval)."""
        ...
