"""What a Slurm job of test_preempt_slurm.py runs instead of ``python -m infx run-group``: the real
``run-group`` body (:func:`infx.sweep.execute.run_groups`: the orchestrator, SIGTERM as a pause, the job-log
lines) with fake executors, since no engine fits the test's time. The measurer blocks on the point named in
the ``HOLD`` file next to the results directory until the file names another point (or is gone), and stops as
the real load generator does on SIGTERM: its records written, an incomplete result handed back. Each start
and each complete measurement is appended to ``ledger.txt``.

argv (as ``slurm.sbatch_argv`` builds it, after the interpreter): ``-m infx run-group --run-dir D --group G``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from infx.records import RECORDS_FILE
from infx.sweep.execute import Wiring, run_groups
from infx.sweep.interfaces import PointInterrupted
from infx.sweep.layout import RunDir
from infx.sweep.prepare import load_plan
from infx.sweep.profile import LoadProfile
from infx.sweep.slurm import pick_groups
from infx.telemetry.session import TelemetryOptions
from tests.sweep.fakes import FakeMeasurer, FakeStarter, make_result


class Holding(FakeMeasurer):
    def __init__(self, base: Path) -> None:
        super().__init__()
        self.hold, self.ledger = base / "HOLD", base / "ledger.txt"
        self.load = LoadProfile()  # type: ignore[assignment]  # recorded in each point's receipt, as a sweep's
        self.telemetry = TelemetryOptions()  # type: ignore[assignment]

    def _log(self, text: str) -> None:
        with self.ledger.open("a") as fh:
            fh.write(text + "\n")

    def measure(self, point, engine, point_dir, progress=None):  # type: ignore[no-untyped-def]
        pid = point.point_id
        self._log(f"start {pid}")
        try:
            if self.hold.is_file() and self.hold.read_text().strip() == pid:
                print(f"HOLDING {pid}", file=sys.stderr, flush=True)
                while self.hold.is_file() and self.hold.read_text().strip() == pid:
                    time.sleep(0.1)
        except KeyboardInterrupt:
            (point_dir / RECORDS_FILE).write_bytes(b"two requests sent, both cancelled")
            raise PointInterrupted(make_result(issued=2).model_copy(update={"complete": False})) from None
        result = super().measure(point, engine, point_dir, progress)
        self._log(f"measured {pid}")
        return result


def main(argv: list[str]) -> int:
    rd = RunDir(Path(argv[argv.index("--run-dir") + 1]))
    groups = [argv[i + 1] for i, a in enumerate(argv) if a == "--group"]
    plan = load_plan(rd)
    chosen = pick_groups(plan, groups, "--array-task" in argv)
    return run_groups(rd, plan, [g.fingerprint for g in chosen],
                      wiring=Wiring(FakeStarter(), Holding(rd.results.root.parent)))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
