"""BenchResult assembly: loadgen metrics + agentic extras, error-rate gate, files written."""

from __future__ import annotations

import asyncio
import gzip
import json

from infx.agentic.measure import (
    build_result,
    prefix_cache,
    read_sessions,
    run_agentic_point,
)
from infx.agentic.replay import ReplayConfig, replay_async
from infx.agentic.synth import SynthConfig, synth_traces
from infx.agentic.trace import write_traces
from infx.engine_metrics import parse_metrics
from infx.loadgen.http import Target
from infx.metrics.result import BenchResult
from infx.metrics.run_config import AgenticRunConfig

from .fakeserver import FakeServer

TRACES = SynthConfig(sessions=4, seed=2, think_time=0.0, out_min=2, out_max=8, fanout_prob=0.7)


def _outcome(blocks, cfg, fake_kw=None):
    async def go():
        srv = await FakeServer(blocks.count, **(fake_kw or {})).start()
        try:
            return await replay_async(synth_traces(TRACES), blocks, Target(base_url=srv.base_url, model="m"), cfg)
        finally:
            await srv.stop()

    return asyncio.run(go())


def _cfg(**kw):
    return ReplayConfig(**{"concurrency": 2, "max_sessions": 4, "duration_s": 30, "trajectory_start_min": 0,
                           "trajectory_start_max": 0, "warmup_requests_per_lane": 1, "cache_salt": "m", **kw})


def test_result_has_metrics_sessions_and_high_water(blocks):
    cfg = _cfg()
    out = _outcome(blocks, cfg)
    res = build_result(out, cfg, trace_file="x.jsonl", gpus_per_server=1)
    ag = res.extra.agentic
    assert ag is not None
    assert res.metrics.issued == len(out.records) - 2  # one warmup per lane
    assert res.metrics.failed == 0 and res.metrics.total_output_tokens > 0
    assert ag.in_flight_high_water == out.in_flight_high_water > 2
    assert ag.sessions_started == ag.sessions_completed == 4
    assert ag.agentic_interactivity_median is not None and ag.agentic_interactivity_median > 0
    assert ag.agentic_interactivity_p90 is not None
    assert ag.agentic_interactivity_p90 <= ag.agentic_interactivity_median
    assert {c.name: c.status for c in res.checks}["error_rate"] == "ok"
    assert {c.name: c.status for c in res.checks}["input_length"] == "ok"
    assert isinstance(res.config, AgenticRunConfig) and res.config.scenario == "agentic-coding"
    BenchResult.model_validate_json(res.model_dump_json())  # the result.json contract


def test_error_rate_gate(blocks):
    cfg = _cfg(error_rate_threshold=0.10, abort_on_error_rate=False)
    out = _outcome(blocks, cfg, {"fail_every": 3})
    res = build_result(out, cfg)
    gate = next(c for c in res.checks if c.name == "error_rate")
    assert gate.status == "fail" and "threshold 10%" in gate.detail
    assert res.extra.agentic is not None and res.extra.agentic.error_rate > 0.2
    lenient = build_result(out, _cfg(error_rate_threshold=0.9, abort_on_error_rate=False))
    assert next(c for c in lenient.checks if c.name == "error_rate").status == "ok"


def test_prefix_cache_counter_parsing():
    text = """# HELP vllm:prefix_cache_queries_total x
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 640.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 10.0
"""
    assert prefix_cache(parse_metrics(text, 0.0)) == (650.0, 1000.0)
    assert prefix_cache(parse_metrics("vllm:num_requests_running 1\n", 0.0)) is None
    sglang = "sglang:cached_tokens_total 30.0\nsglang:prompt_tokens_total 120.0\n"  # queries are its prompt tokens
    assert prefix_cache(parse_metrics(sglang, 0.0)) == (30.0, 120.0)


def test_run_agentic_point_writes_files(blocks, tokenizer_dir, tmp_path):
    from infx.matrix.point import Point

    trace_file = tmp_path / "tr.jsonl"
    write_traces(trace_file, synth_traces(TRACES))
    point = Point.from_row({
        "image": "local", "model": "tinyllama", "model-prefix": "tinyllama", "precision": "bf16", "framework": "vllm",
        "runner": "cluster:local", "tp": 1, "conc": 2, "kv-offloading": "none", "total-cpu-dram-gb": 0, "duration": 20,
        "exp-name": "tinyllama_tp1_conc2_kvnone", "scenario-type": "agentic-coding", "point-id": "p1",
    })

    async def serve_and_run():
        srv = await FakeServer(blocks.count).start()
        try:
            return await asyncio.to_thread(
                run_agentic_point, point, srv.base_url, "m", tokenizer_dir, trace_file, tmp_path / "out",
                max_sessions=4, trajectory_start_min=0, trajectory_start_max=0, warmup_requests_per_lane=0,
            )
        finally:
            await srv.stop()

    res = asyncio.run(serve_and_run())
    out = tmp_path / "out"
    assert BenchResult.model_validate_json((out / "result.json").read_text()) == res
    assert res.point["point-id"] == "p1" and res.metrics.throughput.gpus_per_server == 1
    assert isinstance(res.config, AgenticRunConfig)
    assert res.config.replay.concurrency == 2 and res.config.replay.duration_s == 20
    with gzip.open(out / "records.jsonl.gz", "rt") as fh:
        assert sum(1 for _ in fh) == res.metrics.issued
    assert len(read_sessions(out / "sessions.jsonl.gz")) == 4
    assert res.extra.agentic is not None and res.extra.agentic.server_prefix_cache is None  # the fake has no /metrics
    assert "server_prefix_cache" not in json.loads((out / "result.json").read_text())["extra"]["agentic"]


def test_live_error_rate_abort_stops_the_run_early(blocks):
    cfg = ReplayConfig(concurrency=2, duration_s=60, trajectory_start_min=0, trajectory_start_max=0,
                       warmup_requests_per_lane=0, abort_min_requests=10, idle_gap_cap_s=0)
    out = _outcome(blocks, cfg, {"fail_every": 2})
    assert out.stopped_by == "error_rate" and "over 10%" in out.abort_reason
    assert len(out.records) < 60  # stopped long before the 60 s duration would have
    res = build_result(out, cfg)
    assert res.complete is False
    assert next(c for c in res.checks if c.name == "error_rate").status == "fail"


def test_accounting_counts_what_the_replay_issued(blocks):
    """The replay counts the measured requests it sends; a record lost on the way fails accounting."""
    cfg = _cfg()
    out = _outcome(blocks, cfg)
    assert out.issued_measured == sum(1 for r in out.records if not r.warmup)
    assert {c.name: c.status for c in build_result(out, cfg).checks}["accounting"] == "ok"
    measured = [r for r in out.records if not r.warmup]
    lost = out.model_copy(update={"records": [r for r in out.records if r.warmup] + measured[1:]})
    check = {c.name: c for c in build_result(lost, cfg).checks}["accounting"]
    assert check.status == "fail" and "1 issued requests without a record" in check.detail
