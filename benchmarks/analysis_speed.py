"""Speed of the store and the analysis (issue 6 targets; issue 23: both backends).

Ingests 100,000 synthetic result rows (in-memory BenchResult bundles through the same validated
write path ``infx ingest`` uses: digest check, batched transactions, idempotent upserts) into the store
``--store`` names (default: a fresh SQLite file; ``postgresql://USER@HOST:PORT/DB``: a scratch database created
next to DB and dropped afterwards), then computes every frontier (each workload x run x arm, per GPU and per node)
and one comparison. Prints ingest rows/s (targets: SQLite >= 20,000, PostgreSQL >= 10,000) and frontier +
comparison seconds (target < 1 s), as wall time and as CPU time (on a shared machine the wall figure includes
waiting for the CPU), and the store's ingest against its baseline measured in the same run: the same rows
written by the database driver alone (``executemany`` / ``COPY`` of prebuilt tuples, no digests, no upsert).

Issue 21: the same rows again, each result carrying its intervals (``stats``, as measured with 3
trials, and ``ci``, the packed summary its result.json holds), interleaved with passes without them;
prints the statistics' overhead as a ratio measured in this run (target < 5 %).

    .venv/bin/python benchmarks/analysis_speed.py [--rows 100000] [--store postgresql://infx@127.0.0.1:5432/infx]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import math
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infx.analysis.compare import compare_arms
from infx.analysis.dataset import frontier_membership, load_measured
from infx.metrics import cipack
from infx.results.layout import PointStatus
from infx.results.store import Store, make_bundle
from infx.results.synthetic import Arm, make_manifest, make_point, make_result

TPS = (1, 2, 4, 8)
CONCS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


_REL: dict[str | None, object] = {}


def _with_stats(result):  # type: ignore[no-untyped-def]
    """The result as measured with 3 trials: every headline figure with a Student-t interval
    (trial values 0.97x, 1x, 1.03x of the figure: the interval relative to the mean is the same for
    every figure, so it is computed once per tail and scaled)."""
    from infx.metrics.trialstats import headline_values
    from infx.metrics.uncertainty import Estimate, across_trials

    samples = result.metrics.ttft_ms.count
    stats = {}
    for k, v in headline_values(result.metrics).items():
        if v is None:
            continue
        tail = next((t for t in ("p90", "p99") if k.endswith(t)), None)
        rel = _REL.get(tail)
        if rel is None:
            rel = _REL[tail] = across_trials([0.97, 1.0, 1.03], samples=samples, tail=tail)
        assert isinstance(rel, Estimate)
        stats[k] = Estimate.model_construct(
            mean=v, lo=v * rel.lo, hi=v * rel.hi, n=rel.n, method=rel.method, se=v * (rel.se or 0.0), df=rel.df,
            values=[v * 0.97, v, v * 1.03], samples=samples,
            certified=None if tail is None else rel.certified if samples == rel.samples else None)
    # as ingest reads it from result.json: with the packed summary its serialiser writes from ``stats``
    return result.model_copy(update={"stats": stats, "ci": cipack.encode(cipack.pack_stats(stats))})


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
    ap.add_argument("--repeat", type=int, default=3,
                    help="passes of each kind, interleaved; the overhead compares the fastest of each")
    ap.add_argument("--no-stats-pass", action="store_true", help="skip the passes with intervals")
    ap.add_argument("--store", default=None, help="a store URL: postgresql://USER@HOST:PORT/DB (a scratch database "
                                                  "is made next to DB) or a SQLite path's directory (default: temp)")
    args = ap.parse_args()
    if args.no_stats_pass:
        t0 = time.perf_counter()
        items = bundles(args.rows, args.runs)
        print(f"generated {len(items):,} synthetic results in {time.perf_counter() - t0:.1f}s (not timed below)")
        gc.collect()
        gc.freeze()
        one_pass(items, args)
        return
    # The same results twice: with their intervals, and the very same objects without them (the stats
    # dropped, everything else shared). Both passes then read the same memory: rows generated apart
    # would differ in layout alone (results with intervals spread the other figures over more
    # memory), which costs ~10% here with no statistics work at all and is not what is measured.
    t0 = time.perf_counter()
    with_ci = bundles(args.rows, args.runs, stats=True)
    without = [dataclasses.replace(b, result=b.result.model_copy(update={"stats": {}, "ci": None})) for b in with_ci]
    print(f"generated {len(with_ci):,} synthetic results (with and without intervals) in "
          f"{time.perf_counter() - t0:.1f}s (not timed below)")
    gc.collect()
    gc.freeze()  # the generated bundles are not what is timed: keep the collector from walking them
    keys = ("ingest_cpu", "load_cpu", "analysis_cpu")
    best: dict[bool, dict[str, float]] = {False: {}, True: {}}
    for k in range(args.repeat):
        for stats in (False, True):
            print(f"\n-- pass {k + 1}/{args.repeat}, {'with' if stats else 'without'} trials' confidence "
                  "intervals (issue 21) --")
            got = one_pass(with_ci if stats else without, args)
            for key in keys:
                best[stats][key] = min(best[stats].get(key, math.inf), got[key])
    plain, with_stats = best[False], best[True]
    print(f"\n-- statistics overhead: fastest of {args.repeat} interleaved passes each, same rows --")
    for key in keys:
        print(f"statistics overhead, {key}: {plain[key]:.3f}s -> {with_stats[key]:.3f}s "
              f"(ratio {with_stats[key] / plain[key]:.3f}, {(with_stats[key] / plain[key] - 1) * 100:+.1f}%)")
    total0 = sum(plain[k] for k in keys)
    total1 = sum(with_stats[k] for k in keys)
    print(f"statistics overhead, ingest CPU + load + analysis CPU: {total0:.2f}s -> {total1:.2f}s "
          f"(ratio {total1 / total0:.3f}, {(total1 / total0 - 1) * 100:+.1f}%, target < 5%)")


@contextlib.contextmanager
def scratch_store(url: str | None) -> Iterator[str]:
    """A fresh, empty store for one pass: a SQLite file in a temporary directory, or a scratch PostgreSQL
    database created on the server ``url`` names (dropped afterwards)."""
    if url is None or not url.startswith("postgres"):
        with tempfile.TemporaryDirectory(prefix="infx-bench-", dir=url) as tmp:
            yield str(Path(tmp) / "infx.db")
        return
    import psycopg

    from infx.results.store.url import parse

    base = parse(url).sqlalchemy_url.replace("postgresql+psycopg://", "postgresql://")
    name = f"infx_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def driver_baseline(st: Store, items: list) -> float:  # type: ignore[type-arg]
    """Seconds the driver alone takes to write the same points and results rows (prebuilt tuples: SQLite
    executemany, PostgreSQL binary COPY) into copies of the two tables: the floor under the store's ingest."""
    from infx.results.store import schema
    from infx.results.store.writes import bundle_rows, copy_rows

    rows = bundle_rows(items).rows
    names = ("points", "results")
    raw = st.db.raw
    t0 = time.perf_counter()
    if st.kind == "sqlite":
        for name in names:
            table = schema.metadata.tables[name]
            cols = [c.name for c in table.columns]
            raw.execute(f"CREATE TEMP TABLE base_{name} AS SELECT {', '.join(cols)} FROM {name} WHERE 0")
            raw.execute("BEGIN")
            raw.executemany(f"INSERT INTO base_{name} VALUES ({', '.join('?' * len(cols))})", rows[name])
            raw.execute("COMMIT")
    else:
        with raw.cursor() as cur:
            for name in names:
                cols = tuple(c.name for c in schema.metadata.tables[name].columns)
                cur.execute(f"CREATE TEMP TABLE base_{name} (LIKE {name})")
                copy_rows(cur, name, cols, rows[name], into=f"base_{name}")
        raw.commit()
    return time.perf_counter() - t0


def one_pass(items: list, args: argparse.Namespace) -> dict[str, float]:  # type: ignore[type-arg]
    with scratch_store(args.store) as url:
        with Store(url) as st:
            kind = st.kind
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
            base_s = driver_baseline(st, items)

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

    target = 20_000 if kind == "sqlite" else 10_000
    rate = len(items) / ingest_s
    print(f"[{kind}] ingest: {len(items):,} rows in {ingest_s:.2f}s = {rate:,.0f} rows/s (target >= {target:,}: "
          f"{'met' if rate >= target else 'NOT met'}); CPU {ingest_cpu:.2f}s = {len(items) / ingest_cpu:,.0f} rows/s "
          "per CPU second")
    print(f"[{kind}] ingest vs its baseline, the driver alone writing the same points+results rows in {base_s:.2f}s: "
          f"ratio {ingest_s / base_s:.2f}")
    print(f"[{kind}] re-ingest (unchanged, idempotent): {reingest_s:.2f}s = {len(items) / reingest_s:,.0f} rows/s")
    print(f"[{kind}] load from store: {len(measured):,} measured points in {load_s:.2f}s (CPU {load_cpu:.2f}s)")
    print(f"[{kind}] frontiers + comparison: {n_frontiers:,} arms x 2 normalisations ({int(on_gpu.sum()):,} + "
          f"{int(on_node.sum()):,} frontier points) and 1 comparison in {analysis_s:.3f}s (target < 1 s: "
          f"{'met' if analysis_s < 1 else 'NOT met'}); CPU {analysis_cpu:.3f}s")

    t0 = time.perf_counter()
    everything = compare_arms(measured, "run0", "tp=2", "tp=8", norm="node")
    print(f"(for scale: all {len(everything.comparisons):,} TP=2 vs TP=8 comparisons of run0 in "
          f"{time.perf_counter() - t0:.2f}s)")
    return {"ingest_cpu": ingest_cpu, "load_cpu": load_cpu, "analysis_cpu": analysis_cpu}


if __name__ == "__main__":
    main()
