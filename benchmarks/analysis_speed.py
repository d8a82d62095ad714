"""Speed of the store and the analysis (issue 6 targets).

Ingests 100,000 synthetic result rows (in-memory BenchResult bundles through the same validated
write path ``infx ingest`` uses: digest check, one SAVEPOINT per point, batched commits, WAL),
then computes every frontier (each workload x run x arm, per GPU and per node) and one
comparison. Prints ingest rows/s (target > 20,000) and frontier + comparison seconds (target < 1 s), as wall
time and as CPU time (on a shared machine the wall figure includes waiting for the CPU).

    .venv/bin/python benchmarks/analysis_speed.py [--rows 100000]
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infx.analysis.compare import compare_arms
from infx.analysis.dataset import frontier_membership, load_measured
from infx.results.layout import PointStatus
from infx.results.store import Store, make_bundle
from infx.results.synthetic import Arm, make_manifest, make_point, make_result

TPS = (1, 2, 4, 8)
CONCS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def _with_stats(result):  # type: ignore[no-untyped-def]
    """The result as measured with 3 trials: every headline figure with a Student-t interval."""
    from infx.metrics.trialstats import headline_values
    from infx.metrics.uncertainty import across_trials

    stats = {}
    for k, v in headline_values(result.metrics).items():
        if v is not None:
            e = across_trials([v * 0.97, v, v * 1.03], samples=result.metrics.ttft_ms.count,
                              tail=next((t for t in ("p90", "p99") if k.endswith(t)), None))
            if e is not None:
                stats[k] = e
    return result.model_copy(update={"stats": stats})


def bundles(n: int, runs: int, stats: bool = False):  # type: ignore[no-untyped-def]
    """n synthetic points: runs x models x TP arms x concs (results vary per run and model);
    ``stats``: each result carries issue 21's intervals (as if measured with --trials 3)."""
    rng = random.Random(0)
    status = PointStatus(state="done", launch_fingerprint="bench")
    templates = {(tp, conc): make_point(tp, conc, isl=1024, osl=1024) for tp in TPS for conc in CONCS}
    out = []
    per_run = n // runs
    for r in range(runs):
        k = model = 0
        while k < per_run:
            for tp in TPS:
                arm = Arm(tp=tp, t_max=500.0 * tp ** 0.8 * rng.uniform(0.8, 1.2), c_half=30.0)
                for conc in CONCS:
                    if k >= per_run:
                        break
                    name = f"m{model}_tp{tp}_conc{conc}"
                    p = templates[(tp, conc)].model_copy(update={"model_prefix": f"m{model}", "point_id": name,
                                                                 "exp_name": name})
                    res = make_result(p, arm, rng=rng)
                    out.append(make_bundle(f"run{r}", p, status, _with_stats(res) if stats else res))
                    k += 1
            model += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--no-stats-pass", action="store_true", help="skip the second pass (results with intervals)")
    args = ap.parse_args()
    plain = one_pass(args, stats=False)
    if args.no_stats_pass:
        return
    print("\n-- the same rows carrying trials and confidence intervals (issue 21) --")
    with_stats = one_pass(args, stats=True)
    for key in ("ingest_cpu", "load_cpu", "analysis_cpu"):
        print(f"statistics overhead, {key}: {plain[key]:.3f}s -> {with_stats[key]:.3f}s "
              f"({(with_stats[key] / plain[key] - 1) * 100:+.1f}%)")
    total0 = sum(plain[k] for k in ("ingest_cpu", "load_cpu", "analysis_cpu"))
    total1 = sum(with_stats[k] for k in ("ingest_cpu", "load_cpu", "analysis_cpu"))
    print(f"statistics overhead, ingest CPU + load + analysis CPU: {total0:.2f}s -> {total1:.2f}s "
          f"({(total1 / total0 - 1) * 100:+.1f}%, target < 5%)")


def one_pass(args: argparse.Namespace, *, stats: bool) -> dict[str, float]:
    t0 = time.perf_counter()
    items = bundles(args.rows, args.runs, stats=stats)
    gc.collect()
    gc.freeze()  # the generated bundles are not what is timed: keep the collector from walking them
    print(f"generated {len(items):,} synthetic results in {time.perf_counter() - t0:.1f}s (not timed below)")
    with tempfile.TemporaryDirectory(prefix="infx-bench-") as tmp:
        with Store(Path(tmp) / "infx.db") as st:
            for r in range(args.runs):
                st.upsert_run(make_manifest(f"run{r}"))
            t0, c0 = time.perf_counter(), time.process_time()
            written, unchanged = st.add_points(items)
            ingest_s, ingest_cpu = time.perf_counter() - t0, time.process_time() - c0
            assert (written, unchanged) == (len(items), 0)
            t0 = time.perf_counter()
            again = st.add_points(items)
            reingest_s = time.perf_counter() - t0
            assert again == (0, len(items))

            t0, c0 = time.perf_counter(), time.process_time()
            measured = load_measured(st)
            load_s, load_cpu = time.perf_counter() - t0, time.process_time() - c0

        # all frontiers: every (run, workload, arm), per GPU and per node, in one vectorised pass each
        t0, c0 = time.perf_counter(), time.process_time()
        on_gpu = frontier_membership(measured, norm="gpu")
        on_node = frontier_membership(measured, norm="node")
        # one comparison: TP=2 vs TP=8 of one workload of run0, per node
        one = [m for m in measured if m.run_id == "run0" and m.workload.model_prefix == "m0"]
        cs = compare_arms(one, "run0", "tp=2", "tp=8", norm="node")
        analysis_s, analysis_cpu = time.perf_counter() - t0, time.process_time() - c0
        assert len(cs.comparisons) == 1
        n_frontiers = len({(m.run_id, m.workload, m.arm) for m in measured})

    print(f"ingest: {len(items):,} rows in {ingest_s:.2f}s = {len(items) / ingest_s:,.0f} rows/s (target > 20,000); "
          f"CPU {ingest_cpu:.2f}s = {len(items) / ingest_cpu:,.0f} rows/s per CPU second")
    print(f"re-ingest (unchanged, idempotent): {reingest_s:.2f}s = {len(items) / reingest_s:,.0f} rows/s")
    print(f"load from store: {len(measured):,} measured points in {load_s:.2f}s (CPU {load_cpu:.2f}s)")
    print(f"frontiers + comparison: {n_frontiers:,} arms x 2 normalisations ({int(on_gpu.sum()):,} + "
          f"{int(on_node.sum()):,} frontier points) and 1 comparison in {analysis_s:.3f}s (target < 1 s); "
          f"CPU {analysis_cpu:.3f}s")

    t0 = time.perf_counter()
    everything = compare_arms(measured, "run0", "tp=2", "tp=8", norm="node")
    print(f"(for scale: all {len(everything.comparisons):,} TP=2 vs TP=8 comparisons of run0 in "
          f"{time.perf_counter() - t0:.2f}s)")
    del items
    gc.unfreeze()
    gc.collect()
    return {"ingest_cpu": ingest_cpu, "load_cpu": load_cpu, "analysis_cpu": analysis_cpu}


if __name__ == "__main__":
    main()
