"""stream_request against the synthetic fault-injecting server: every fault ends as a
classified record, nothing raises. (The server is a real aiohttp server on a free port.)"""

from __future__ import annotations

import asyncio
import gzip
import json

import pytest

from infx.loadgen.http import Target, build_body, make_session, stream_request
from infx.loadgen.sse import parse_sse
from infx.loadgen.testserver import SyntheticServer
from infx.records import RequestRecord, RequestSpec, read_records, write_records

from .faults import FAULT_CLASSES

EXPECTED = {"ok": None, **FAULT_CLASSES}


@pytest.fixture(autouse=True, params=["msgspec", "json", "plain-reader"])
def decoder(request, monkeypatch):
    """Every test runs with the fast paths (timed body reader + msgspec), with the generic json
    decoder, and with aiohttp's plain readany loop."""
    import infx.loadgen.http as http
    import infx.loadgen.sse as sse

    if request.param == "json":
        monkeypatch.setattr(sse, "_fast_decoder", None)
    elif request.param == "plain-reader":
        monkeypatch.setattr(http, "_FAST_READER", False)
    elif sse._fast_decoder is None:
        pytest.skip("msgspec not installed")
    return request.param


@pytest.fixture(scope="module")
def server():
    with SyntheticServer(ttft_s=0.002, token_interval_s=0.001) as srv:
        yield srv


def _run(coro):
    return asyncio.run(coro)


# Faults that exist to hit a deadline get tight ones (fast tests); every other request gets
# generous ones, so a loaded CI machine cannot turn a slow answer into a spurious timeout.
TIMEOUT_FAULTS = {"stall", "trickle"}


async def _one(url: str, spec: RequestSpec, *, tight: bool = False, **target_kw) -> RequestRecord:
    stall_s, total_s = (1.0, 1.5) if tight else (10.0, 30.0)
    target = Target(base_url=url, model="m", stall_timeout_s=stall_s, total_timeout_s=total_s, **target_kw)
    async with make_session() as session:
        return await stream_request(session, spec, target)


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
@pytest.mark.parametrize("fault", sorted(EXPECTED))
def test_every_fault_is_classified(server, endpoint, fault):
    spec = RequestSpec(request_id=fault, endpoint=endpoint, prompt="a b c", max_tokens=8,
                       headers={"x-infx-fault": fault})
    rec = _run(_one(server.base_url, spec, tight=fault in TIMEOUT_FAULTS))
    assert rec.error_class == EXPECTED[fault], rec.error_message
    assert rec.end_ns >= rec.send_ns
    if fault == "ok":
        assert rec.ok and rec.error_message is None
        assert rec.completion_tokens == 8 and rec.client_tokens == 8
        assert sum(rec.chunk_tokens) == 8 and min(rec.chunk_tokens) >= 1
        assert len(set(rec.chunk_ns)) == len(rec.chunk_ns)  # one chunk per arrival
        assert rec.finish_count == 1 and rec.finish_reason == "length"
        assert (rec.send_ns < rec.headers_ns <= rec.first_byte_ns <= rec.first_token_ns <= rec.last_token_ns
                <= rec.end_ns)
        assert rec.chunk_ns == sorted(rec.chunk_ns)
        if endpoint == "chat":  # the role-only chunk is not the first token
            assert rec.empty_events_before_first_token == 1
    else:
        assert not rec.ok and rec.error_message
    if fault.startswith("http_"):
        assert rec.http_status == int(fault[5:])
    if fault in ("reset", "stall"):
        assert rec.client_tokens == 4  # partial data kept


def test_unreachable_server_is_connect_error():
    import socket

    with socket.socket() as s:  # bound, never listening: connecting is refused and no other process can
        s.bind(("127.0.0.1", 0))  # take the port meanwhile (a closed number could be bound by then)
        port = s.getsockname()[1]
        spec = RequestSpec(request_id="x", prompt="hi", max_tokens=4)
        rec = _run(_one(f"http://127.0.0.1:{port}", spec))
    assert rec.error_class == "connect_error"


def test_request_body_asks_for_usage_in_stream(server):
    spec = RequestSpec(request_id="b", prompt="hello", max_tokens=3, ignore_eos=True, extra_body={"temperature": 0})
    body = build_body(spec, Target(base_url="http://x", model="served", token_ids=True))
    assert body == {
        "model": "served",
        "prompt": "hello",
        "max_tokens": 3,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "ignore_eos": True,
        "return_token_ids": True,
        "temperature": 0,
    }
    chat = build_body(RequestSpec(request_id="c", endpoint="chat", prompt="hi", max_tokens=2),
                      Target(base_url="http://x", model="m", continuous_usage=False))
    assert chat["messages"] == [{"role": "user", "content": "hi"}]
    assert chat["stream_options"] == {"include_usage": True}
    assert "ignore_eos" not in chat


def test_token_ids_counting_and_empty_text_tokens():
    """Empty-text token events (partial UTF-8) are tokens; counted by token ids or usage."""
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005, empty_text_every=2, tokens_per_event=2) as srv:
        spec = RequestSpec(request_id="t", prompt="x", max_tokens=7)
        by_ids = _run(_one(srv.base_url, spec, token_ids=True))
        by_usage = _run(_one(srv.base_url, spec))
        by_events = _run(_one(srv.base_url, spec, continuous_usage=False))
    assert by_ids.token_source == "token_ids" and sum(by_ids.chunk_tokens) == 7
    assert by_usage.token_source == "usage" and sum(by_usage.chunk_tokens) == 7
    assert by_ids.completion_tokens == by_usage.completion_tokens == 7
    # without per-chunk counts a client can only count events: 4 events for 7 tokens, and the
    # last one (empty text + finish_reason) is indistinguishable from a finish-only event, so 3;
    # the server's final usage still gives the true output length
    assert by_events.token_source == "events" and by_events.client_tokens == 3
    assert by_events.completion_tokens == 7 and by_events.output_tokens == 7


def _reads(*chunks: bytes, t0: int = 1000) -> list[tuple[int, bytes]]:
    return [(t0 + i, c) for i, c in enumerate(chunks)]


def _blank() -> RequestRecord:
    return RequestRecord(request_id="p", endpoint="completions", max_tokens=4, send_ns=0, end_ns=0)


def test_parse_sse_events_split_across_reads_take_completing_read_time():
    ev1 = b'data: {"choices":[{"text":"a","finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n'
    ev2 = (b'data: {"choices":[{"text":"b","finish_reason":"length"}],'
           b'"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n')
    rec = _blank()
    err = parse_sse(_reads(ev1[:20], ev1[20:] + ev2[:10], ev2[10:] + b"data: [DONE]\n\n"), rec)
    assert err is None
    assert rec.chunk_ns == [1001, 1002]  # each event stamped when its last byte arrived
    assert rec.chunk_tokens == [1, 1]
    assert rec.prompt_tokens == 3 and rec.completion_tokens == 2
    assert rec.finish_reason == "length" and rec.events == 3


def test_parse_sse_events_in_one_read_form_one_chunk():
    ev = b'data: {"choices":[{"text":"","finish_reason":null,"token_ids":[1,2]}]}\n\n'
    last = b'data: {"choices":[{"text":"z","finish_reason":"length","token_ids":[3]}]}\n\n'
    rec = _blank()
    assert parse_sse(_reads(ev + ev, ev + last), rec) is None
    assert rec.chunk_ns == [1000, 1001]
    assert rec.chunk_tokens == [4, 3]
    assert rec.token_source == "token_ids" and rec.client_tokens == 7
    assert rec.first_token_text_empty is True


def test_parse_sse_crlf_comments_and_multiline():
    body = (b': keep-alive\r\n\r\nevent: message\r\ndata: {"choices":[{"text":"x","finish_reason":"stop"}]}\r\n\r\n'
            b'data: [DONE]\r\n\r\n')
    rec = _blank()
    assert parse_sse(_reads(body), rec) is None
    assert rec.client_tokens == 1 and rec.finish_count == 1 and rec.token_source == "events"


def test_parse_sse_unusual_shapes_fall_back_and_still_count():
    # "text" as a number does not fit the typed fast path; the generic path still reads it
    ev = b'data: {"choices":[{"text":5,"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1}}\n\n'
    rec = _blank()
    err = parse_sse(_reads(ev + b"data: [DONE]\n\n"), rec)
    assert err is not None and err[0] == "malformed_sse"  # len() of an int: unexpected event shape
    ok = (b'data: {"choices":[{"text":"a","finish_reason":"stop","extra":{"x":[1,2]}}],'
          b'"usage":{"prompt_tokens":2,"completion_tokens":1,"details":null}}\n\n')
    rec = _blank()
    assert parse_sse(_reads(ok), rec) is None and rec.client_tokens == 1 and rec.prompt_tokens == 2


def test_parse_sse_garbage_is_malformed():
    rec = _blank()
    err = parse_sse(_reads(b"hello world\n\n"), rec)
    assert err is not None and err[0] == "malformed_sse"
    err = parse_sse(_reads(b'data: {"choices":[{"text":"x"'), _blank())  # truncated at end
    assert err is not None and err[0] == "malformed_sse"


def test_records_roundtrip_gzip_jsonl(tmp_path, server):
    spec = RequestSpec(request_id="r1", prompt="a", max_tokens=3)
    rec = _run(_one(server.base_url, spec))
    path = tmp_path / "records.jsonl.gz"
    write_records(path, [rec, rec.model_copy(update={"request_id": "r2"})])
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["request_id"] == "r1"
    back = read_records(path)
    assert back[0] == rec and back[1].request_id == "r2"
