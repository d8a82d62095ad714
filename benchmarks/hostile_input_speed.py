"""Hostile inputs that used to hang or crawl (issue 26): how long infx now takes to refuse or read them.

Prints seconds for: one 64 MB SSE event arriving in 64 KiB reads (the parser joins an event's reads once;
it was quadratic, about 15 s), a YAML alias bomb (refused at the alias), a 1 GiB gzip bomb in a trace
(refused at the inflation bound) and an expression power tower (refused before it is built).

    .venv/bin/python benchmarks/hostile_input_speed.py
"""

from __future__ import annotations

import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infx.diagnostics import InfxError
from infx.engines.expr import Expr, ExprError
from infx.loadgen.sse import _events
from infx.yamlsource import parse_yaml


def timed(label: str, fn: Callable[[], object]) -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    outcome = fn()
    print(f"{label}: {time.perf_counter() - t0:.3f} s wall, {time.process_time() - c0:.3f} s CPU ({outcome})")


def sse() -> str:
    event = b'data: {"choices":[{"text":"' + b"x" * (64 * 2**20) + b'"}]}\n\n'
    reads = [(i, event[j:j + 65536]) for i, j in enumerate(range(0, len(event), 65536))]
    return f"{len(list(_events(reads)))} event of {len(event) / 2**20:.0f} MiB in {len(reads)} reads"


def bomb() -> str:
    text = "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}" if i else "x"] * 10) + "]\n" for i in range(12))
    try:
        parse_yaml(text, "bomb.yaml")
    except InfxError as exc:
        return str(exc)[:60]
    return "accepted?"


def gzip_bomb() -> str:
    from infx.agentic.trace import load_traces

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "t.jsonl.gz"
        co = zlib.compressobj(9, zlib.DEFLATED, 31)
        with f.open("wb") as fh:
            chunk = b" " * 2**24
            for _ in range(64):
                fh.write(co.compress(chunk))
            fh.write(co.flush())
        try:
            load_traces(f)
        except InfxError as exc:
            return str(exc).split(": ", 2)[-1][:60]
    return "accepted?"


def tower() -> str:
    try:
        Expr("((9**64)**64)**64**64").evaluate({})
    except ExprError as exc:
        return str(exc)[:60]
    return "accepted?"


if __name__ == "__main__":
    timed("64 MB SSE event", sse)
    timed("YAML alias bomb (10^12 nodes)", bomb)
    timed("1 GiB gzip bomb trace", gzip_bomb)
    timed("expression power tower", tower)
