"""Child process for test_interrupt.py: a sweep with fake executors (no engine can run in a unit test)
whose third point blocks until the parent sends SIGTERM."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakes import FakeMeasurer, FakeStarter, make_point

from infx.sweep.execute import EXIT_INTERRUPTED, sigterm_as_interrupt
from infx.sweep.grouping import group_points
from infx.sweep.layout import RunDir
from infx.sweep.orchestrator import Orchestrator


class Blocking(FakeMeasurer):
    def measure(self, point, engine, point_dir, progress=None):  # type: ignore[no-untyped-def]
        if point.conc == 4:
            print("BLOCKING", flush=True)
            time.sleep(60)
        return super().measure(point, engine, point_dir, progress)


class MarkingStarter(FakeStarter):
    def start(self, group, log_path):  # type: ignore[no-untyped-def]
        eng = super().start(group, log_path)
        orig = eng.stop

        def stop() -> None:
            orig()
            (Path(sys.argv[1]) / "ENGINE_STOPPED").write_text("yes")

        eng.stop = stop  # type: ignore[method-assign]
        return eng


def main() -> int:
    sigterm_as_interrupt()
    rd = RunDir(Path(sys.argv[1]), "r")
    pts = [make_point("a", 1, c) for c in (1, 2, 4, 8)]
    try:
        Orchestrator(rd, MarkingStarter(), Blocking()).run(group_points(pts))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
