"""run_bench / infx bench end to end against the synthetic fault-injecting server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx.loadgen.config import BenchConfig, parse_warmup
from infx.loadgen.runner import execute, run_bench
from infx.loadgen.testserver import FAULTS, SyntheticServer
from infx.metrics.result import BenchResult
from infx.records import read_records

from .faults import FAULT_CLASSES


def _cfg(url: str, tokenizer_dir: Path, **kw) -> BenchConfig:
    base = dict(
        base_url=url,
        model="m",
        tokenizer=str(tokenizer_dir),
        input_len=16,
        output_len=8,
        ignore_eos=True,
        progress=False,
        # generous: a loaded CI machine must not turn slow answers into timeouts; the fault test
        # that needs deadlines sets tight ones itself
        stall_timeout_s=5.0,
        total_timeout_s=10.0,
    )
    base.update(kw)
    return BenchConfig(**base)


def test_faulty_server_every_request_classified_and_checks_fail(tokenizer_dir, tmp_path):
    faults = list(FAULTS)  # ok + every fault, cycling
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.001, faults=faults) as srv:
        run = execute(_cfg(srv.base_url, tokenizer_dir, concurrency=6, num_prompts=2 * len(faults),
                           out_dir=str(tmp_path), stall_timeout_s=1.0, total_timeout_s=3.0))
    res = run.result
    m = res.metrics
    assert res.complete
    assert m.issued == 2 * len(faults)
    assert m.completed == 2  # the two "ok" requests
    assert m.failed == m.issued - 2
    assert m.error_classes == {cls: 2 for cls in FAULT_CLASSES.values()}
    assert all(r.ok or r.error_class in FAULT_CLASSES.values() for r in run.records)
    checks = {c.name: c for c in res.checks}
    assert checks["accounting"].status == "ok"
    assert checks["failures"].status == "fail" and "timeout_total=2" in checks["failures"].detail
    assert checks["single_finish"].status == "fail"  # double_finish was caught
    # outputs written atomically and readable
    back = BenchResult.model_validate_json((tmp_path / "result.json").read_text())
    assert back.metrics == m and back.complete
    assert len(read_records(tmp_path / "records.jsonl.gz")) == m.issued
    assert m.error_aware is not None and m.error_aware.e2el_p50_ms is None


def test_warmup_is_excluded_and_recorded(tokenizer_dir):
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        run = execute(_cfg(srv.base_url, tokenizer_dir, concurrency=2, num_prompts=10, warmup_requests=3))
        timed = execute(_cfg(srv.base_url, tokenizer_dir, concurrency=2, num_prompts=4, warmup_s=1.0))
    warm = [r for r in run.records if r.warmup]
    main = [r for r in run.records if not r.warmup]
    assert len(warm) == 3 and len(main) == 10
    assert run.result.metrics.issued == 10 and run.result.metrics.warmup_requests == 3
    # the measured window starts after every warmup request ended
    assert min(r.send_ns for r in main) >= max(r.end_ns for r in warm)
    assert run.result.metrics.total_output_tokens == 80
    assert {r.request_id for r in main} == {f"r-{i}" for i in range(10)}
    assert timed.result.metrics.warmup_requests > 3 and timed.result.metrics.issued == 4


def test_checks_all_ok_on_a_clean_run(tokenizer_dir):
    with SyntheticServer(ttft_s=0.002, token_interval_s=0.001) as srv:
        res = run_bench(_cfg(srv.base_url, tokenizer_dir, concurrency=4, num_prompts=20, goodput={"ttft": 1000.0}))
    st = {c.name: c.status for c in res.checks}
    assert st["accounting"] == st["failures"] == st["output_length"] == st["first_token"] == st["single_finish"] == "ok"
    assert res.metrics.success_rate == 1.0
    assert res.metrics.good_requests == 20
    assert res.versions["server"] == "synthetic"
    assert res.extra.client.chunks > 0


def test_output_length_check_fails_when_server_stops_early(tokenizer_dir):
    # a real record from an ignore_eos run, then the same record as if the server stopped early
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        run = execute(_cfg(srv.base_url, tokenizer_dir, concurrency=2, num_prompts=4))
    rec = run.records[0]
    from infx.loadgen.checks import check_output_lengths

    bad = rec.model_copy(update={"completion_tokens": rec.max_tokens - 1})
    assert check_output_lengths([bad]).status == "fail"
    assert check_output_lengths([rec]).status == "ok"


def test_streaming_check_flags_buffered_streams():
    from infx.loadgen.checks import check_streaming
    from infx.records import RequestRecord

    def r(i: int, chunks: list[int]) -> RequestRecord:
        return RequestRecord(request_id=str(i), endpoint="completions", max_tokens=8, send_ns=0, end_ns=10**7,
                             chunk_ns=[10**6 * (j + 1) for j in range(len(chunks))], chunk_tokens=chunks,
                             client_tokens=sum(chunks), completion_tokens=sum(chunks), finish_count=1)

    streamed = [r(i, [1] * 8) for i in range(9)]
    assert check_streaming(streamed + [r(9, [8])]).status == "ok"  # 1 of 10 in one burst
    assert check_streaming(streamed + [r(9, [8]), r(10, [8])]).status == "warn"


def test_duration_and_open_loop_and_workers(tokenizer_dir):
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        dur = execute(_cfg(srv.base_url, tokenizer_dir, concurrency=4, duration_s=0.5))
        open_ = execute(_cfg(srv.base_url, tokenizer_dir, request_rate=100.0, arrival="constant", num_prompts=20))
        sharded = execute(_cfg(srv.base_url, tokenizer_dir, concurrency=4, num_prompts=30, workers=2))
    assert dur.result.metrics.issued > 10 and dur.result.metrics.failed == 0
    assert 0.3 < dur.result.metrics.throughput.duration_s < 5.0  # stops near 0.5 s, not after all prompts
    gaps = sorted(r.intended_send_ns for r in open_.records)
    assert all(abs((b - a) / 1e6 - 10.0) < 0.01 for a, b in zip(gaps, gaps[1:], strict=False))  # constant 10 ms
    assert open_.result.config.request_rate == 100.0
    ids = [r.request_id for r in sharded.records]
    assert sorted(ids) == sorted(f"r-{i}" for i in range(30))
    assert {r.worker for r in sharded.records} == {0, 1}
    assert sharded.result.metrics.completed == 30 and sharded.result.extra.client.workers == 2


def test_config_validation():
    with pytest.raises(ValueError, match="--concurrency"):
        BenchConfig(base_url="http://x", model="m")
    with pytest.raises(ValueError, match="not both"):
        BenchConfig(base_url="http://x", model="m", concurrency=1, num_prompts=1, duration_s=1)
    assert BenchConfig(base_url="http://x", model="m", concurrency=3).effective_num_prompts == 30
    assert BenchConfig(base_url="http://x", model="m", concurrency=3, request_rate=float("inf")).open_loop is False
    assert parse_warmup("16") == (16, 0.0) and parse_warmup("2.5s") == (0, 2.5) and parse_warmup(None) == (0, 0.0)
    with pytest.raises(ValueError):
        parse_warmup("abc")


def _app():
    from infx.cli import _register_all, app

    _register_all()
    return app


def test_cli_bad_input_one_line_diagnostics_exit_2(tokenizer_dir):
    r = CliRunner().invoke(_app(), ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--goodput", "ttft:x",
                                    "--warmup", "zz"])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert any("bad goodput SLO" in ln and ln.endswith("(at --goodput)") for ln in lines)
    assert any("bad --warmup" in ln for ln in lines)
    assert "Traceback" not in r.output
    r = CliRunner().invoke(_app(), ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m"])
    assert r.exit_code == 2 and "--concurrency" in r.output


def test_cli_run_writes_outputs_and_accepts_goodput_list(tokenizer_dir, tmp_path):
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        args = ["bench", "--base-url", srv.base_url, "--model", "m", "--tokenizer", str(tokenizer_dir), "-c", "2",
                "-n", "6", "--input-len", "16", "--output-len", "4", "--ignore-eos", "--no-progress",
                "--out", str(tmp_path), "--goodput", "ttft:5000", "tpot:1000", "--gpus", "8"]
        r = CliRunner().invoke(_app(), args)
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "result.json").read_text())
    assert res["config"]["goodput"] == {"ttft": 5000.0, "tpot": 1000.0}
    assert res["metrics"]["good_requests"] == 6
    assert res["metrics"]["throughput"]["gpus_per_server"] == 8
    assert "latency (ms)" in r.output and "integrity checks" in r.output


def test_ctrl_c_writes_incomplete_result(tokenizer_dir, tmp_path):
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.005) as srv:
        cmd = [sys.executable, "-m", "infx", "bench", "--base-url", srv.base_url, "--model", "m",
               "--tokenizer", str(tokenizer_dir), "-c", "2", "-n", "1000", "--input-len", "8", "--output-len", "50",
               "--no-progress", "--no-summary", "--out", str(tmp_path)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while len(srv.requests) < 3 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)  # wait until the bench is really sending
            os.kill(proc.pid, signal.SIGINT)
            out, _ = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, out.decode()
    res = BenchResult.model_validate_json((tmp_path / "result.json").read_text())
    assert res.complete is False
    assert 0 < res.metrics.issued < 1000
    assert res.metrics.error_classes.get("cancelled", 0) <= 2
    assert len(read_records(tmp_path / "records.jsonl.gz")) == res.metrics.issued


def test_execute_drives_a_custom_request_source(tokenizer_dir):
    from infx.loadgen.source import ScheduledSource
    from infx.records import RequestSpec

    specs = [RequestSpec(request_id=f"s-{i}", endpoint="chat", messages=[{"role": "user", "content": "hi"}],
                         max_tokens=3, session_id="a", turn=i) for i in range(5)]
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        run = execute(_cfg(srv.base_url, tokenizer_dir, concurrency=2), source=ScheduledSource(specs))
    assert run.result.metrics.issued == 5 and run.result.metrics.completed == 5
    assert sorted(r.turn for r in run.records) == [0, 1, 2, 3, 4]
    assert all(r.endpoint == "chat" and r.session_id == "a" for r in run.records)


def test_trials_bad_input_and_warmup_only_before_the_first(tokenizer_dir):
    r = CliRunner().invoke(_app(), ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "-c", "1",
                                    "--trials", "0"])
    assert r.exit_code == 2 and "(at --trials)" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(_app(), ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "-c", "1",
                                    "--trials", "3", "--max-trials", "2"])
    assert r.exit_code == 2 and "below --trials" in r.output
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        cfg = BenchConfig(base_url=srv.base_url, model="m", tokenizer=str(tokenizer_dir), concurrency=2, num_prompts=4,
                          input_len=16, output_len=8, ignore_eos=True, warmup_requests=2, trials=3, progress=False)
        run = execute(cfg)
    res = run.result
    assert [t.trial for t in res.trials] == [0, 1, 2] and [t.warmup for t in res.trials] == [True, False, False]
    warm = [r for r in run.records if r.warmup]
    assert len(warm) == 2 and {r.trial for r in warm} == {0}  # warmup before trial 1 only
    assert sorted({r.trial for r in run.records if not r.warmup}) == [0, 1, 2]
    assert res.metrics.issued == 12 and res.metrics.throughput.duration_s == pytest.approx(
        sum(t.metrics.throughput.duration_s for t in res.trials))
    e = res.stats["output_tok_per_s"]
    assert e.method == "trials" and e.n == 3 and e.lo <= e.mean <= e.hi and len(e.values) == 3
    assert res.stats["ttft_p99"].certified is False  # 4 samples per trial: far below MLPerf's 662
    # one trial: a within-run bootstrap, labelled so
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        one = execute(cfg.model_copy(update={"base_url": srv.base_url, "trials": 1})).result
    assert one.trials == [] and one.stats["output_tok_per_s"].method == "within-run"
