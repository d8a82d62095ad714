"""Reviewer-reproduced defects: no issued request may vanish, Ctrl-C during a sharded warmup
must not hang, sharded closed loops must not start before the window, bad --base-url is bad
input, non-integer usage is malformed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from infx.loadgen.checks import check_accounting, run_checks
from infx.loadgen.http import Target, make_session, stream_request
from infx.loadgen.runner import execute
from infx.loadgen.source import ScheduledSource
from infx.loadgen.sse import parse_sse
from infx.loadgen.testserver import SyntheticServer
from infx.metrics.compute import compute_metrics
from infx.metrics.result import BenchResult
from infx.records import RequestRecord, RequestSpec

from .test_runner import _app, _cfg


@pytest.fixture(params=["msgspec", "json"])
def decoder(request, monkeypatch):
    import infx.loadgen.sse as sse

    if request.param == "json":
        monkeypatch.setattr(sse, "_fast_decoder", None)
    elif sse._fast_decoder is None:
        pytest.skip("msgspec not installed")
    return request.param


def _blank() -> RequestRecord:
    return RequestRecord(request_id="p", endpoint="completions", max_tokens=4, send_ns=0, end_ns=0)


# --------------------------------------------------------------------------- 1: lost requests
@pytest.mark.parametrize(
    "event",
    [
        b'{"choices": {"a": 1}}',  # choices[0] on a dict: KeyError
        b'{"choices": [{"text": "a", "delta": 7}]}',  # delta.get on an int
        b'{"choices": [{"text": "a", "token_ids": "xyz"}]}',  # not a list of ids
    ],
)
def test_unexpected_event_shapes_are_malformed_not_raised(decoder, event):
    rec = _blank()
    err = parse_sse([(1000, b"data: " + event + b"\n\ndata: [DONE]\n\n")], rec)
    assert err is not None and err[0] == "malformed_sse", err


def test_parse_sse_never_raises(monkeypatch):
    import infx.loadgen.sse as sse

    def boom(reads, st):
        raise LookupError("parser bug")

    monkeypatch.setattr(sse, "_parse", boom)
    err = parse_sse([(1, b"data: {}\n\n")], _blank())
    assert err is not None and err[0] == "malformed_sse" and "LookupError" in err[1]


def test_stream_with_bad_shape_comes_back_as_a_record(decoder):
    """End to end through a real server whose stream carries a KeyError-raising event."""
    from aiohttp import web

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b'data: {"choices": {"a": 1}}\n\ndata: [DONE]\n\n')
        await resp.write_eof()
        return resp

    async def main() -> RequestRecord:
        app = web.Application()
        app.router.add_post("/v1/completions", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            async with make_session() as session:
                spec = RequestSpec(request_id="k", prompt="x", max_tokens=2)
                return await stream_request(session, spec, Target(base_url=f"http://127.0.0.1:{port}", model="m"))
        finally:
            await runner.cleanup()

    rec = asyncio.run(main())
    assert rec.error_class == "malformed_sse"


def test_driver_turns_a_client_exception_into_a_client_error_record(monkeypatch):
    """A bug inside the client (simulated: stream_request is replaced by one that raises for
    one request; no real request can make the real one raise) still yields one record."""
    import infx.loadgen.drive as drive_mod
    from infx.loadgen.drive import Counters, drive

    async def fake_stream(session, spec, target, *, worker=None):
        await asyncio.sleep(0)
        if spec.request_id == "r-2":
            raise KeyError("boom")
        rec = RequestRecord.for_spec(spec, 1, 2, worker)
        rec.finish_count = 1
        return rec

    monkeypatch.setattr(drive_mod, "stream_request", fake_stream)
    specs = [RequestSpec(request_id=f"r-{i}", prompt="x", max_tokens=1) for i in range(5)]
    counters = Counters()
    recs = asyncio.run(drive(ScheduledSource(specs), None, Target(base_url="http://x", model="m"),  # type: ignore[arg-type]
                             max_concurrency=2, counters=counters))
    assert len(recs) == 5 and counters.issued == counters.issued_measured == 5
    bad = [r for r in recs if not r.ok]
    assert [(r.request_id, r.error_class) for r in bad] == [("r-2", "client_error")]
    assert "KeyError" in bad[0].error_message


def test_accounting_detects_a_lost_record():
    recs = []
    for i in range(4):
        r = RequestRecord(request_id=f"r-{i}", endpoint="completions", max_tokens=1, send_ns=10 * i, end_ns=10 * i + 5,
                          chunk_ns=[10 * i + 3], chunk_tokens=[1], client_tokens=1, completion_tokens=1, finish_count=1)
        recs.append(r)
    metrics = compute_metrics(recs, window_ns=(0, 100))
    assert check_accounting(recs, metrics, issued=4).status == "ok"
    lost = check_accounting(recs, metrics, issued=5)
    assert lost.status == "fail" and "1 issued requests without a record" in lost.detail
    assert {c.name: c.status for c in run_checks(recs, metrics, issued=5)}["accounting"] == "fail"


def test_bench_reports_the_drivers_issued_count(tokenizer_dir):
    specs = [RequestSpec(request_id=f"s-{i}", prompt="hi", max_tokens=2, warmup=i < 2) for i in range(6)]
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        run = execute(_cfg(srv.base_url, tokenizer_dir, concurrency=2), source=ScheduledSource(specs))
    acc = {c.name: c for c in run.result.checks}["accounting"]
    assert acc.status == "ok" and "issued 4" in acc.detail  # warmup excluded


# --------------------------------------------------------------------------- 2: Ctrl-C in warmup
def test_ctrl_c_during_sharded_warmup_exits_130(tokenizer_dir, tmp_path):
    # one warmup request: worker 0 sends it (and it hangs: 30 s TTFT), worker 1 has none and
    # waits for worker 0 at the start barrier
    with SyntheticServer(ttft_s=30.0, token_interval_s=0.001) as srv:
        cmd = [sys.executable, "-m", "infx", "bench", "--base-url", srv.base_url, "--model", "m",
               "--tokenizer", str(tokenizer_dir), "-c", "2", "--workers", "2", "-n", "4", "--warmup", "1",
               "--input-len", "8", "--output-len", "4",
               "--no-progress", "--no-summary", "--out", str(tmp_path)]
        # own session: a hung run's worker processes are killed with it (no orphans)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while not srv.requests and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            time.sleep(0.3)  # let worker 1 reach the barrier
            os.kill(proc.pid, signal.SIGINT)
            out, _ = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    assert proc.returncode == 130, out.decode()
    res = BenchResult.model_validate_json((tmp_path / "result.json").read_text())
    assert res.complete is False and res.metrics.issued == 0


# --------------------------------------------------------------------------- 3: common start
def test_sharded_closed_loop_sends_nothing_before_the_window(tokenizer_dir):
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        run = execute(_cfg(srv.base_url, tokenizer_dir, concurrency=4, num_prompts=8, workers=2))
    start = run.result.extra.clock.window_ns[0]
    measured = [r for r in run.records if not r.warmup]
    assert len(measured) == 8
    assert min(r.send_ns for r in measured) >= start
    assert min(r.intended_send_ns for r in measured) >= start  # queue delay not inflated either
    assert {c.name: c.status for c in run.result.checks}["accounting"] == "ok"


# --------------------------------------------------------------------------- 4: bad --base-url
@pytest.mark.parametrize("url", ["notaurl", "ftp://x:1", "http://127.0.0.1:notaport", "http://[::1", "http://:80"])
def test_bad_base_url_is_a_one_line_diagnostic_exit_2(url):
    r = CliRunner().invoke(_app(), ["bench", "--base-url", url, "--model", "m", "-c", "1", "-n", "1"])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "base-url" in lines[0] and "Traceback" not in r.output


@pytest.mark.parametrize("url", ["notaurl", "ftp://x:1", "http://127.0.0.1:notaport", "http://[::1"])
def test_invalid_url_request_is_client_error(url):
    async def main() -> RequestRecord:
        async with make_session() as session:
            spec = RequestSpec(request_id="u", prompt="x", max_tokens=2)
            return await stream_request(session, spec,
                                        Target(base_url=url, model="m", stall_timeout_s=2, total_timeout_s=3))

    assert asyncio.run(main()).error_class == "client_error"


# --------------------------------------------------------------------------- 5: usage types
@pytest.mark.parametrize("usage", ['{"completion_tokens": 1.5}', '{"completion_tokens": "3"}', '{"prompt_tokens": 2.5}',
                                   '{"completion_tokens": true}'])
def test_non_integer_usage_is_malformed(decoder, usage):
    ev = b'data: {"choices":[{"text":"a","finish_reason":"stop"}],"usage":' + usage.encode() + b"}\n\ndata: [DONE]\n\n"
    rec = _blank()
    err = parse_sse([(1000, ev)], rec)
    assert err is not None and err[0] == "malformed_sse", err
    assert all(type(k) is int for k in rec.chunk_tokens)
    json.dumps(rec.model_dump(mode="json"))  # the record stays writable


def test_a_crashed_workers_lost_requests_fail_accounting(tokenizer_dir, monkeypatch):
    """Worker 1 raises after its measured phase (simulated client crash: the fork inherits the
    patched ``drive``): its records are gone, and the accounting check must say so."""
    from infx.loadgen import runner

    real_drive = runner.drive

    async def crashing_drive(*args, **kw):
        recs = await real_drive(*args, **kw)
        if kw.get("worker") == 1 and kw.get("counters") is not None:
            raise RuntimeError("worker crashed")
        return recs

    monkeypatch.setattr(runner, "drive", crashing_drive)
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        run = execute(_cfg(srv.base_url, tokenizer_dir, concurrency=4, num_prompts=8, workers=2))
    assert {r.worker for r in run.records} == {0}
    acc = {c.name: c for c in run.result.checks}["accounting"]
    assert acc.status == "fail" and "4 issued requests without a record" in acc.detail, acc.detail
