"""The main view at the real catalog's scale: a store of 10 runs x 2,000 synthetic points (one point per model x
hardware x framework x TP x concurrency, as the analysis benchmark builds them), on SQLite and PostgreSQL.

Prints, per backend:
- the API (``/api/mainview``, the latest curves; and one run's view): the first (cold, computing the view) request
  and the p50/p95 of the next ones, against the store's bare read of the same points (``Store.measured``) measured
  in the same run;
- the dashboard in headless Chromium (Debian's, through chromium-driver): first contentful paint and the first
  chart drawn, from the browser's own performance timing (``infx-first-chart`` mark);
and once: ``infx report`` over one 2,000-point run (results directory -> report.html, ingest included): build time,
size, and the time until Chromium has drawn its first main-view chart. Targets: main view ready < 2 s, API p95 <
200 ms, report < 15 s and < 15 MB, opens in < 5 s.

    .venv/bin/python benchmarks/dashboard_scale.py [--runs 10] [--pg postgresql://infx@127.0.0.1:5432/infx]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from analysis_speed import scratch_store

from infx.results.layout import PointStatus
from infx.results.store import Store, make_bundle
from infx.results.synthetic import Arm, make_manifest, make_point, make_result, write_cross_hardware_run

HARDWARE = (("mi355x", 1.0), ("b200", 1.3), ("h200", 0.8), ("mi300x", 0.6), ("gb200", 1.5))
FRAMEWORKS = ("vllm", "sglang")
TPS = (1, 2, 4, 8)
CONCS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
MODELS = tuple(f"m{i}" for i in range(5))  # 5 x 5 x 2 x 4 x 10 = 2,000 points per run
DAY = 86_400.0
T0 = 1_780_000_000.0


def run_bundles(r: int) -> tuple[object, list[object]]:
    rng = random.Random(r)
    run = f"run{r:02d}"
    manifest = make_manifest(run, started_at=T0 + r * DAY)
    manifest = manifest.model_copy(update={"gpus_per_node": {f"cluster:{h}-x": 8 for h, _ in HARDWARE}})
    status = PointStatus(state="done", launch_fingerprint="bench")
    out = []
    for model in MODELS:
        for hw, scale in HARDWARE:
            for fw in FRAMEWORKS:
                for tp in TPS:
                    arm = Arm(tp=tp, t_max=500.0 * tp ** 0.8 * scale * rng.uniform(0.9, 1.1), c_half=30.0)
                    for conc in CONCS:
                        p = make_point(tp, conc, model_prefix=model, runner=f"cluster:{hw}-x", framework=fw,
                                       isl=1024, osl=1024)
                        name = f"{model}_{hw}_{fw}_tp{tp}_conc{conc}"
                        p = p.model_copy(update={"point_id": name, "exp_name": name})
                        out.append(make_bundle(run, p, status, make_result(p, arm, rng=rng, started_at=T0 + r * DAY)))
    return manifest, out


@contextmanager
def dashboard(url: str) -> Iterator[str]:
    from aiohttp import web

    from infx.report.server import make_app

    root = Path(tempfile.mkdtemp(prefix="infx-dash-"))
    loop = asyncio.new_event_loop()
    started = threading.Event()
    state: dict[str, object] = {}

    async def start() -> None:
        runner = web.AppRunner(make_app(root, store=url, ingest=False), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        state["runner"], state["port"] = runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        started.set()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    started.wait(60)
    try:
        yield f"http://127.0.0.1:{state['port']}"
    finally:
        asyncio.run_coroutine_threadsafe(state["runner"].cleanup(), loop).result(60)  # type: ignore[union-attr]
        loop.call_soon_threadsafe(loop.stop)
        thread.join(60)
        shutil.rmtree(root, ignore_errors=True)


def get(url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as resp:
        n = len(resp.read())
    return time.perf_counter() - t0, n


def api(base: str, path: str, n: int) -> str:
    cold, size = get(base + path)
    warm = sorted(get(base + path)[0] for _ in range(n))
    p50, p95 = statistics.median(warm), warm[min(len(warm) - 1, int(0.95 * len(warm)))]
    return (f"{path}: cold {cold * 1000:.0f} ms, then p50 {p50 * 1000:.1f} ms / p95 {p95 * 1000:.1f} ms over {n} "
            f"({size / 1e6:.2f} MB)"), p95  # type: ignore[return-value]


def browser():  # type: ignore[no-untyped-def]
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "chromium"
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=opts)


def page_timing(url: str, ready_js: str) -> list[tuple[float, float, float]]:
    """(first contentful paint, first chart drawn, wall until drawn) in seconds, from the browser's timing: a first
    visit (fresh profile: nothing cached) and a second one in the same browser (plotly.js cached)."""
    from selenium.webdriver.support.ui import WebDriverWait

    drv = browser()
    out = []
    try:
        for _ in range(2):
            drv.get("about:blank")
            t0 = time.perf_counter()
            drv.get(url)
            WebDriverWait(drv, 300, poll_frequency=0.05).until(lambda d: d.execute_script(ready_js))
            wall = time.perf_counter() - t0
            fcp = drv.execute_script("const e = performance.getEntriesByName('first-contentful-paint'); "
                                     "return e.length ? e[0].startTime : null;")
            chart = drv.execute_script("const e = performance.getEntriesByName('infx-first-chart'); "
                                       "return e.length ? e[0].startTime : null;")
            out.append(((fcp or float("nan")) / 1000, (chart or float("nan")) / 1000, wall))
        return out
    finally:
        drv.quit()


def timing_line(visits: list[tuple[float, float, float]], target: float) -> str:
    return "; ".join(f"{kind}: first contentful paint {fcp:.2f}s, first chart drawn {chart:.2f}s (wall {wall:.2f}s) "
                     f"target < {target:g} s {'MET' if chart < target else 'MISSED'}"
                     for kind, (fcp, chart, wall) in zip(("first visit", "second visit"), visits, strict=True))


READY = ("const c = document.getElementById('mv-chart-0'); return !!(c && c.dataset.drawn === '1' && "
         "performance.getEntriesByName('infx-first-chart').length);")


def plotly_peer() -> str:
    """The peer of the page timings: a page that only loads plotly.js and draws one empty chart, in the same browser."""
    from plotly.offline import get_plotlyjs

    with tempfile.TemporaryDirectory(prefix="infx-peer-") as tmp:
        (Path(tmp) / "plotly.min.js").write_text(get_plotlyjs())
        page = Path(tmp) / "peer.html"
        page.write_text('<!DOCTYPE html><html><head><script src="plotly.min.js"></script></head><body>'
                        '<div id="c"></div><script>Plotly.newPlot("c", [{x: [1], y: [1]}]).then(() => '
                        'performance.mark("infx-first-chart"));</script></body></html>')
        visits = page_timing(page.as_uri(), "return performance.getEntriesByName('infx-first-chart').length > 0;")
    return "; ".join(f"{kind}: {chart:.2f}s" for kind, (_f, chart, _w) in zip(("first visit", "second visit"), visits,
                                                                               strict=True))


def backend(name: str, url: str | None, runs: int, requests: int) -> None:
    with scratch_store(url) as where:
        with Store(where) as st:
            t0 = time.perf_counter()
            total = 0
            for r in range(runs):
                manifest, items = run_bundles(r)
                st.upsert_run(manifest)  # type: ignore[arg-type]
                st.add_points(items)  # type: ignore[arg-type]
                total += len(items)
            print(f"[{name}] store of {runs} runs x {total // runs:,} points ({total:,}) built in "
                  f"{time.perf_counter() - t0:.1f}s (not a target)")
            last = f"run{runs - 1:02d}"
            reads = []
            for _ in range(5):
                t0 = time.perf_counter()
                st.measured([last])
                reads.append(time.perf_counter() - t0)
            peer = statistics.median(reads)
        with dashboard(where) as base:
            line, p95 = api(base, "/api/mainview", requests)
            print(f"[{name}] API {line}")
            print(f"[{name}]   p95 / the store's bare read of the same 2,000 points ({peer * 1000:.0f} ms): "
                  f"{p95 / peer:.2f}x   target p95 < 200 ms: {'MET' if p95 < 0.2 else 'MISSED'}")  # type: ignore[operator]
            line, _ = api(base, f"/api/mainview?runs={last}", requests)
            print(f"[{name}] API {line}")
            line, _ = api(base, "/api/mainview.csv?chart=0&y=usd_mtok_total:hyperscaler", requests)
            print(f"[{name}] API {line}")
            visits = page_timing(base + "/mainview", READY)
            print(f"[{name}] dashboard /mainview in Chromium (the view computed by the calls above): "
                  f"{timing_line(visits, 2)}")


def report() -> None:
    from infx.report.build import write_report

    hw = tuple((f"cluster:{h}-x", fw, s) for h, s in HARDWARE for fw in FRAMEWORKS)
    arms = tuple(Arm(tp=tp, t_max=500.0 * tp ** 0.8, c_half=30.0, concs=CONCS) for tp in TPS)
    with tempfile.TemporaryDirectory(prefix="infx-report-bench-") as tmp:
        root = Path(tmp) / "results"
        t0 = time.perf_counter()
        write_cross_hardware_run(root, "big", hw, arms, models=MODELS)
        print(f"[report] wrote one run of 2,000 points as a results directory in {time.perf_counter() - t0:.1f}s "
              "(not timed)")
        out = Path(tmp) / "report.html"
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        write_report(root, out)
        took, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        size = out.stat().st_size
        print(f"[report] infx report (ingest included): {took:.1f}s wall, {cpu:.1f}s CPU, {size / 1e6:.1f} MB   "
              f"targets < 15 s: {'MET' if took < 15 else 'MISSED'}, < 15 MB: {'MET' if size < 15e6 else 'MISSED'}")
        print(f"[report] opened in Chromium: {timing_line(page_timing(out.as_uri(), READY), 5)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--pg", default=None, help="a PostgreSQL server URL (a scratch database is made and dropped); "
                                              "default: the one .ci/postgres.sh started, if any")
    ap.add_argument("--skip-report", action="store_true")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"[peer] a page that only loads plotly.js and draws one empty chart, first chart drawn: {plotly_peer()}")
    backend("sqlite", None, args.runs, args.requests)
    pg = args.pg
    if pg is None:
        f = Path(os.environ.get("INFX_PG_DIR", "/tmp/infx-postgres")) / "postgres.url"
        pg = f.read_text().strip() if f.is_file() else None
    if pg:
        backend("postgresql", pg, args.runs, args.requests)
    else:
        print("[postgresql] skipped: no server (pass --pg URL)")
    if not args.skip_report:
        report()
    print(f"machine load at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
