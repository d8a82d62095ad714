"""Matrix generation speed on the full compat catalog (1820 rows, both master files).

Prints, cold (empty validated-catalog cache) and warm (cache filled):

* in-process: load + validate + generate + JSON encode, timed inside a fresh Python process
  after its imports (so no parse memo or cache from an earlier repeat helps);
* CLI: ``python -m infx.matrix.generate full-sweep ...`` end to end, start-up and imports included;

each as wall and CPU (user+sys of that work alone: wall inflates when other jobs share the
machine, CPU does not), median and min over ``--repeat`` runs, next to the reference figure
(1.2-1.6 s CLI on this machine class). Targets: in-process <= 0.15 s, CLI wall <= 0.4 s.

    .venv/bin/python benchmarks/matrix_speed.py [--repeat N] [--evals default|none]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("INFX_SHARED", REPO / ".." / "shared")).resolve()
COMPAT = SHARED / "compat" / "inferencex"
FILES = [str(COMPAT / "amd-master.yaml"), str(COMPAT / "nvidia-master.yaml")]
RUNNERS = str(COMPAT / "runners.yaml")

# Runs in a fresh interpreter: imports first (they count in the CLI figure, not here), then the work.
_CHILD = """
import json, sys, time
from infx.catalog.loader import load_catalog
from infx.catalog.runners import load_runners
from infx.matrix.generate import full_sweep_rows
import infx.yamlsource
files, runners, evals = json.loads(sys.argv[1])
t, c = time.perf_counter(), time.process_time()
rows = full_sweep_rows(load_catalog(files), load_runners(runners), evals=evals, on_warning=lambda m: None)
out = json.dumps(rows)
print(json.dumps([time.perf_counter() - t, time.process_time() - c, len(rows)]))
"""


def in_process(cache: str, evals: str) -> tuple[float, float, int]:
    """(wall, cpu, rows) for load + validate + generate + JSON encode in a fresh process."""
    env = {**os.environ, "INFX_CACHE_DIR": cache, "INFX_NO_CACHE": "0"}
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([FILES, RUNNERS, evals])],
                          stdout=subprocess.PIPE, check=True, cwd=REPO, env=env)
    wall, cpu, rows = json.loads(proc.stdout)
    return wall, cpu, rows


def cli(cache: str, evals: str) -> tuple[float, float]:
    """(wall, cpu user+sys) of one CLI run, start-up and imports included."""
    flag = {"default": [], "none": ["--no-evals"]}[evals]
    cmd = [sys.executable, "-m", "infx.matrix.generate", "full-sweep", "--config-files", *FILES,
           "--runner-config", RUNNERS, *flag]
    env = {**os.environ, "INFX_CACHE_DIR": cache, "INFX_NO_CACHE": "0"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO, env=env,
                          check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0 and len(json.loads(proc.stdout)) == 1820
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def fmt(pairs: list[tuple[float, ...]]) -> str:
    walls, cpus = [p[0] for p in pairs], [p[1] for p in pairs]
    return (f"wall median {statistics.median(walls):.3f} s (min {min(walls):.3f}), "
            f"cpu median {statistics.median(cpus):.3f} s (min {min(cpus):.3f}), n={len(pairs)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--evals", choices=("default", "none"), default="default",
                    help="eval mode (none = --no-evals)")
    args = ap.parse_args()
    n, evals = args.repeat, args.evals

    with tempfile.TemporaryDirectory() as tmp:
        warm = str(Path(tmp) / "warm")
        cold_ip, cold_cli = [], []
        for i in range(n):  # interleaved, so a burst of load from other jobs hits both alike
            cold_ip.append(in_process(str(Path(tmp) / f"ip{i}"), evals)[:2])
            cold_cli.append(cli(str(Path(tmp) / f"cli{i}"), evals))
        rows = in_process(warm, evals)[2]  # fills the warm cache
        warm_ip, warm_cli = [], []
        for _ in range(n):
            warm_ip.append(in_process(warm, evals)[:2])
            warm_cli.append(cli(warm, evals))

    print(f"full-sweep, {rows} rows, both compat master files (evals: {evals}); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus")
    print("(wall times inflate when other jobs share the CPU; cpu = user+sys of this work alone)")
    print(f"in-process cold (empty cache): {fmt(cold_ip)}   target <= 0.15 s")
    print(f"in-process warm (cached)     : {fmt(warm_ip)}   target <= 0.15 s")
    print(f"CLI        cold (empty cache): {fmt(cold_cli)}   target wall <= 0.4 s")
    print(f"CLI        warm (cached)     : {fmt(warm_cli)}   target wall <= 0.4 s")
    print("reference generator CLI      : 1.15-1.62 s wall on this machine class (spec section 10)")


if __name__ == "__main__":
    main()
