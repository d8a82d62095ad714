"""One writer of the many-writers test (``test_store_concurrency.py``): builds worker W's points (and, to write
the same points as its neighbour at the same moment, the first ``--overlap`` of worker W+1's), waits for the
common start time, then ingests them batch by batch into each store given, alternating between the stores.
Prints ``written unchanged`` per store as JSON.

    python -m tests.results.concurrent_ingest --worker W --workers N --points P --start UNIX_TIME STORE...
"""

from __future__ import annotations

import argparse
import json
import random
import time

from infx.results.layout import PointStatus
from infx.results.store import Store, make_bundle
from infx.results.store.bundles import PointBundle
from infx.results.synthetic import SEED_ARMS, make_manifest, make_point, make_result

RUN = "many-writers"


def bundles(worker: int, n: int) -> list[PointBundle]:
    template = make_point(2, 8, isl=1024, osl=1024)
    status = PointStatus(state="done")
    rng = random.Random(worker)
    out = []
    for k in range(n):
        pid = f"w{worker}_p{k:05d}"
        p = template.model_copy(update={"point_id": pid, "exp_name": pid, "conc": 1 + k % 512})
        out.append(make_bundle(RUN, p, status, make_result(p, SEED_ARMS[0], rng=rng)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", type=int, required=True)
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--points", type=int, required=True)
    ap.add_argument("--overlap", type=int, default=0)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--start", type=float, required=True)
    ap.add_argument("stores", nargs="+")
    args = ap.parse_args()
    mine = bundles(args.worker, args.points)
    neighbour = bundles((args.worker + 1) % args.workers, args.overlap)
    items = mine + neighbour
    random.Random(args.worker).shuffle(items)  # writers meet on the shared points in different orders
    stores = [Store(s) for s in args.stores]
    for st in stores:
        st.upsert_run(make_manifest(RUN))
    time.sleep(max(0.0, args.start - time.time()))
    totals = {s: [0, 0] for s in args.stores}
    for i in range(0, len(items), args.batch):
        for url, st in zip(args.stores, stores, strict=True):
            written, unchanged = st.add_points(items[i:i + args.batch], batch=args.batch)
            totals[url][0] += written
            totals[url][1] += unchanged
    for st in stores:
        st.close()
    print(json.dumps(totals))


if __name__ == "__main__":
    main()
