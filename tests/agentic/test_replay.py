"""Replay scheduling against a fake chat server (fast; no engine: the real one is in test_e2e)."""

from __future__ import annotations

import asyncio
import json
import time
from itertools import pairwise

import pytest

from infx.agentic.replay import SESSION_HEADER, ReplayConfig, replay_async, steps_of
from infx.agentic.synth import SynthConfig, synth_traces
from infx.agentic.trace import parse_traces
from infx.loadgen.http import Target

from .fakeserver import CHAT_OVERHEAD, FakeServer


def _run(blocks, traces, fake_kw=None, **cfg_kw):
    async def go():
        srv = await FakeServer(blocks.count, **(fake_kw or {})).start()
        try:
            cfg = ReplayConfig(**{"duration_s": 30, "trajectory_start_min": 0, "trajectory_start_max": 0,
                                  "warmup_requests_per_lane": 0, "cache_salt": "t", **cfg_kw})
            out = await replay_async(traces, blocks, Target(base_url=srv.base_url, model="m"), cfg)
            return out, srv
        finally:
            await srv.stop()

    return asyncio.run(go())


def _req(t, n_in, out=6, ids=None, api=0.01):
    ids = ids if ids is not None else list(range(-(-n_in // 64)))
    return {"t": t, "type": "n", "in": n_in, "out": out, "hash_ids": ids, "api_time": api}


def _sub(agent, reqs, t=1.0):
    return {"t": t, "type": "subagent", "agent_id": agent, "subagent_type": "Explore", "duration_ms": 10,
            "total_tokens": 1, "status": "completed", "requests": reqs}


def _trace(tid, entries):
    return json.dumps({"id": tid, "models": ["m"], "block_size": 64, "hash_id_scope": "local", "requests": entries})


@pytest.mark.parametrize("fanout", [True, False])
def test_in_flight_high_water_exceeds_conc_only_with_fanout(blocks, fanout):
    traces = synth_traces(SynthConfig(sessions=6, seed=4, think_time=0.0, out_min=2, out_max=8,
                                      fanout_prob=1.0 if fanout else 0.0, fanout_width_min=3, fanout_width_max=3,
                                      turns_min=3, turns_max=4))
    out, srv = _run(blocks, traces, concurrency=2, max_sessions=6)
    assert out.stopped_by == "sessions"
    assert all(r.ok for r in out.records)
    assert len(out.records) == sum(len(list(t.all_requests())) for t in traces)
    if fanout:
        assert out.in_flight_high_water > 2 and srv.high_water > 2
        assert max(s.max_in_flight for s in out.sessions) == 3
    else:
        assert out.in_flight_high_water == 2 == srv.high_water
        assert max(s.max_in_flight for s in out.sessions) == 1


def test_requests_carry_exact_prompts_session_header_and_output(blocks):
    traces = synth_traces(SynthConfig(sessions=3, seed=9, think_time=0.0, out_min=2, out_max=8, fanout_prob=0.5))
    out, srv = _run(blocks, traces, concurrency=3, max_sessions=3)
    assert out.chat_overhead_tokens == CHAT_OVERHEAD
    assert out.prompt_token_mismatches == 0
    for rec in out.records:
        assert rec.ok and rec.prompt_tokens == rec.expected_input_tokens
        assert rec.completion_tokens == rec.max_tokens
    by_id = {}
    for r in srv.requests[1:]:  # [0] is the calibration probe
        body = r["body"]
        assert body["ignore_eos"] is True and body["stream"] is True
        assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"
        by_id.setdefault(r["headers"][SESSION_HEADER], []).append(body)
    assert sorted(by_id) == sorted(s.session_id for s in out.sessions)
    for s in out.sessions:
        tr = next(t for t in traces if t.id == s.trace_id)
        assert sorted(b["max_tokens"] for b in by_id[s.session_id]) == sorted(r.out for r in tr.all_requests())


def test_stretch_fans_out_and_main_waits(blocks):
    line = _trace("x", [
        _req(0.0, 100),
        _sub("a", [_req(1.0, 200), _req(1.1, 210)]),
        _sub("b", [_req(1.0, 300, out=20)]),
        _req(2.0, 400),
    ])
    traces = parse_traces([line])
    assert [bool(s.agents) for s in steps_of(traces[0].requests)] == [False, True, False]
    out, _ = _run(blocks, traces, concurrency=1, max_sessions=1, idle_gap_cap_s=0,
                  fake_kw={"token_delay_s": 0.005})
    rec = {r.expected_input_tokens: r for r in out.records}
    assert set(rec) == {100, 200, 210, 300, 400}
    main1, a1, a2, b, main2 = (rec[k] for k in (100, 200, 210, 300, 400))
    assert main1.end_ns <= min(a1.send_ns, b.send_ns)
    assert b.send_ns < a1.end_ns  # siblings in parallel
    assert a1.end_ns <= a2.send_ns  # one agent's own turns in order
    assert max(a2.end_ns, b.end_ns) <= main2.send_ns
    assert out.in_flight_high_water == 2


def test_sequential_subagents_option_removes_fanout(blocks):
    traces = synth_traces(SynthConfig(sessions=2, seed=4, think_time=0.0, out_min=2, out_max=8, fanout_prob=1.0))
    out, _ = _run(blocks, traces, concurrency=1, max_sessions=2, subagents="sequential", time_scale=0)
    assert out.in_flight_high_water == 1


def test_trajectory_start_skips_leading_steps(blocks):
    line = _trace("x", [_req(float(i), 100 + i) for i in range(8)])
    out, _ = _run(blocks, parse_traces([line]), concurrency=1, max_sessions=2, trajectory_start_min=0.5,
                  trajectory_start_max=0.5, idle_gap_cap_s=0)
    first = [r.expected_input_tokens for r in out.records if r.session_id == out.sessions[0].session_id]
    second = [r.expected_input_tokens for r in out.records if r.session_id == out.sessions[1].session_id]
    assert first == [104, 105, 106, 107]  # first session of the lane starts half-way
    assert second == list(range(100, 108))  # later sessions start at the beginning
    assert out.sessions[0].start_step == 4


def test_warmup_marks_first_requests_of_each_lane(blocks):
    traces = synth_traces(SynthConfig(sessions=4, seed=1, think_time=0.0, out_min=2, out_max=8, fanout_prob=0.0))
    out, _ = _run(blocks, traces, concurrency=2, max_sessions=4, warmup_requests_per_lane=2)
    for lane in (0, 1):
        flags = [r.warmup for r in sorted((r for r in out.records if r.lane == lane), key=lambda r: r.send_ns)]
        assert flags[:2] == [True, True] and not any(flags[2:])


def test_idle_gaps_are_capped_and_scaled(blocks):
    line = _trace("x", [_req(0.0, 100), _req(100.0, 120), _req(200.0, 130)])
    t0 = time.monotonic()
    out, _ = _run(blocks, parse_traces([line]), concurrency=1, max_sessions=1, idle_gap_cap_s=0.2)
    took = time.monotonic() - t0
    assert len(out.records) == 3 and 0.4 <= took < 5
    recs = sorted(out.records, key=lambda r: r.send_ns)
    assert (recs[1].send_ns - recs[0].end_ns) / 1e9 >= 0.19
    fast, _ = _run(blocks, parse_traces([line]), concurrency=1, max_sessions=1, idle_gap_cap_s=0.2, time_scale=0.0)
    recs = sorted(fast.records, key=lambda r: r.send_ns)
    assert all((b.send_ns - a.end_ns) / 1e9 < 0.1 for a, b in pairwise(recs))  # time_scale 0: no idle gaps


def test_duration_limit_stops_new_requests(blocks):
    line = _trace("x", [_req(float(i), 100, out=5) for i in range(200)])
    out, _ = _run(blocks, parse_traces([line]), concurrency=2, duration_s=0.5, idle_gap_cap_s=0.05, drain_timeout_s=5)
    assert out.stopped_by == "duration"
    assert 2 <= len(out.records) < 200
    assert not any(s.completed for s in out.sessions)
    # sends end near the 0.5 s limit (a stall across it may let one lane's due request out); without the limit
    # the 200 requests would go on for about 6 s
    assert max(r.send_ns for r in out.records) <= out.started_ns + int(1.5e9)


def test_cache_salt_changes_prompts_but_not_lengths(blocks):
    traces = synth_traces(SynthConfig(sessions=1, seed=1, think_time=0.0, out_min=2, out_max=8, fanout_prob=0.0,
                                      turns_max=3))
    _, a = _run(blocks, traces, concurrency=1, max_sessions=1, cache_salt="one")
    _, b = _run(blocks, traces, concurrency=1, max_sessions=1, cache_salt="one")
    _, c = _run(blocks, traces, concurrency=1, max_sessions=1, cache_salt="two")
    content = lambda srv: [r["body"]["messages"][0]["content"] for r in srv.requests[1:]]  # noqa: E731
    assert content(a) == content(b)
    assert content(a) != content(c) and [len(x) > 0 for x in content(c)] == [True] * len(content(a))


def test_unreachable_server_is_a_replay_error(blocks):
    from infx.agentic.replay import ReplayError, replay

    traces = synth_traces(SynthConfig(sessions=1, seed=1))
    with pytest.raises(ReplayError, match="probe"):
        replay(traces, blocks, Target(base_url="http://127.0.0.1:9", model="m"),
               ReplayConfig(concurrency=1, max_sessions=1))


def test_traces_with_another_block_size_get_exact_prompts(blocks):
    line = json.dumps({"id": "b16", "block_size": 16,
                       "requests": [_req(0.0, 40, ids=[0, 1, 2]), _req(0.1, 56, ids=[0, 1, 2, 3])]})
    out, srv = _run(blocks, parse_traces([line]), concurrency=1, max_sessions=1, idle_gap_cap_s=0)
    assert [r.prompt_tokens for r in out.records] == [40, 56] and out.prompt_token_mismatches == 0
    first, second = (r["body"]["messages"][0]["content"] for r in srv.requests[1:])
    assert second.startswith(first[: len(first) - 10])  # shared 16-token blocks -> shared prefix
