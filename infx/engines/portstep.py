"""A role's step picks its own port on the node it runs on, records it, then becomes the role.

Inside a Slurm job every deployment role is an ``srun`` step, and the node that runs ``infx run-group`` is not
necessarily the node the role binds on. So the step's command is this module in front of the role's argv:

    python -m infx.engines.portstep --record FILE --slot KEY=INDEX:PLACEHOLDER ... -- ARGV...

It picks one port per KEY on this node (:func:`infx.engines.ports.pick_port`, never one of ``--avoid``: ports
the role already lost), puts it into ``ARGV[INDEX]`` in place of ``PLACEHOLDER`` (the slots come from rendering
the role twice with different ports, so only the port's own tokens change), writes ``{"host", "ports", "pid"}``
to FILE atomically and ``exec``s ARGV: the picked port is bound by the role itself, moments later, on the node
that chose it. The deployment reads FILE and renders its router with the ports found there.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys

from infx.atomic import write_text
from infx.engines.ports import pick_port


def parse_slot(text: str) -> tuple[str, int, str]:
    key, _, rest = text.partition("=")
    index, _, placeholder = rest.partition(":")
    if not key or not index.isdigit() or not placeholder:
        raise ValueError(f"bad --slot {text!r}: want KEY=INDEX:PLACEHOLDER")
    return key, int(index), placeholder


def place_ports(argv: list[str], slots: list[tuple[str, int, str]], host: str,
                avoid: set[int]) -> tuple[list[str], dict[str, int]]:
    """ARGV with a port picked now for every slot's key (one per key), and the ports picked."""
    out = list(argv)
    picked: dict[str, int] = {}
    for key, index, placeholder in slots:
        if index >= len(out) or placeholder not in out[index]:
            raise ValueError(f"slot {key}={index}:{placeholder} does not match argv[{index}]")
        if key not in picked:
            picked[key] = pick_port(key, host, avoid | set(picked.values()))
        out[index] = out[index].replace(placeholder, str(picked[key]))
    return out, picked


def main(args: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m infx.engines.portstep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", required=True, help="where to write the picked ports (JSON)")
    ap.add_argument("--host", default="127.0.0.1", help="the address the role binds")
    ap.add_argument("--slot", action="append", default=[], help="KEY=INDEX:PLACEHOLDER (repeatable)")
    ap.add_argument("--avoid", default="", help="ports not to pick (comma-separated)")
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    ns = ap.parse_args(args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv
    if not argv:
        ap.error("no role argv after --")
    try:
        slots = [parse_slot(s) for s in ns.slot]
        avoid = {int(p) for p in ns.avoid.split(",") if p.strip()}
        argv, picked = place_ports(argv, slots, ns.host, avoid)
    except ValueError as exc:
        print(f"infx portstep: error: {exc}", file=sys.stderr)
        return 2
    write_text(ns.record, json.dumps({"host": socket.gethostname(), "node": os.environ.get("SLURMD_NODENAME"),
                                      "ports": picked, "pid": os.getpid()}) + "\n")
    print(f"[infx] step on {socket.gethostname()} picked " + ", ".join(f"{k}={v}" for k, v in picked.items()),
          flush=True)
    os.execvp(argv[0], argv)
    return 127  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(main())
