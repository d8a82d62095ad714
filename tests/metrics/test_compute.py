"""Every metric formula pinned on hand-computed examples (docs/metrics.md)."""

from __future__ import annotations

import math

import pytest

from infx.metrics.compute import (
    compute_metrics,
    e2el_ms,
    is_good,
    itl_samples_ms,
    parse_goodput,
    percentile_with_failures,
    stat,
    tpot_ms,
    ttft_ms,
)
from infx.records import RequestRecord

MS = 1_000_000  # ns per ms


def rec(
    rid: str,
    *,
    send: float,
    chunks: list[tuple[float, int]] | None = None,
    end: float | None = None,
    intended: float | None = None,
    completion: int | None = None,
    prompt: int | None = 10,
    error: str | None = None,
    warmup: bool = False,
) -> RequestRecord:
    """Times in ms from 0; chunks = [(arrival_ms, tokens)]."""
    chunks = chunks or []
    r = RequestRecord(
        request_id=rid,
        endpoint="completions",
        max_tokens=completion or 1,
        intended_send_ns=None if intended is None else int(intended * MS),
        send_ns=int(send * MS),
        end_ns=int((end if end is not None else (chunks[-1][0] if chunks else send)) * MS),
        chunk_ns=[int(t * MS) for t, _ in chunks],
        chunk_tokens=[k for _, k in chunks],
        client_tokens=sum(k for _, k in chunks),
        first_token_ns=int(chunks[0][0] * MS) if chunks else None,
        last_token_ns=int(chunks[-1][0] * MS) if chunks else None,
        completion_tokens=completion if completion is not None else (sum(k for _, k in chunks) if not error else None),
        prompt_tokens=prompt if not error else None,
        finish_count=0 if error else 1,
        warmup=warmup,
        error_class=error,  # type: ignore[arg-type]  # the tests pass class names as plain strings
    )
    return r


def test_ttft_e2el_tpot_single_token_chunks():
    # send at 0; tokens at 100, 110, 120, 130; body ends at 131
    r = rec("a", send=0, chunks=[(100, 1), (110, 1), (120, 1), (130, 1)], end=131)
    assert ttft_ms(r) == 100
    assert e2el_ms(r) == 131
    assert tpot_ms(r) == pytest.approx((131 - 100) / 3)
    assert list(itl_samples_ms(r)) == [10, 10, 10]


def test_itl_multi_token_chunk_splits_gap():
    # a chunk carrying 3 tokens after a 30 ms gap contributes 3 samples of 10 ms
    r = rec("a", send=0, chunks=[(50, 1), (80, 3), (90, 1)], end=90)
    assert list(itl_samples_ms(r)) == [10, 10, 10, 10]
    # TPOT uses the token count (5), not the chunk count (3)
    assert tpot_ms(r) == pytest.approx((90 - 50) / 4)


def test_first_chunk_with_several_tokens():
    # speculative first chunk of 2 tokens: ITL samples only for later chunks
    r = rec("a", send=0, chunks=[(40, 2), (60, 2)], end=60)
    assert list(itl_samples_ms(r)) == [10, 10]
    assert tpot_ms(r) == pytest.approx(20 / 3)


def test_one_token_output_has_no_tpot_and_no_itl():
    r = rec("a", send=0, chunks=[(25, 1)], end=26)
    assert tpot_ms(r) is None
    assert itl_samples_ms(r).size == 0
    m = compute_metrics([r])
    assert m.tpot_ms.count == 0 and m.tpot_ms.mean is None
    assert m.itl_ms.count == 0
    assert m.ttft_ms.median == 25
    assert m.interactivity_median is None


def test_stat_numpy_conventions():
    s = stat([1, 2, 3, 4])
    assert s.mean == 2.5
    assert s.median == 2.5
    assert s.std == pytest.approx(math.sqrt(1.25))  # population std
    assert s.p90 == pytest.approx(3.7)  # linear: 1 + 0.9 * 3 = 3.7 -> between 3 and 4
    assert s.p99 == pytest.approx(3.97)
    assert s.p999 == pytest.approx(3.997)
    assert s.count == 4
    assert stat([]).mean is None and stat([]).count == 0


def test_aggregate_with_failures_and_warmup():
    records = [
        rec("w", send=0, chunks=[(5, 1), (6, 1)], end=6, warmup=True, intended=0),  # excluded
        rec("a", send=1000, intended=1000, chunks=[(1100, 1), (1110, 1), (1120, 1)], end=1120, prompt=10),
        rec("b", send=1002, intended=1000, chunks=[(1202, 2), (1222, 2)], end=1222, prompt=20),
        rec("c", send=1004, intended=1001, end=1500, error="http_5xx"),
    ]
    m = compute_metrics(records, window_ns=(1000 * MS, 2000 * MS))
    assert m.warmup_requests == 1
    assert (m.issued, m.completed, m.failed) == (3, 2, 1)
    assert m.success_rate == pytest.approx(2 / 3)
    assert m.error_classes == {"http_5xx": 1}
    # tokens from successful requests only
    assert m.total_input_tokens == 30
    assert m.total_output_tokens == 3 + 4
    # TTFT: a=100, b=200
    assert m.ttft_ms.mean == 150 and m.ttft_ms.count == 2
    # TPOT: a=(120-100)/2=10, b=(220-200)/3=6.667
    assert m.tpot_ms.mean == pytest.approx((10 + 20 / 3) / 2)
    # ITL samples: a: 10, 10; b: 2 tokens after 20 ms -> 10, 10
    assert m.itl_ms.count == 4 and m.itl_ms.mean == pytest.approx(10)
    # E2EL: 120, 220
    assert m.e2el_ms.median == 170
    # queue delay (all measured requests, failures too): 0, 2, 3 ms
    assert m.queue_delay_ms.mean == pytest.approx(5 / 3)
    assert m.queue_delay_ms.count == 3
    # throughput over the 1 s window
    t = m.throughput
    assert t.duration_s == 1.0
    assert t.request_per_s == 2
    assert t.output_tok_per_s == 7
    assert t.input_tok_per_s == 30
    assert t.total_tok_per_s == 37
    # interactivity = 1000 / TPOT at the median and at P90 TPOT
    tpots = sorted([10, 20 / 3])
    med = (tpots[0] + tpots[1]) / 2
    p90 = tpots[0] + 0.9 * (tpots[1] - tpots[0])
    assert m.interactivity_median == pytest.approx(1000 / med)
    assert m.interactivity_p90 == pytest.approx(1000 / p90)
    # InferenceX-style: 1000 / p90(E2EL / OSL); a: 120/3 = 40, b: 220/4 = 55
    assert m.interactivity_e2e_p90 == pytest.approx(1000 / (40 + 0.9 * 15))
    # error-aware: a failure counts as infinitely slow
    ea = m.error_aware
    assert ea is not None and ea.failed == 1 and ea.issued == 3
    assert ea.e2el_p50_ms == 220  # sorted [120, 220, inf] -> middle
    assert ea.e2el_p90_ms is None  # lands between 220 and inf: unbounded


def test_default_window_is_first_send_to_last_end():
    records = [
        rec("a", send=0, chunks=[(10, 1), (20, 1)], end=20),
        rec("b", send=5, chunks=[(30, 1), (40, 1)], end=500),
    ]
    m = compute_metrics(records)
    assert m.throughput.duration_s == pytest.approx(0.5)
    assert m.throughput.output_tok_per_s == pytest.approx(4 / 0.5)


def test_per_gpu_and_per_node():
    records = [rec("a", send=0, chunks=[(10, 1), (20, 1)], end=1000, prompt=6)]
    m = compute_metrics(records, window_ns=(0, 1000 * MS), gpus=4, nodes=2)
    t = m.throughput
    assert t.output_tok_per_s == 2 and t.total_tok_per_s == 8
    assert t.output_tok_per_s_per_gpu == 0.5
    assert t.total_tok_per_s_per_gpu == 2
    assert t.input_tok_per_s_per_gpu == 1.5
    assert t.output_tok_per_s_per_node == 1 and t.total_tok_per_s_per_node == 4
    assert compute_metrics(records).throughput.output_tok_per_s_per_gpu is None


def test_goodput_counts_requests_meeting_every_slo():
    fast = rec("a", send=0, chunks=[(50, 1), (60, 1)], end=60)  # ttft 50, tpot 10, e2el 60
    slow_ttft = rec("b", send=0, chunks=[(300, 1), (310, 1)], end=310)  # ttft 300
    slow_tpot = rec("c", send=0, chunks=[(50, 1), (150, 1)], end=150)  # tpot 100
    one_token = rec("d", send=0, chunks=[(40, 1)], end=40)  # no tpot: not held against it
    failed = rec("e", send=0, end=10, error="http_429")
    slo = {"ttft": 100.0, "tpot": 50.0}
    goods = [is_good(r, slo) for r in (fast, slow_ttft, slow_tpot, one_token, failed)]
    assert goods == [True, False, False, True, False]
    m = compute_metrics([fast, slow_ttft, slow_tpot, one_token, failed], window_ns=(0, 2000 * MS), goodput=slo)
    assert m.good_requests == 2
    assert m.good_fraction == pytest.approx(2 / 5)  # failures count in the denominator
    assert m.throughput.goodput_req_per_s == pytest.approx(1.0)
    assert compute_metrics([fast]).throughput.goodput_req_per_s is None
    assert is_good(fast, {"e2el": 59.0}) is False


def test_parse_goodput():
    assert parse_goodput(["ttft:500", "tpot:50"]) == {"ttft": 500, "tpot": 50}
    assert parse_goodput(["ttft:500 e2el:1000,tpot:5"]) == {"ttft": 500, "e2el": 1000, "tpot": 5}
    for bad in (["itl:5"], ["ttft"], ["ttft:x"], ["ttft:-1"]):
        with pytest.raises(ValueError):
            parse_goodput(bad)


def test_percentile_with_failures():
    assert percentile_with_failures([], 50) is None
    assert percentile_with_failures([1.0, 3.0], 50) == 2.0
    assert percentile_with_failures([1.0, math.inf], 50) is None
    assert percentile_with_failures([1.0, 2.0, 3.0, math.inf], 50) == 2.5


def test_all_failed_run():
    m = compute_metrics([rec("a", send=0, end=5, error="connect_error")])
    assert (m.issued, m.completed, m.failed, m.success_rate) == (1, 0, 1, 0.0)
    assert m.ttft_ms.count == 0 and m.throughput.request_per_s == 0
    assert m.error_aware is not None and m.error_aware.e2el_p50_ms is None


def test_server_count_preferred_over_client_count():
    # vLLM-like stream where the client could count only 3 chunks but the server says 4 tokens
    r = rec("a", send=0, chunks=[(10, 1), (20, 1), (30, 1)], end=40, completion=4)
    assert r.output_tokens == 4
    assert tpot_ms(r) == pytest.approx((40 - 10) / 3)
