"""A one-request smoke check of a served model: stream one completion and count its tokens.

Used by ``infx engine up`` (ready means ``/health`` answers *and* a completion streams) and the
end-to-end tests. Tokens are counted from the final ``usage`` chunk: with random weights many SSE
events carry empty text, so counting non-empty chunks would be wrong.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from pydantic import BaseModel


class ProbeResult(BaseModel):
    completion_tokens: int
    prompt_tokens: int
    events: int
    ttft_s: float
    total_s: float
    text: str


class ProbeError(Exception):
    pass


def stream_completion(
    base_url: str,
    model: str,
    *,
    prompt: str = "Write a short function that returns the sum of numbers in a list.",
    max_tokens: int = 16,
    timeout: float = 60.0,
) -> ProbeResult:
    """POST one streaming ``/v1/completions`` request with ``ignore_eos``; raise ProbeError on failure."""
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    req = urllib.request.Request(
        base_url.rstrip("/") + "/v1/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        method="POST",
    )
    t0 = time.monotonic()
    ttft = None
    events = 0
    usage = None
    text = []
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            for raw in resp:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                chunk = json.loads(data)
                if chunk.get("usage"):
                    usage = chunk["usage"]
                for choice in chunk.get("choices") or []:
                    events += 1
                    if ttft is None:
                        ttft = time.monotonic() - t0
                    text.append(choice.get("text") or "")
    except urllib.error.HTTPError as exc:
        raise ProbeError(f"HTTP {exc.code} from {base_url}: {exc.read()[:300]!r}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ProbeError(f"completion request to {base_url} failed: {exc}") from None
    if usage is None:
        raise ProbeError("the stream ended without a usage chunk")
    return ProbeResult(
        completion_tokens=int(usage.get("completion_tokens", 0)),
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        events=events,
        ttft_s=ttft if ttft is not None else time.monotonic() - t0,
        total_s=time.monotonic() - t0,
        text="".join(text),
    )
