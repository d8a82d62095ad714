"""Speculative-decoding acceptance from /metrics counter deltas (infx.telemetry.acceptance): exact figures on
hand-made scrapes, "not reported" (never 0) when the series are absent, invalid with the reason when a counter
falls inside the window, and the interval across trials."""

from __future__ import annotations

import pytest

from infx.engine_metrics import EngineStateSample, parse_metrics
from infx.telemetry.acceptance import acceptance

PAGE = """# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {drafts}
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="m"}} {draft_tokens}
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="m"}} {accepted}
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="0"}} {p0}
vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="1"}} {p1}
vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="2"}} {p2}
vllm:spec_decode_num_drafts_created{{engine="0",model_name="m"}} 1.7e9
"""


def _scrape(t: float, drafts: float, draft_tokens: float, accepted: float, pos: tuple[float, float, float]
            ) -> EngineStateSample:
    s = parse_metrics(PAGE.format(drafts=drafts, draft_tokens=draft_tokens, accepted=accepted, p0=pos[0],
                                  p1=pos[1], p2=pos[2]), t)
    s.t_done = t + 0.01
    return s


def test_parse_reads_the_vllm_spec_counters_and_positions() -> None:
    s = _scrape(0.0, 758, 2190, 1581, (700, 500, 381))
    assert (s.spec_drafts, s.spec_draft_tokens, s.spec_accepted) == (758, 2190, 1581)
    assert s.spec_accepted_per_pos == {"0": 700, "1": 500, "2": 381}


def test_window_figures_are_the_counter_deltas() -> None:
    samples = [_scrape(0.0, 100, 300, 50, (30, 15, 5)), _scrape(1.0, 200, 600, 150, (90, 40, 20)),
               _scrape(5.0, 858, 2490, 1631, (730, 515, 386)), _scrape(6.0, 858, 2490, 1631, (730, 515, 386))]
    a = acceptance(samples, (0.5, 4.5))
    assert a.state == "measured" and a.window is not None
    w = a.window
    assert (w.drafts, w.draft_tokens, w.accepted) == (758, 2190, 1581)
    assert w.acceptance_length == pytest.approx(1 + 1581 / 758)
    assert w.acceptance_rate == pytest.approx(1581 / 2190)
    assert w.per_position == pytest.approx([700 / 758, 500 / 758, 381 / 758])
    assert "AL 3.09" in a.text() and "72%" in a.text()


def test_absent_series_are_not_reported_never_zero() -> None:
    page = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"
    samples = [parse_metrics(page, 0.0), parse_metrics(page, 5.0)]
    a = acceptance(samples, (1.0, 4.0))
    assert a.state == "not_reported" and a.window is None and a.acceptance_length_mean is None
    assert a.text() == "not reported by this engine"


def test_a_counter_going_backwards_makes_the_figure_invalid_with_the_reason() -> None:
    samples = [_scrape(0.0, 100, 300, 50, (30, 15, 5)), _scrape(2.0, 300, 900, 250, (90, 40, 20)),
               _scrape(3.0, 10, 30, 5, (3, 1, 1)), _scrape(6.0, 110, 330, 55, (33, 16, 6))]
    a = acceptance(samples, (0.5, 5.5))
    assert a.state == "invalid" and a.window is None
    assert "vllm:spec_decode_num_drafts_total went backwards" in a.reason and "restarted" in a.reason
    assert a.text().startswith("invalid: ")


def test_trials_give_an_interval_across_trials() -> None:
    samples = [_scrape(0.0, 0, 0, 0, (0, 0, 0)), _scrape(10.0, 100, 300, 150, (60, 50, 40)),
               _scrape(20.0, 200, 600, 250, (100, 90, 60)), _scrape(30.0, 300, 900, 380, (160, 130, 90))]
    a = acceptance(samples, (0.5, 29.5), [(0.5, 9.5), (10.5, 19.5), (20.5, 29.5)])
    assert a.state == "measured" and len(a.trials) == 3
    als = [t.acceptance_length for t in a.trials if t is not None]
    assert als == pytest.approx([2.5, 2.0, 2.3])
    assert a.acceptance_length_mean == pytest.approx(sum(als) / 3)
    assert a.acceptance_length_lo is not None and a.acceptance_length_hi is not None
    assert a.acceptance_length_lo < 2.0 < 2.5 < a.acceptance_length_hi


def test_sglang_gauge_is_reported_as_the_engines_own_mean() -> None:
    page = "# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length{{model_name=\"m\"}} {v}\n"
    samples = [parse_metrics(page.format(v=v), t) for t, v in ((1.0, 2.0), (2.0, 3.0), (9.0, 9.0))]
    a = acceptance(samples, (0.5, 5.0))
    assert a.state == "gauge" and a.gauge_acceptance_length == pytest.approx(2.5)
