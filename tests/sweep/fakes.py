"""Fakes for the sweep's executors. A GPU engine cannot exist here, so unit tests of grouping, resume and
isolation use these stand-ins; the real engine is exercised by the slow end-to-end tests."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from infx.matrix.point import Point
from infx.metrics.result import BenchResult, Metrics, Stat, Throughput
from infx.results.layout import StartupSummary
from infx.sweep.grouping import LaunchGroup
from infx.sweep.interfaces import LaunchFailed


def make_point(prefix: str = "tiny", tp: int = 1, conc: int = 1, **extra) -> Point:
    row = {
        "image": "infx/embedded:vllm-cpu", "model": "tiny", "model-prefix": prefix, "precision": "bf16",
        "framework": "vllm", "runner": "cpu", "isl": 64, "osl": 16, "tp": tp, "conc": conc,
        "max-model-len": 256, "exp-name": f"{prefix}_tp{tp}", "point-id": f"{prefix}-tp{tp}-c{conc}",
    }
    row.update(extra)
    return Point.from_row(row)


def make_result(issued: int = 8, failed: int = 0, out_tok_s: float = 100.0) -> BenchResult:
    st = Stat(mean=1.0, median=1.0, std=0.0, p90=1.0, p99=1.0, p999=1.0, count=issued - failed)
    return BenchResult(
        started_at=time.time(), ended_at=time.time(), config={},
        metrics=Metrics(
            issued=issued, completed=issued - failed, failed=failed,
            success_rate=(issued - failed) / issued if issued else 0.0,
            total_input_tokens=64 * issued, total_output_tokens=16 * issued,
            ttft_ms=st, tpot_ms=st, itl_ms=st, e2el_ms=st, queue_delay_ms=st,
            throughput=Throughput(duration_s=1.0, request_per_s=float(issued), output_tok_per_s=out_tok_s,
                                  input_tok_per_s=1.0, total_tok_per_s=out_tok_s + 1.0),
            error_classes={"http-500": failed} if failed else {},
        ),
    )


class FakeEngine:
    def __init__(self, behaviour: str, log_path: Path, die_after: int | None = None, launch: object = None):
        # the group's rendered launch (a test's stand-in), else a bare one: no flags, no metrics page
        self.launch = launch if launch is not None else SimpleNamespace(argv=[], env={}, files={}, engine="vllm",
                                                                        model_path="tiny", metrics_url="",
                                                                        fingerprint="fake")
        self.behaviour = behaviour
        self.base_url = "http://127.0.0.1:1"
        self.served_model_name = "tiny"
        self.log_path = log_path
        self.die_after = die_after
        self.points_served = 0
        self.stopped = False
        self._log("engine starting\n")

    def _log(self, text: str) -> None:
        with open(self.log_path, "a") as fh:
            fh.write(text)

    def wait_ready(self, timeout: float) -> StartupSummary:
        if self.behaviour == "timeout":
            raise LaunchFailed("startup-timeout", f"not ready after {timeout}s", "still loading...\n")
        self._log("engine ready\n")
        return StartupSummary(startup_s=0.01, engine_version="fake-1.0", kv_cache_tokens=1000)

    def failure(self) -> LaunchFailed | None:
        if self.die_after is not None and self.points_served > self.die_after:
            return LaunchFailed("killed", "engine exited with signal 9", "Killed\n")
        return None

    def log_size(self) -> int:
        return self.log_path.stat().st_size

    def log_excerpt(self, start: int, end: int | None = None) -> str:
        return self.log_path.read_text()[start:end]

    def log_tail(self, lines: int = 40) -> str:
        return "".join(self.log_path.read_text().splitlines(True)[-lines:])

    def stop(self) -> None:
        self.stopped = True


@dataclass
class FakeStarter:
    """``behaviour[fingerprint_prefix]``: ok | exit | timeout | die:N (dies while serving point N+1)."""

    behaviour: dict[str, str] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    engines: list[FakeEngine] = field(default_factory=list)

    def start(self, group: LaunchGroup, log_path: Path) -> FakeEngine:
        self.started.append(group.fingerprint)
        b = "ok"
        for key, val in self.behaviour.items():
            if group.fingerprint.startswith(key) or any(p.model_prefix == key for p in group.points):
                b = val
        if b == "raise":
            raise OSError("no such file: engine binary")
        if b == "exit":
            log_path.write_text("error: unrecognized arguments: --bogus\n")
            raise LaunchFailed("bad-argument", "engine exited with code 2", "error: unrecognized arguments: --bogus\n")
        die_after = int(b.split(":")[1]) if b.startswith("die:") else None
        eng = FakeEngine(b, log_path, die_after, group.launch)
        self.engines.append(eng)
        return eng


@dataclass
class FakeMeasurer:
    """``failed[point_id]`` requests fail; ``raises`` point ids raise."""

    failed: dict[str, int] = field(default_factory=dict)
    raises: set[str] = field(default_factory=set)
    measured: list[str] = field(default_factory=list)
    load: None = None  # no load profile or telemetry to record in the bundles
    telemetry: None = None

    def measure(self, point: Point, engine: FakeEngine, point_dir: Path, progress=None) -> BenchResult:
        self.measured.append(point.point_id)
        engine.points_served += 1
        engine._log(f"serving {point.point_id}\n")
        if point.point_id in self.raises:
            raise RuntimeError("loadgen bug")
        if engine.failure() is not None:
            return make_result(issued=8, failed=8)
        return make_result(issued=8, failed=self.failed.get(point.point_id, 0))
