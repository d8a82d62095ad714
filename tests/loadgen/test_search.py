"""Capacity at an SLO tier against a test server of known capacity (fixed decode slots: requests
past them wait for a slot, so their TTFT grows) on the real client (issue 21)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from infx.loadgen.config import BenchConfig
from infx.loadgen.search import Probe, bench_probe, search_max_concurrency
from infx.loadgen.testserver import SyntheticServer
from infx.metrics.slo import check_tier, evaluate_tier, parse_tier_text

SLOTS = 6
TIER = {"ttft_p95_ms": 100.0}  # no wait: a few ms; waiting for a slot: most of a 16 x 25 ms request


def _app():  # type: ignore[no-untyped-def]
    from infx.cli import _register_all, app

    _register_all()
    return app


def test_search_logic_doubling_then_bisection() -> None:
    seen: list[int] = []

    def probe(c: int) -> Probe:
        seen.append(c)
        return Probe(conc=c, met=c <= 37)

    res = search_max_concurrency(probe, tier="t", slo=TIER, start=1, tolerance=0.0)
    assert res.max_conc == 37 and res.first_miss == 38 and res.stop_reason == "converged"
    assert seen[:7] == [1, 2, 4, 8, 16, 32, 64] and len(seen) < res.scan_probes
    assert search_max_concurrency(lambda c: Probe(conc=c, met=False), tier="t", slo=TIER).max_conc is None
    lim = search_max_concurrency(lambda c: Probe(conc=c, met=True), tier="t", slo=TIER, limit=8)
    assert lim.max_conc == 8 and lim.stop_reason == "limit-reached"


def test_tier_validation() -> None:
    assert parse_tier_text("ttft_p95_ms:500,tpot_p95_ms:30") == {"ttft_p95_ms": 500.0, "tpot_p95_ms": 30.0}
    for bad, msg in (("ttfb_p95_ms:5", "unknown SLO metric 'ttfb'"), ("ttft_p97_ms:5", "unknown SLO statistic"),
                     ("ttft_p95_ms:-1", "> 0"), ("ttft_p95_ms", "expected KEY:MS")):
        with pytest.raises(ValueError, match=msg):
            parse_tier_text(bad)
    with pytest.raises(ValueError, match="at least one"):
        check_tier({})


def test_failed_requests_are_misses(tokenizer_dir) -> None:
    from infx.loadgen.runner import execute

    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005, faults=("ok", "http_500")) as srv:
        run = execute(BenchConfig(base_url=srv.base_url, model="m", tokenizer=str(tokenizer_dir), concurrency=2,
                                  num_prompts=10, input_len=16, output_len=4, ignore_eos=True, progress=False))
    v = evaluate_tier(run.records, {"ttft_p50_ms": 10_000})
    assert v.issued == 10 and v.good == 5 and v.goodput_fraction == 0.5
    assert not v.met and "failed request" in v.text  # the median lands on a failure: unbounded


def test_capacity_found_within_one_bisection_step_with_fewer_probes(tokenizer_dir, tmp_path) -> None:
    with SyntheticServer(ttft_s=0.002, token_interval_s=0.025, slots=SLOTS, paced=True) as srv:
        base = BenchConfig(base_url=srv.base_url, model="m", tokenizer=str(tokenizer_dir), concurrency=1,
                           input_len=16, output_len=16, ignore_eos=True, progress=False)
        res = search_max_concurrency(bench_probe(base, TIER, prompts_per_conc=3, min_prompts=12), tier="t", slo=TIER,
                                     start=1, limit=64)
        assert res.max_conc is not None and abs(res.max_conc - SLOTS) <= 1, res.model_dump_json(indent=1)
        assert len(res.probes) < 8 + SLOTS  # the full ladder 1..2*SLOTS would be 12 probes; doubling+bisection fewer
        assert len(res.probes) < res.scan_probes + 2
        # the CLI prints each probe and the probe count
        r = CliRunner().invoke(_app(), ["bench", "--base-url", srv.base_url, "--model", "m", "--tokenizer",
                                        str(tokenizer_dir), "--input-len", "16", "--output-len", "16", "--ignore-eos",
                                        "--search", "max-concurrency", "--slo", "ttft_p95_ms:100", "--search-max", "64",
                                        "--out", str(tmp_path), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "max concurrency at tier" in r.output and "probe(s)" in r.output and "probe conc=8: misses" in r.output
    assert (tmp_path / "search.json").is_file()


def test_search_bad_input_is_one_line_exit_2(tokenizer_dir) -> None:
    r = CliRunner().invoke(_app(), ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--search",
                                    "max-concurrency", "--slo", "ttfb_p95_ms:5"])
    assert r.exit_code == 2 and "unknown SLO metric 'ttfb'" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(_app(), ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--search",
                                    "max-concurrency"])
    assert r.exit_code == 2 and "needs --slo" in r.output


def test_saturation_detector_on_a_growing_queue(tokenizer_dir) -> None:
    from infx.loadgen.runner import execute
    from infx.metrics.slo import saturation

    with SyntheticServer(ttft_s=0.001, token_interval_s=0.01, slots=2, paced=True) as srv:
        base = dict(base_url=srv.base_url, model="m", tokenizer=str(tokenizer_dir), input_len=16, output_len=8,
                    ignore_eos=True, progress=False)
        # open loop at ~3x the capacity (2 slots x 1/80 ms): the queue and TTFT keep growing
        over = execute(BenchConfig(**base, request_rate=75.0, num_prompts=40, arrival="constant"))
        under = execute(BenchConfig(**base, concurrency=2, num_prompts=16))
    s = saturation(over.records, closed_loop=False)
    assert s.saturated, s.text
    assert not saturation(under.records).saturated
