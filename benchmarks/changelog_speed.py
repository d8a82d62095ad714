"""Speed of the perf-changelog gate on the real 395 KB changelog plus one appended entry.

Target: validating it takes under 0.5 s. Builds a throwaway git repository (base: the real
772-entry changelog + the seed catalog; head: the seed entry appended) and prints, best of N:
  * history gate only (git show x2, parse, append-only rules),
  * the full gate in-process (+ key resolution, catalog at head, matrix generation),
  * the CI command wall time (`python -m infx.workflows.validate_perf_changelog`, interpreter start included).

Run: .venv/bin/python benchmarks/changelog_speed.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infx.changelog.gate import GateOptions, check_change, run_gate
from tests.changelog.helpers import GitRepo, real_changelog, seed_catalog, seed_entry

ROOT = Path(__file__).resolve().parents[1]

TARGET_S = 0.5


def best(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """Best wall time and best CPU time (this process + children) over ``n`` runs. CPU time is
    the robust figure on a shared machine: wall time includes waiting for a busy CPU."""
    walls, cpus = [], []
    for _ in range(n):
        c0, t0 = _cpu(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu() - c0)
    return min(walls), min(cpus)


def _cpu() -> float:
    self_ = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return self_.ru_utime + self_.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="infx-changelog-bench-") as tmp:
        repo = GitRepo(Path(tmp) / "repo")
        master, runners = seed_catalog()
        log = real_changelog()
        base = repo.commit({"perf-changelog.yaml": log, "configs/amd-master.yaml": master,
                            "configs/runners.yaml": runners})
        head = repo.commit({"perf-changelog.yaml": log + b"\n" + seed_entry()})
        opts = GateOptions(repo=repo.path, base_ref=base, head_ref=head)
        run_gate(opts)  # warm-up (imports, catalog cache)
        history = best(lambda: check_change(opts), args.repeat)
        full = best(lambda: run_gate(opts), args.repeat)
        cmd = [sys.executable, "-m", "infx.workflows.validate_perf_changelog", "--base-ref", base, "--head-ref", head]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}

        def cli() -> None:
            subprocess.run(cmd, cwd=repo.path, env=env, check=True, capture_output=True)

        wall = best(cli, max(3, args.repeat // 2))
    load = os.getloadavg()[0]
    print(f"changelog: {len(log):,} bytes, 772 entries + 1 appended; best of {args.repeat}; load average {load:.1f}")
    print(f"history gate (in-process):             wall {history[0]:.3f} s  cpu {history[1]:.3f} s")
    print(f"full gate + matrix (in-process):       wall {full[0]:.3f} s  cpu {full[1]:.3f} s"
          f"   target < {TARGET_S} s: {'OK' if full[0] < TARGET_S else 'MISSED'}")
    print(f"CI command (python -m ..., new process): wall {wall[0]:.3f} s  cpu {wall[1]:.3f} s "
          "(interpreter start and imports included)")


if __name__ == "__main__":
    main()
