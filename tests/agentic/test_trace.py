"""Trace format: valid traces load; each kind of malformed line fails with its line number."""

from __future__ import annotations

import json

import pytest

from infx.agentic.trace import SubagentEntry, TraceRequest, load_traces, parse_traces, write_traces
from infx.diagnostics import InfxError


def _req(**kw):
    r = {"t": 0.0, "type": "n", "model": "m", "in": 100, "out": 10, "hash_ids": [0, 1], "api_time": 0.5}
    r.update(kw)
    return r


def _sub(agent="a1", requests=None, **kw):
    s = {"t": 1.0, "type": "subagent", "agent_id": agent, "subagent_type": "Explore", "duration_ms": 800,
         "total_tokens": 120, "status": "completed", "models": ["m"],
         "requests": [_req(t=1.0, hash_ids=[0, 5])] if requests is None else requests}
    s.update(kw)
    return s


def _trace(tid="t1", requests=None, **kw):
    t = {"id": tid, "models": ["m"], "block_size": 64, "hash_id_scope": "local",
         "requests": requests if requests is not None
         else [_req(), _sub(), _sub("a2"), _req(t=3.0, hash_ids=[0, 1, 2])]}
    t.update(kw)
    return json.dumps(t)


def _errors(lines):
    with pytest.raises(InfxError) as exc:
        parse_traces(lines, "traces.jsonl")
    return [str(d) for d in exc.value.diagnostics]


def test_valid_trace_loads_with_subagents(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(_trace("a") + "\n\n" + _trace("b") + "\n")
    traces = load_traces(p)
    assert [t.id for t in traces] == ["a", "b"]
    entries = traces[0].requests
    assert isinstance(entries[0], TraceRequest) and entries[0].in_ == 100
    assert isinstance(entries[1], SubagentEntry) and entries[1].requests[0].hash_ids == [0, 5]
    assert len(list(traces[0].all_requests())) == 4
    # round trip through the writer keeps the wire names ("in", not "in_")
    out = tmp_path / "back.jsonl"
    write_traces(out, traces)
    assert '"in":100' in out.read_text()
    assert load_traces(out) == traces


def test_missing_field_names_line_and_path():
    bad = _req()
    del bad["in"]
    errs = _errors([_trace("ok"), _trace("x", requests=[_req(), _req(), _req(), bad])])
    assert errs == ["traces.jsonl:2: error: missing required field 'in' (at requests[3].in)"]


def test_negative_tokens_fail_with_line():
    errs = _errors([_trace("ok"), _trace("ok2"), _trace("x", requests=[_req(out=-4)])])
    assert len(errs) == 1
    assert errs[0].startswith("traces.jsonl:3: error: ")
    assert "-4" in errs[0] and errs[0].endswith("(at requests[0].out)")


def test_subagent_without_requests_fails():
    errs = _errors([_trace("x", requests=[_req(), _sub(requests=[])])])
    assert errs == ["traces.jsonl:1: error: no requests (a subagent or trace needs at least one) "
                    "(at requests[1].requests)"]


def test_bad_json_line_reports_line_and_column():
    errs = _errors([_trace("a"), '{"id": "b", oops}', _trace("c")])
    assert len(errs) == 1 and errs[0].startswith("traces.jsonl:2:13: error: invalid JSON")


def test_every_bad_line_is_reported_and_types_checked():
    errs = _errors([
        _trace("a", requests=[{"t": 0, "type": "x"}]),
        "[1, 2]",
        _trace("b", requests=[_req(hash_ids=[1, -2])]),
        _trace("a"), _trace("a"),
        _trace("c", requests=[_sub(status=None)]),
    ])
    assert errs[0] == 'traces.jsonl:1: error: unknown request type \'x\' (expected "n" or "subagent") (at requests[0])'
    assert errs[1].startswith("traces.jsonl:2: error: a trace line must be a JSON object")
    assert errs[2].startswith("traces.jsonl:3: error:") and errs[2].endswith("(at requests[0].hash_ids[1])")
    assert errs[3].startswith("traces.jsonl:5: error: duplicate trace id 'a' (first on line 4)")
    assert errs[4].startswith("traces.jsonl:6: error:") and errs[4].endswith("(at requests[0].status)")


def test_missing_file_and_empty_file(tmp_path):
    with pytest.raises(InfxError, match="not found"):
        load_traces(tmp_path / "nope.jsonl")
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(InfxError, match="no traces"):
        load_traces(tmp_path / "e.jsonl")


def test_cli_stats_bad_trace_exits_2_with_diagnostic(tmp_path):
    import subprocess
    import sys

    p = tmp_path / "bad.jsonl"
    p.write_text(_trace("a") + "\n" + _trace("b", requests=[_req(**{"in": -1})]) + "\n")
    proc = subprocess.run([sys.executable, "-m", "infx", "traces", "stats", str(p)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(f"{p}:2: error:") and "(at requests[0].in)" in proc.stderr
    assert "Traceback" not in proc.stderr
