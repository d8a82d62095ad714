"""The synthetic test server labels its stream chunks as vLLM does (issue 26): OpenAI clients such as
AIPerf check ``object`` and fail every request on another label."""

from __future__ import annotations

import json
import urllib.request

import pytest

from infx.loadgen.testserver import SyntheticServer


@pytest.mark.parametrize(("path", "body", "label"), [
    ("/v1/completions", {"prompt": "a b c", "max_tokens": 3}, "text_completion"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3},
     "chat.completion.chunk"),
])
def test_stream_chunks_carry_vllms_object_label(path: str, body: dict, label: str) -> None:
    with SyntheticServer(ttft_s=0.0, token_interval_s=0.0) as srv:
        req = urllib.request.Request(srv.base_url + path, method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"model": "m", "stream": True, "stream_options":
                                                      {"include_usage": True}, **body}).encode())
        with urllib.request.urlopen(req, timeout=10) as resp:
            events = [ln[len(b"data: "):] for ln in resp.read().split(b"\n") if ln.startswith(b"data: ")]
    chunks = [json.loads(e) for e in events if e != b"[DONE]"]
    assert len(chunks) >= 3 and {c["object"] for c in chunks} == {label}
