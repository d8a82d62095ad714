"""What do repro bundles cost? Bundle write time per point, and `infx verify` of the demo results.

Takes the demo's results (``infx demo`` writes ``RESULTS/demo``), copies each measured point directory to a
scratch directory and times :func:`infx.repro.writer.write_bundle` on it the way the sweep calls it: the
first point pays for the once-per-process facts (hardware inventory through its tools, the installed package
set), the others reuse them. Then times ``infx verify RESULTS/demo`` as a user runs it (a fresh interpreter,
every digest recomputed).

    .venv/bin/python benchmarks/repro_speed.py [--results results]   # after `infx demo`

Targets (issue 22): writing a bundle adds under 1 s per point; `infx verify` of the demo results under 2 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=None, help="results root holding demo/ (default: the "
                    "workspace's results/)")
    ap.add_argument("--run-id", default="demo")
    args = ap.parse_args()

    from infx.repro.payload import BundlePayload
    from infx.repro.writer import BundleContext, write_bundle
    from infx.results.layout import ResultsDir
    from infx.results.receipt import read_receipt
    from infx.sweep.profile import LoadProfile
    from infx.workspace import current

    root = args.results or current().results_dir
    rd = ResultsDir(root)
    pids = rd.points(args.run_id)
    if not pids:
        sys.exit(f"no points under {rd.run_dir(args.run_id)}: run `infx demo` first (or pass --results)")
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for pid in pids:
            src = rd.point_dir(args.run_id, pid)
            dest = Path(tmp) / pid
            shutil.copytree(src, dest)
            try:  # the recorded context (launch, load) when the point has a bundle, else the point alone
                p = BundlePayload.model_validate(read_receipt(src).payload)
                launch, load = p.launch, LoadProfile.model_validate(p.load.profile) if p.load else LoadProfile()
            except Exception:
                launch, load = None, LoadProfile()
            ctx = BundleContext(run_id=args.run_id, point=rd.read_point(args.run_id, pid).typed(), launch=launch,
                                load=load, workspace_root=str(ROOT))
            t0 = time.perf_counter()
            write_bundle(dest, ctx)
            times.append(time.perf_counter() - t0)
            size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
            print(f"bundle write {pid}: {times[-1] * 1000:.1f} ms ({size / 1024:.0f} KiB in the point)")
    print(f"bundle write per point: first {times[0] * 1000:.1f} ms (inventory + package set), max "
          f"{max(times) * 1000:.1f} ms, mean of the rest {sum(times[1:]) / max(1, len(times) - 1) * 1000:.1f} ms "
          f"(target < 1000 ms)")

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "infx", "verify", str(rd.run_dir(args.run_id))], capture_output=True,
                       text=True, env=env)
    wall = time.perf_counter() - t0
    print(f"infx verify {rd.run_dir(args.run_id)}: {wall:.2f} s wall, exit {r.returncode}: "
          f"{r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''} (target < 2 s)")


if __name__ == "__main__":
    main()
