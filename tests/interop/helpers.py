"""Constructed measured points for the interop tests (synthetic: closed-form numbers, not measurements;
a GPU cannot be part of these tests, so single-node GPU runners and multi-node roles are constructed)."""

from __future__ import annotations

import random
from pathlib import Path

from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.results.layout import PointStatus, ResultsDir, write_point_outcome
from infx.results.synthetic import Arm, make_manifest, make_point, make_result

CONCS = (4, 8, 16, 32)
ARM = Arm(tp=4, t_max=3000.0, c_half=40.0)


def fixed_point(tp: int, conc: int, **kw: object) -> Point:
    return make_point(tp, conc, isl=1024, osl=128, **kw)  # type: ignore[arg-type]


def multinode_point(conc: int, *, decode_workers: int = 2, hardware: bool = False) -> Point:
    row = fixed_point(4, conc).to_row()
    for k in ("tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn"):
        row.pop(k, None)
    row |= {"exp-name": f"mn_conc{conc}", "point-id": f"mn{conc}-{decode_workers}", "disagg": True,
            "framework": "sglang-disagg", "runner": "mi355x-disagg",
            "router": {"name": "sglang-router", "version": "0.3.2"}, "kv-p2p-transfer": "mori",
            "prefill": {"num-worker": 1, "tp": 4, "ep": 1, "dp-attn": False, "pp": 1, "dcp-size": 1, "pcp-size": 1},
            "decode": {"num-worker": decode_workers, "tp": 8, "ep": 8, "dp-attn": True, "pp": 1, "dcp-size": 1,
                       "pcp-size": 1}}
    if hardware:
        row["prefill"]["hardware"] = "mi355x"
        row["decode"]["hardware"] = "mi300x"
    return Point.from_row(row)


def result_for(point: Point, seed: int = 0, **kw: object) -> BenchResult:
    return make_result(point, ARM, rng=random.Random(seed), **kw)  # type: ignore[arg-type]


def write_run(root: Path, run_id: str, points: list[Point], *, seed: int = 0,
              results: list[BenchResult] | None = None) -> ResultsDir:
    rd = ResultsDir(root)
    rd.write_manifest(make_manifest(run_id))
    for i, p in enumerate(points):
        r = results[i] if results else result_for(p, seed + i)
        write_point_outcome(rd, run_id, p, PointStatus(state="done", started_at=r.started_at, ended_at=r.ended_at), r)
    return rd
