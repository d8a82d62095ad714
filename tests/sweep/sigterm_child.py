"""Child process for test_interrupt.py: a sweep with fake executors (no engine can run in a unit test) whose
third point blocks until the parent sends SIGTERM, then stops as the real load generator does (records
written, an incomplete result raised with ``PointInterrupted``) or, given ``returns``, as a load that
stops on its own (the incomplete result returned)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakes import FakeMeasurer, FakeStarter, make_point, make_result

from infx.records import RECORDS_FILE
from infx.sweep.execute import interrupted_exit, sigterm_as_pause
from infx.sweep.grouping import group_points
from infx.sweep.interfaces import PointInterrupted
from infx.sweep.layout import RunDir
from infx.sweep.orchestrator import Orchestrator


class Blocking(FakeMeasurer):
    def measure(self, point, engine, point_dir, progress=None):  # type: ignore[no-untyped-def]
        if point.conc == 4:
            try:
                print("BLOCKING", flush=True)
                time.sleep(60)
            except KeyboardInterrupt:
                (point_dir / RECORDS_FILE).write_bytes(b"three requests, one cancelled")
                partial = make_result(issued=3).model_copy(update={"complete": False})
                if sys.argv[2] == "returns":  # a load that stops on its own and hands back what it has
                    return partial
                raise PointInterrupted(partial) from None
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
    sigterm_as_pause()
    rd = RunDir(Path(sys.argv[1]), "r")
    pts = [make_point("a", 1, c) for c in (1, 2, 4, 8)]
    try:
        Orchestrator(rd, MarkingStarter(), Blocking()).run(group_points(pts))
    except KeyboardInterrupt:
        return interrupted_exit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
