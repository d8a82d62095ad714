"""TTFO (time to the first answer token, not reasoning) and the reasoning token count, exact against the test
server streaming a known number of reasoning deltas before the content, through the real load generator."""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.loadgen.config import BenchConfig
from infx.loadgen.runner import execute
from infx.loadgen.testserver import SyntheticServer


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from infx.engines.tiny_model import model_files

    d = tmp_path_factory.mktemp("tok")
    (d / "tokenizer.json").write_bytes(model_files()["tokenizer.json"])
    return d


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_ttfo_and_reasoning_tokens_exact(tokenizer: Path, field: str) -> None:
    reasoning, osl, n = 5, 12, 6
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.02, paced=True, reasoning_tokens=reasoning,
                         reasoning_field=field) as srv:
        cfg = BenchConfig(base_url=srv.base_url, model="m", tokenizer=str(tokenizer), endpoint="chat",
                          concurrency=2, num_prompts=n, input_len=16, output_len=osl, ignore_eos=True,
                          warmup_requests=0, progress=False)
        run = execute(cfg)
    m = run.result.metrics
    assert m.completed == n and m.reasoning_tokens == reasoning * n
    recs = [r for r in run.records if not r.warmup]
    for r in recs:
        assert r.reasoning_tokens == reasoning and r.first_content_ns is not None and r.first_token_ns is not None
        # the answer's first token is the 6th event: five paced intervals after the first (reasoning) token
        assert r.chunk_ns.index(r.first_content_ns) == reasoning
    ttfts = sorted((r.first_token_ns - r.send_ns) / 1e6 for r in recs)  # type: ignore[operator]
    ttfos = sorted((r.first_content_ns - r.send_ns) / 1e6 for r in recs)  # type: ignore[operator]
    assert m.ttfo_ms is not None and m.ttfo_ms.count == n
    assert m.ttfo_ms.median == pytest.approx((ttfos[2] + ttfos[3]) / 2)
    assert m.ttft_ms.median == pytest.approx((ttfts[2] + ttfts[3]) / 2)
    # TTFT counts the first token of any kind; TTFO waits for the answer: >= 5 token intervals later
    assert m.ttfo_ms.median - m.ttft_ms.median >= reasoning * 0.02 * 1000 * 0.9


def test_no_reasoning_no_ttfo_keys(tokenizer: Path) -> None:
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.001) as srv:
        cfg = BenchConfig(base_url=srv.base_url, model="m", tokenizer=str(tokenizer), endpoint="chat",
                          concurrency=1, num_prompts=2, input_len=16, output_len=4, warmup_requests=0,
                          progress=False)
        run = execute(cfg)
    m = run.result.metrics
    assert m.ttfo_ms is None and m.reasoning_tokens is None
    dumped = run.result.model_dump_json()
    assert "ttfo_ms" not in dumped and "reasoning_tokens" not in dumped
    assert all("first_content_ns" not in r.model_dump_json() for r in run.records)
