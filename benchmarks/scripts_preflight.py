"""Speed of the whole-catalog preflight on the real InferenceX corpus, bench scripts included.

Targets (issue 27): cold (empty render cache) under 60 s on 2 cores, warm under 3 s. Builds a throwaway
workspace from ../shared/compat/inferencex (both master catalogs, runners.yaml, benchmarks/) and runs
`infx preflight --json` over every row twice with a fresh INFX_CACHE_DIR: cold (every scripted row
rendered in the bubblewrap sandbox) and warm (every render from the cache). Prints wall and CPU
seconds (this process's children; CPU is the robust figure on a shared machine), the renders and
renders per second of the cold run, the load average, and the verdict counts.

Run: .venv/bin/python benchmarks/scripts_preflight.py [--corpus DIR] [--repeat-warm N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLD_TARGET_S, WARM_TARGET_S = 60.0, 3.0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


_SANDBOX_CPU = """
import atexit, sys
from infx.engines.scripts.sandbox import SANDBOX_CPU
atexit.register(lambda: print(f"SANDBOX_CPU {SANDBOX_CPU['seconds']:.3f}", file=sys.stderr))
from infx.cli import main
sys.argv = ["infx", *sys.argv[1:]]
main()
"""


def _preflight(ws: Path, cache: Path) -> tuple[float, float, list[dict], str]:
    """One `infx preflight --json` over the workspace; CPU = the process's own + what bash's `times` saw
    inside the sandboxes (the host's rusage does not reach through bubblewrap's PID namespace)."""
    env = {**os.environ, "INFX_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    c0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _SANDBOX_CPU, "--workspace", str(ws), "preflight", "--json"],
                          capture_output=True, text=True, env=env, cwd=ws)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    for line in proc.stderr.splitlines():
        if line.startswith("SANDBOX_CPU "):
            cpu += float(line.split()[1])
    if proc.returncode not in (0, 1):
        sys.exit(f"preflight failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return wall, cpu, json.loads(proc.stdout), proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "compat" / "inferencex")
    ap.add_argument("--repeat-warm", type=int, default=3)
    args = ap.parse_args()
    corpus = args.corpus if args.corpus.is_dir() else Path("/work/shared/compat/inferencex")
    if not (corpus / "benchmarks").is_dir():
        sys.exit(f"no InferenceX corpus with benchmarks/ at {corpus}")
    with tempfile.TemporaryDirectory(prefix="infx-scripts-bench-") as tmp:
        ws = Path(tmp) / "ws"
        (ws / "configs").mkdir(parents=True)
        for f in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
            shutil.copy(corpus / f, ws / "configs" / f)
        (ws / "benchmarks").symlink_to(corpus / "benchmarks")
        (ws / "infx.toml").write_text("")
        cache = Path(tmp) / "cache"
        load0 = os.getloadavg()[0]
        cold_wall, cold_cpu, verdicts, _ = _preflight(ws, cache)
        renders = len(list((cache / "scripts").glob("*/*.json")))
        warm = [_preflight(ws, cache)[:2] for _ in range(max(1, args.repeat_warm))]
        warm_wall, warm_cpu = min(w for w, _ in warm), min(c for _, c in warm)
    statuses = Counter(v["status"] for v in verdicts)
    scripted = sum(1 for v in verdicts for c in v["checks"] if c["name"] == "launch" and ".sh" in c["message"])
    print(f"rows: {len(verdicts)}  verdicts: {dict(statuses)}  scripted rows that did not render: {scripted}")
    print(f"cold: {cold_wall:6.1f} s wall, {cold_cpu:6.1f} s CPU  ({renders} renders, "
          f"{renders / cold_wall:.1f} renders/s wall, {renders / max(cold_cpu, 1e-9):.1f} renders/CPU-s)  "
          f"target < {COLD_TARGET_S:g} s  {'OK' if cold_wall < COLD_TARGET_S else 'MISSED'}")
    print(f"warm: {warm_wall:6.2f} s wall, {warm_cpu:6.2f} s CPU (best of {len(warm)})  "
          f"target < {WARM_TARGET_S:g} s  {'OK' if warm_wall < WARM_TARGET_S else 'MISSED'}")
    print(f"cores: {os.cpu_count()}  load average at start: {load0:.1f}")


if __name__ == "__main__":
    main()
