from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from infx.report.browser import find_chromium, headless


def raw_get(host: str, port: int, target: str) -> tuple[int, bytes]:
    """Send the request line exactly as given (no client-side path normalisation)."""
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode("latin-1"))
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[-1]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


TRAVERSALS = [
    "/files/../../etc/passwd",
    "/files/../../../../../../etc/passwd",
    "/files/%2e%2e/%2e%2e/etc/passwd",
    "/files/..%2f..%2f..%2fetc%2fpasswd",
    "/files/pr-1234/points/../../../../etc/passwd",
    "/files/pr-1234/points/..%2f..%2f..%2f..%2fetc/passwd",
    "/files//etc/passwd",
    "/files/%2fetc%2fpasswd",
    "/files/pr-1234/..%5c..%5cetc%5cpasswd",
    "/files/infx.db",
    "/../../etc/passwd",
    "/runs/..%2f..%2fetc%2fpasswd",
    "/static/../../../etc/passwd",
]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_no_path_outside_results_can_be_read(dashboard, target: str) -> None:
    status, body = raw_get(dashboard.host, dashboard.port, target)
    assert status in (400, 403, 404), (target, status)
    assert b"root:" not in body


def test_symlink_out_of_results_is_refused(dashboard) -> None:
    pid = "dsv41flash_tp4_conc16_kvnone_spec-mtp"
    log = dashboard.root / "pr-1234" / "points" / pid / "engine.log"
    log.unlink()
    log.symlink_to("/etc/passwd")
    status, body = raw_get(dashboard.host, dashboard.port, f"/files/pr-1234/points/{pid}/engine.log")
    assert status == 403 and b"root:" not in body


def test_point_files_and_manifest_are_served(dashboard) -> None:
    pid = "dsv41flash_tp2_conc8_kvnone_spec-mtp"
    status, body = get(f"{dashboard.base_url}/files/pr-1234/points/{pid}/engine.log")
    assert status == 200 and "GPU KV cache size" in body
    status, body = get(f"{dashboard.base_url}/files/pr-1234/manifest.json")
    assert status == 200 and '"run_id": "pr-1234"' in body


def test_index_lists_runs_and_pages_render(dashboard) -> None:
    status, body = get(dashboard.base_url + "/")
    assert status == 200 and 'href="/runs/pr-1234"' in body and 'href="/runs/baseline"' in body
    assert "/runs/pr-1234?baseline=baseline" in body  # the manifest's baseline gets an overlay link
    status, body = get(dashboard.base_url + "/runs/pr-1234?baseline=baseline")
    assert status == 200 and 'id="chart-main"' in body and 'id="baseline-comparison"' in body
    assert '<script src="/static/plotly.min.js">' in body
    # cost views, priced when the page is read with the shipped table (the store holds no price)
    assert 'id="cost-points"' in body and "cost table inferencex-2026-07" in body and 'id="cost-0"' in body
    log = "/files/pr-1234/points/dsv41flash_tp2_conc256_kvnone_spec-mtp/engine.log"
    assert f'href="{log}"' in body  # each point links its files
    status, text = get(dashboard.base_url + log)
    assert status == 200 and "out of memory" in text
    status, js = get(dashboard.base_url + "/static/plotly.min.js")
    assert status == 200 and len(js) > 1_000_000
    status, _ = get(dashboard.base_url + "/runs/nope")
    assert status == 404
    status, body = get(dashboard.base_url + "/overlay?run=pr-1234&baseline=baseline")  # follows the redirect
    assert status == 200 and 'id="baseline-comparison"' in body
    status, _ = get(dashboard.base_url + "/overlay?run=..%2F..%2Fetc&baseline=baseline")
    assert status == 400
    status, body = get(dashboard.base_url + "/api/runs")
    assert status == 200 and '"pr-1234"' in body
    status, body = get(dashboard.base_url + "/runs/pr-1234?tier=neocloud")
    assert status == 200 and "Tier <b>neocloud</b>" in body
    status, body = get(dashboard.base_url + "/runs/pr-1234?tier=spot")
    assert status == 404 and "unknown tier 'spot'" in body


def test_dashboard_is_read_only(dashboard) -> None:
    req = urllib.request.Request(dashboard.base_url + "/runs/pr-1234", data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(req, timeout=30)
    assert exc.value.code == 405


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_dashboard_in_headless_chromium(dashboard, tmp_path: Path) -> None:
    if find_chromium() is None:
        pytest.skip("chromium not installed (.ci/chromium.sh)")
    url = f"{dashboard.base_url}/runs/pr-1234?baseline=baseline"
    dom = headless(url, dump_dom=True, window=(1400, 1000))
    # plotly drew the chart (its SVG exists only after the JS ran) and the table is there
    assert 'id="chart-main"' in dom and "main-svg" in dom
    assert 'id="points-table"' in dom and "dsv41flash_tp2_conc8_kvnone_spec-mtp" in dom
    assert "UNOFFICIAL RUN" in dom
    assert 'id="cost-0"' in dom and dom.count("main-svg") >= 2 and 'id="cost-points"' in dom  # the cost frontier
    # kept for CI artifacts / the README (.infx/ is git-ignored)
    shot = Path(os.environ.get("INFX_ARTIFACTS", ".infx/artifacts")) / "dashboard.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    headless(url, screenshot=shot, window=(1400, 1800))
    assert shot.stat().st_size > 20_000
    index = headless(dashboard.base_url + "/", dump_dom=True)
    assert 'id="runs-table"' in index


def test_serve_command_binds_loopback_on_a_free_port(seed_results) -> None:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "infx", "serve", str(seed_results.root), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("infx dashboard: http://127.0.0.1:"), line
        url = line.split()[2]
        status, body = get(url)
        assert status == 200 and "pr-1234" in body
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_foreign_host_header_is_refused(dashboard) -> None:
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not read the dashboard."""
    with socket.create_connection((dashboard.host, dashboard.port), timeout=30) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert int(data.split(b" ", 2)[1]) == 421 and b"pr-1234" not in data
    status, _ = raw_get(dashboard.host, dashboard.port, "/")
    assert status == 200


def test_latest_curves_and_the_frontiers_api(dashboard) -> None:
    """``/latest`` renders the latest curves and ``/api/frontiers`` lists them: each curve from one run's snapshot
    (the seed PR run re-measured TP=4 after the baseline, so the baseline's TP=4 curve is not in it)."""
    status, body = get(dashboard.base_url + "/api/frontiers")
    assert status == 200
    data = json.loads(body)
    assert data["view"] == "latest" and data["runs"] == ["pr-1234"]
    assert {c["arm"] for c in data["curves"]} == {"TP=2 spec=mtp", "TP=4 spec=mtp"}
    for c in data["curves"]:
        assert c["runs"] == ["pr-1234"] and {p["run_id"] for p in c["points"]} == {"pr-1234"}
        assert any(p["on_frontier"] for p in c["points"])
    status, body = get(dashboard.base_url + "/api/frontiers?as_of=baseline")
    assert status == 200 and json.loads(body)["runs"] == ["baseline"]
    status, body = get(dashboard.base_url + "/latest?as_of=baseline")
    assert status == 200 and "newest complete snapshot" in body and "baseline" in body
    status, _ = get(dashboard.base_url + "/api/frontiers?as_of=no-such-run")
    assert status == 404
