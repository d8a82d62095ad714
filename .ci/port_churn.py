#!/usr/bin/env python3
"""Bind and release ephemeral ports on 127.0.0.1 in the background, to run the suite against the race of
issue 25 (a port picked for a server is taken by another process before the server binds it).

Each cycle binds a kernel-chosen port (``bind(("127.0.0.1", 0))``), listens on it (a listening socket
blocks even ``SO_REUSEADDR`` binds, as vLLM's), holds it for a random while and closes it; up to ``--hold``
sockets are held at once. Bounded in time (``--duration`` seconds) and in count (``--cycles`` binds): it
always stops by itself, and prints what it did. Standard library only.

    python3 .ci/port_churn.py --duration 3600 -- make test     # churn while the command runs, its exit code
    python3 .ci/port_churn.py --duration 600 &                 # or in the background, bounded
"""

from __future__ import annotations

import argparse
import random
import socket
import subprocess
import sys
import time


def churn(duration: float, cycles: int, hold: int, hold_s: tuple[float, float], interval: float,
          until: subprocess.Popen[bytes] | None = None, seed: int | None = None) -> dict[str, float]:
    rng = random.Random(seed)
    held: list[tuple[float, socket.socket]] = []
    ports: set[int] = set()
    binds = failures = 0
    t0 = time.monotonic()
    end = t0 + duration
    try:
        while binds < cycles and time.monotonic() < end and (until is None or until.poll() is None):
            now = time.monotonic()
            keep = []
            for expiry, s in held:
                if expiry <= now:
                    s.close()
                else:
                    keep.append((expiry, s))
            held = keep
            if len(held) < hold:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    s.bind(("127.0.0.1", 0))
                    s.listen(1)
                except OSError:
                    s.close()
                    failures += 1
                else:
                    binds += 1
                    ports.add(s.getsockname()[1])
                    held.append((now + rng.uniform(*hold_s), s))
            time.sleep(interval)
    finally:
        for _, s in held:
            s.close()
    return {"seconds": round(time.monotonic() - t0, 2), "binds": binds, "distinct_ports": len(ports),
            "bind_failures": failures}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=3600.0, help="stop after this many seconds (default 3600)")
    ap.add_argument("--cycles", type=int, default=2_000_000, help="stop after this many binds (default 2000000)")
    ap.add_argument("--hold", type=int, default=128, help="ports held at once at most (default 128)")
    ap.add_argument("--min-hold", type=float, default=0.05, help="shortest hold, seconds (default 0.05)")
    ap.add_argument("--max-hold", type=float, default=2.0, help="longest hold, seconds (default 2)")
    ap.add_argument("--interval", type=float, default=0.005, help="sleep between cycles, seconds (default 0.005)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ...: run CMD while churning; its exit code")
    args = ap.parse_args(argv)
    if args.duration <= 0 or args.cycles <= 0 or args.hold <= 0 or not 0 <= args.min_hold <= args.max_hold:
        ap.error("--duration, --cycles and --hold must be positive, and 0 <= --min-hold <= --max-hold")
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    proc = subprocess.Popen(command) if command else None
    try:
        stats = churn(args.duration, args.cycles, args.hold, (args.min_hold, args.max_hold), args.interval,
                      until=proc, seed=args.seed)
        rc = proc.wait() if proc is not None else 0
    except KeyboardInterrupt:
        if proc is not None:
            proc.terminate()
            proc.wait()
        return 130
    print("port churn: " + ", ".join(f"{k}={v}" for k, v in stats.items()), file=sys.stderr, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
