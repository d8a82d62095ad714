"""Steady-state detection (issue 21): MSER-5 trims a ramp-up, a trend inside the window warns."""

from __future__ import annotations

import numpy as np

from infx.metrics.steady import mser_cut, spearman, steady_state
from infx.records import RequestRecord


def _records(latencies_ms: list[float], gap_ms: float = 10.0) -> list[RequestRecord]:
    out = []
    for i, lat in enumerate(latencies_ms):
        send = int(i * gap_ms * 1e6)
        end = send + int(lat * 1e6)
        chunks = [send + int(lat * 1e6 * k / 4) for k in range(1, 5)]
        out.append(RequestRecord(request_id=f"r-{i}", endpoint="completions", max_tokens=4, send_ns=send,
                                 first_token_ns=chunks[0], end_ns=end, chunk_ns=chunks, chunk_tokens=[1, 1, 1, 1],
                                 client_tokens=4, finish_reason="length", finish_count=1))
    return out


def test_mser_trims_the_ramp_up_and_keeps_a_flat_run() -> None:
    rng = np.random.default_rng(0)
    flat = (100 + rng.normal(0, 3, 200)).tolist()
    st = steady_state(_records(flat))
    assert st is not None and st.ramp_up_requests <= 10 and not st.trend
    ramp = np.linspace(400, 110, 30).tolist() + flat
    st = steady_state(_records(ramp))
    assert st is not None and 20 <= st.ramp_up_requests <= 40, st
    assert st.kept_requests == len(ramp) - st.ramp_up_requests - st.ramp_down_requests
    assert st.fraction_retained < 1 and "ramp-up" in st.text
    assert mser_cut(np.array([5.0] * 3)) == 0  # too short to judge


def test_trend_inside_the_window_warns() -> None:
    # latency creeping up steadily (a leak, thermal throttling): no window removes it
    creep = np.linspace(100, 300, 200).tolist()
    st = steady_state(_records(creep))
    assert st is not None and st.trend and "latency trends up" in st.text
    rho, p = spearman(np.arange(10.0), np.arange(10.0))
    assert rho > 0.999 and p < 1e-6
    assert steady_state(_records([100.0] * 5)) is None  # fewer than 20 requests
