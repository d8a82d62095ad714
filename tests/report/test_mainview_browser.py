"""The main view in a real browser: Debian's Chromium driven through chromium-driver and Selenium, over the
dashboard on a store (SQLite and PostgreSQL) holding one model on two hardware."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from infx.results.synthetic import write_cross_hardware_run
from tests.pgserver import pg_server, store_url

__all__ = ["pg_server", "store_url"]

pytestmark = pytest.mark.slow
HANG = 60  # seconds: a hang guard, not a timing assertion
TIER = "hyperscaler"


def _driver():  # type: ignore[no-untyped-def]
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or chromedriver is None:
        pytest.skip("Debian chromium / chromium-driver not installed (.ci/chromium.sh)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1600"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(chromedriver), options=opts)


@pytest.fixture
def served(tmp_path: Path, store_url: str) -> Iterator[tuple[str, Path, str]]:
    """The dashboard over a results directory of one run (one model on MI355X and B200), ingested into
    ``store_url``; yields (base URL, results root, store)."""
    from aiohttp import web

    from infx.report.server import make_app

    root = tmp_path / "results"
    write_cross_hardware_run(root, "run-a")
    loop = asyncio.new_event_loop()
    started = threading.Event()
    state: dict[str, object] = {}

    async def start() -> None:
        runner = web.AppRunner(make_app(root, store=store_url), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        state["runner"], state["port"] = runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        started.set()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(HANG)
    try:
        yield f"http://127.0.0.1:{state['port']}", root, store_url
    finally:
        asyncio.run_coroutine_threadsafe(state["runner"].cleanup(), loop).result(HANG)  # type: ignore[union-attr]
        loop.call_soon_threadsafe(loop.stop)
        thread.join(HANG)
        loop.close()


def _wait_ready(drv) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(drv, HANG).until(lambda d: d.execute_script(
        "const r = document.getElementById('mainview'); const c = document.getElementById('mv-chart-0');"
        "return r && r.dataset.ready === '1' && c && c.dataset.drawn === '1' && c.data && c.data.length > 0;"))


def _chart_points(drv) -> dict[str, list[tuple[str, float, float, int]]]:  # type: ignore[no-untyped-def]
    """What chart 0 draws, read back from plotly's own trace data: per curve, (point, x, y, on envelope)."""
    got = drv.execute_script(
        "return document.getElementById('mv-chart-0').data.filter(t => t.meta && t.meta.kind === 'points')"
        ".map(t => [t.name, t.x, t.y, t.customdata]);")
    return {name: sorted((cd[1], x, y, cd[2]) for x, y, cd in zip(xs, ys, cds, strict=True))
            for name, xs, ys, cds in got}


def _select(drv, element_id: str, values: list[str]) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    sel = Select(drv.find_element(By.ID, element_id))
    if sel.is_multiple:
        sel.deselect_all()
    for v in values:
        sel.select_by_value(v)
    drv.execute_script(f"document.getElementById('{element_id}').dispatchEvent(new Event('change'))")


def test_main_view_in_chromium(served: tuple[str, Path, str]) -> None:
    from infx.analysis.mainview import envelope_mask, load_main_view
    from infx.results.store import Store

    base, root, url = served
    with Store(url) as st:
        view = load_main_view(st)
        rows = {r.point_id: r for r in st.measured()}
    drv = _driver()
    try:
        drv.get(base + "/mainview")
        _wait_ready(drv)
        curves = _chart_points(drv)
        assert sorted(curves) == ["b200 vllm [run-a]", "mi355x vllm [run-a]"]
        # the page's envelope is the library's
        on = envelope_mask(view, "interactivity", "tput_gpu_total")
        lib = {g.label: sorted(view.points.point_id[i] for i in np.nonzero(on)[0] if view.points.group[i] == g.id)
               for g in view.groups}
        assert drv.execute_script("return window.infxMainView.envelopeOf(0);") == lib
        assert all(len(v) >= 3 for v in lib.values())

        # y -> $/Mtok: the numbers drawn equal `infx cost export` for the same points
        _select(drv, "mv-y", [f"usd_mtok_total:{TIER}"])
        _wait_ready(drv)
        drawn = {pid: y for pts in _chart_points(drv).values() for pid, _x, y, _on in pts}
        out = subprocess.run([sys.executable, "-m", "infx.cli", "cost", "export", str(root), "--tier", TIER,
                              "--format", "json"], capture_output=True, text=True, timeout=300, check=True)
        exported = {p["point_id"]: p["usd_per_mtok_total"] for p in json.loads(out.stdout)["points"]}
        assert set(drawn) == set(exported) == set(rows)
        for pid, y in drawn.items():
            assert y == pytest.approx(exported[pid], rel=1e-12), pid

        # filter to one hardware: the state is in the URL, and following it gives the same view
        _select(drv, "mv-hw", ["mi355x"])
        _wait_ready(drv)
        one = _chart_points(drv)
        assert list(one) == ["mi355x vllm [run-a]"]
        link = drv.current_url
        assert "hw=mi355x" in link and "y=usd_mtok_total" in link
        drv.get("about:blank")
        drv.get(link)
        _wait_ready(drv)
        assert _chart_points(drv) == one
        assert drv.execute_script("return document.getElementById('mv-y').value;") == f"usd_mtok_total:{TIER}"

        # CSV export (what the chart's CSV button downloads) equals the store
        text = drv.execute_script("return window.infxMainView.csv(0);")
        table = list(csv.DictReader(io.StringIO(text)))
        assert {r["hardware"] for r in table} == {"mi355x"}
        assert len(table) == sum(1 for r in rows.values() if r.workload.hardware == "mi355x")
        for r in table:
            s = rows[r["point_id"]]
            assert float(r["interactivity"]) == pytest.approx(s.figures.interactivity_median, rel=1e-12)
            assert float(r[f"usd_mtok_total:{TIER}"]) == pytest.approx(exported[r["point_id"]], rel=1e-12)
            assert r["run_id"] == s.run_id and int(r["conc"]) == s.conc
        # and the server's CSV of the same chart and axes says the same
        import urllib.request

        with urllib.request.urlopen(f"{base}/api/mainview.csv?chart=0&x=interactivity&y=usd_mtok_total:{TIER}",
                                    timeout=HANG) as resp:
            server_rows = {r["point_id"]: r for r in csv.DictReader(io.StringIO(resp.read().decode()))}
        for r in table:
            assert float(server_rows[r["point_id"]][f"usd_mtok_total:{TIER}"]) == pytest.approx(
                float(r[f"usd_mtok_total:{TIER}"]), rel=1e-12)
            assert server_rows[r["point_id"]]["on_envelope"] == r["on_envelope"]

        # click two curves -> their verdict table
        _select(drv, "mv-hw", [])
        _select(drv, "mv-y", ["tput_gpu_total"])
        _wait_ready(drv)
        drv.execute_script("window.location.hash = window.location.hash + '&sel=0,1';")
        drv.refresh()
        _wait_ready(drv)
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(drv, HANG).until(lambda d: d.execute_script(
            "return document.querySelector('#mv-verdict table.ladder') !== null;"))
        assert "vs" in drv.execute_script("return document.querySelector('#mv-verdict h4').textContent;")
    finally:
        drv.quit()


def test_report_main_view_embedded_once_and_drawn_when_in_view(tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    from infx.report.build import write_report

    root = tmp_path / "results"
    write_cross_hardware_run(root, "run-a", models=("ma", "mb", "mc", "md"))
    out = tmp_path / "report.html"
    write_report(root, out)
    text = out.read_text()
    assert text.count('id="mv-data"') == 1  # the data once, not once per chart
    assert text.count('"point_id":[') == 1
    drv = _driver()
    try:
        drv.set_window_size(1280, 700)
        drv.get(out.as_uri() + "#y=tput_gpu_output")
        WebDriverWait(drv, HANG).until(lambda d: d.execute_script(
            "return document.getElementById('mainview').dataset.ready === '1' && "
            "document.getElementById('mv-chart-0') !== null;"))
        drv.execute_script("document.getElementById('mv-chart-0').scrollIntoView();")
        WebDriverWait(drv, HANG).until(lambda d: d.execute_script(
            "return document.getElementById('mv-chart-0').dataset.drawn === '1';"))
        # four charts (one per model); the last is far below the fold and not drawn until it comes into view
        assert drv.execute_script("return document.querySelectorAll('[data-chart]').length;") == 4
        assert drv.execute_script("return document.getElementById('mv-chart-3').dataset.drawn || '';") == ""
        drv.execute_script("document.getElementById('mv-chart-3').scrollIntoView();")
        WebDriverWait(drv, HANG).until(lambda d: d.execute_script(
            "return document.getElementById('mv-chart-3').dataset.drawn === '1';"))
        names = drv.execute_script("return document.getElementById('mv-chart-3').data.filter(t => t.meta && "
                                   "t.meta.kind === 'points').map(t => t.name);")
        assert sorted(names) == ["b200 vllm [run-a]", "mi355x vllm [run-a]"]
        # the state came from the link: y is output tok/s per GPU
        assert drv.execute_script("return document.getElementById('mv-y').value;") == "tput_gpu_output"
        # two curves of one chart: their verdict table, precomputed into the offline report
        drv.get(out.as_uri() + "#sel=0,1")
        drv.refresh()  # a new fragment alone does not reload the page
        WebDriverWait(drv, HANG).until(lambda d: d.execute_script(
            "return document.querySelector('#mv-verdict table.ladder') !== null;"))
    finally:
        drv.quit()


def test_calculator_history_and_reliability_in_chromium(served: tuple[str, Path, str]) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    from infx.analysis.mainview import group_frontier, load_main_view
    from infx.results.store import Store

    base, _root, url = served
    with Store(url) as st:
        view = load_main_view(st)
    target = 25.0
    drv = _driver()
    try:
        drv.get(base + f"/mainview#at={target}&sel=0")
        _wait_ready(drv)
        calc = drv.execute_script("return window.infxMainView.calcModel();")
        got = {r["group"]["label"]: r["values"] for r in calc["rows"]}
        assert sorted(got) == sorted(g.label for g in view.groups)
        for g in view.groups:
            for n, key in enumerate(("tput_gpu_total", "usd_mtok_total:hyperscaler", "tput_mw_total")):
                want = group_frontier(view, g.id, "interactivity", key).interpolate(target)
                assert want is not None
                assert got[g.label][n] == pytest.approx(want[0], rel=1e-9), (g.label, key)
        WebDriverWait(drv, HANG).until(lambda d: d.execute_script(
            "const c = document.getElementById('mv-history-chart'); return c && c.data && c.data.length === 1;"))
        hist = drv.execute_script("return document.getElementById('mv-history-chart').data[0].y;")
        want0 = group_frontier(view, 0, "interactivity", "tput_gpu_total").interpolate(target)
        assert want0 is not None and hist == [pytest.approx(want0[0], rel=1e-9)]  # one run: one date
        drv.execute_script("document.getElementById('mv-reliability').scrollIntoView();")  # drawn when in view
        WebDriverWait(drv, HANG).until(lambda d: d.execute_script(
            "return document.querySelectorAll('#mv-rel-table tr').length === 3;"))
        cells = drv.execute_script("return Array.from(document.querySelectorAll('#mv-rel-table tr')).slice(1)"
                                   ".map(r => Array.from(r.cells).map(c => c.textContent));")
        assert sorted((c[1], c[3], c[4], c[5]) for c in cells) == [("b200", "16", "0", "0"), ("mi355x", "16", "0", "0")]
    finally:
        drv.quit()


def test_report_overlays_official_and_unofficial_runs_and_filters_by_model(tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    from infx.report.build import write_report

    root = tmp_path / "results"
    write_cross_hardware_run(root, "base", models=("ma", "mb"), started_at=1_780_000_000.0)
    write_cross_hardware_run(root, "pr", models=("ma", "mb"), official=False, seed=3, started_at=1_780_100_000.0)
    out = tmp_path / "report.html"
    write_report(root, out, run_id="pr", baseline="base")
    drv = _driver()
    try:
        drv.get(out.as_uri() + "#model=mb")
        drv.refresh()
        WebDriverWait(drv, HANG).until(lambda d: d.execute_script(
            "const c = document.querySelector('[data-chart]'); return c && c.dataset.drawn === '1';"))
        assert drv.execute_script("return document.querySelectorAll('[data-chart]').length;") == 1
        envs = drv.execute_script(
            "const c = document.querySelector('[data-chart]'); return c.data.filter(t => t.meta.kind === 'envelope')"
            ".map(t => [t.meta.group, t.line.dash]);")
        groups = drv.execute_script("return Object.keys(window.infxMainView.envelopeOf("
                                    "Number(document.querySelector('[data-chart]').dataset.chart)));")
        assert sorted(groups) == ["b200 vllm [base]", "b200 vllm [pr]", "mi355x vllm [base]", "mi355x vllm [pr]"]
        assert sorted(dash for _g, dash in envs) == ["dash", "dash", "solid", "solid"]  # unofficial run dashed
        title = drv.execute_script("return document.querySelector('[data-chart]').layout.title.text;")
        assert title.startswith("mb ")
    finally:
        drv.quit()


def test_interval_bands_end_at_zero(tmp_path: Path) -> None:
    """Two-trial intervals wider than the figure: the band of a throughput ends at zero, never below; a $/Mtok
    band (1/throughput) is left open above and stays finite below."""
    from infx.report.build import write_report

    root = tmp_path / "results"
    write_cross_hardware_run(root, "run-a", ci_half_width=1.5)
    out = tmp_path / "report.html"
    write_report(root, out)
    drv = _driver()
    try:
        bands = {}
        for y in ("tput_gpu_total", f"usd_mtok_total:{TIER}"):
            drv.get(out.as_uri() + "#y=" + y)
            drv.refresh()
            _wait_ready(drv)
            curves = drv.execute_script(
                "return document.getElementById('mv-chart-0').data.filter(t => t.meta && t.meta.kind === 'envelope')"
                ".map(t => t.y);")
            got = drv.execute_script(
                "return document.getElementById('mv-chart-0').data.filter(t => t.meta && t.meta.kind === 'band')"
                ".map(t => t.y);")
            assert curves and len(got) == 2 * len(curves), (y, len(got), len(curves))
            bands[y] = (curves, got[0::2], got[1::2])  # per curve: its lower band, then its upper one
        curves, lower, upper = bands["tput_gpu_total"]
        for c, lo, hi in zip(curves, lower, upper, strict=True):
            assert lo == [0] * len(c)  # 1 - 1.5 < 0: clamped at zero
            assert hi == pytest.approx([v * 2.5 for v in c], rel=1e-4)
        curves, lower, upper = bands[f"usd_mtok_total:{TIER}"]
        for c, lo, hi in zip(curves, lower, upper, strict=True):
            assert lo == pytest.approx([v / 2.5 for v in c], rel=1e-4) and all(v > 0 for v in lo)
            assert hi == [None] * len(c)  # no upper end: a throughput that may be zero costs without bound
        # the run's own frontier charts (their figures as the report embeds them): error bars end at zero too
        figures = json.loads(re.search(r'<script type="application/json" id="infx-figures">(.*?)</script>',
                                       out.read_text(), re.S).group(1))["figures"]  # type: ignore[union-attr]
        bars = [(t["y"], t["error_y"]["arrayminus"]) for f in figures.values() for t in f.get("data", [])
                if isinstance(t.get("error_y"), dict) and "arrayminus" in t["error_y"]]
        assert bars
        for ys, minus in bars:
            assert all(y - m >= -1e-9 for y, m in zip(ys, minus, strict=True)), (ys, minus)
            assert any(abs(y - m) < 1e-9 for y, m in zip(ys, minus, strict=True))
    finally:
        drv.quit()
