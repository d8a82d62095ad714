"""Speed of ``infx review`` on real history: a workspace made from the InferenceX corpus (1,820 points),
one real bench script changed the way the seed changed its recipe (dsv4_fp4_b200_vllm_mtp.sh).

Targets (2 cores): under 60 s cold (an empty bench-script render cache: every changed launch rendered in
the sandbox, both sides) and under 10 s warm. Prints, per run, the wall time of the command as a user
types it (interpreter start included), and the same figures for the named peer measured in the same
run: ``infx changelog validate`` on the same refs (the existing gate, which renders no launch).

Run: .venv/bin/python benchmarks/review_speed.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.review.test_real_history import build_inferencex_workspace  # noqa: E402

COLD_TARGET_S, WARM_TARGET_S = 60.0, 10.0


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="warm runs (best is reported)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="infx-review-speed-") as tmp:
        root = Path(tmp) / "repo"
        base, head = build_inferencex_workspace(root)
        cache = Path(tmp) / "cache"  # an empty render cache: the first review is cold
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache)}
        review = [sys.executable, "-m", "infx", "review", "--base", base, "--head", head, "--format", "json",
                  "--output", str(Path(tmp) / "review.json")]
        peer = [sys.executable, "-m", "infx", "changelog", "validate", "--base-ref", base, "--head-ref", head]
        load0 = os.getloadavg()[0]
        cold = timed(review, root, env)
        load1 = os.getloadavg()[0]
        warm = min(timed(review, root, env) for _ in range(args.repeat))
        peer_s = min(timed(peer, root, env) for _ in range(args.repeat))
    print(f"infx review, real history (InferenceX corpus, one bench script changed), {os.cpu_count()} cores")
    print(f"  cold (empty render cache): {cold:6.2f} s   target < {COLD_TARGET_S:.0f} s   "
          f"{'OK' if cold < COLD_TARGET_S else 'OVER'}   (load average {load0:.1f} before, {load1:.1f} after)")
    print(f"  warm (best of {args.repeat}):         {warm:6.2f} s   target < {WARM_TARGET_S:.0f} s   "
          f"{'OK' if warm < WARM_TARGET_S else 'OVER'}")
    print(f"  peer: infx changelog validate (same refs, best of {args.repeat}): {peer_s:6.2f} s")
    print(f"  ratio review/peer: cold {cold / peer_s:.1f}x, warm {warm / peer_s:.1f}x")


if __name__ == "__main__":
    main()
