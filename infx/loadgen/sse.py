"""Decode a streamed response after its body has ended: the timed raw reads of :mod:`infx.loadgen.http`
-> SSE events -> JSON -> the record's stream fields (chunk times and token counts, finish, usage).

An event's arrival time is the arrival time of the read that completed it: the client cannot know
better. A *chunk* in the record is one arrival: token-carrying events completed by the same read are
merged into one chunk carrying their summed token count (so coalesced events become one k-token
chunk, not k-1 zero gaps).

Token counting, in order of preference (``RequestRecord.token_source``):
``token_ids`` (vLLM ``return_token_ids``: exact per chunk), ``usage`` (cumulative
``usage.completion_tokens`` on every chunk, vLLM ``stream_options.continuous_usage_stats``),
``events`` (fallback: one token per choice event that is not role-only or finish-only; exact
for servers that stream one event per token, such as vLLM). The final server ``usage`` is kept
separately as ``completion_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from infx.records import ErrorClass, RequestRecord, RequestSpec

StreamError = tuple[ErrorClass, str]  # how a request failed, and a one-line message


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (whitespace runs folded), cut to ``limit`` characters: an error message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def completion_error(rec: RequestRecord, spec: RequestSpec) -> StreamError | None:
    """What a decoded stream lacks to be a complete answer (one finish_reason, a token), or ``None``."""
    if rec.finish_count == 0:
        return ("incomplete_stream", f"stream ended without a finish_reason after {rec.events} events")
    if rec.finish_count > 1:
        return ("protocol_error", f"{rec.finish_count} finish_reasons in one stream")
    if spec.max_tokens > 0 and rec.client_tokens == 0 and not rec.completion_tokens:
        return ("empty_output", f"finished ({rec.finish_reason}) without generating a token")
    if rec.first_token_ns is None and rec.completion_tokens:
        return ("protocol_error", f"server reports {rec.completion_tokens} tokens but no chunk carried one")
    return None


def _events(reads: list[tuple[int, bytes]]) -> Iterator[tuple[int | None, bytes]]:
    """Yield ``(arrival_ns, event_block)`` for every complete SSE event; a trailing partial
    event is yielded with ``None`` time so the caller can flag it."""
    # The reads of an unfinished event are kept as a list and joined once its end arrives: joining
    # (and re-splitting) them on every read is quadratic in the event's size (a 64 MB event).
    pending: list[bytes] = []
    tail_nl = False  # the pending bytes end with a newline (an event end may span two reads)
    for t, data in reads:
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not data:
            continue
        if not (b"\n\n" in data or (tail_nl and data[:1] == b"\n")):
            pending.append(data)
            tail_nl = data[-1:] == b"\n"
            continue
        if pending:
            data = b"".join(pending) + data
            pending = []
        parts = data.split(b"\n\n")
        last = parts.pop()
        if last:
            pending.append(last)
        tail_nl = last[-1:] == b"\n"
        for block in parts:
            if block:
                yield t, block
    rest = b"".join(pending)
    if rest.strip():
        yield None, rest


def _payload(block: bytes) -> bytes | None:
    """The data of one SSE event (``None`` for comment-only / field-only events)."""
    if block.startswith(b"data:") and b"\n" not in block:
        return block[5:].strip()
    data: list[bytes] = []
    for line in block.split(b"\n"):
        if line.startswith(b"data:"):
            data.append(line[5:].strip())
        elif not line or line.startswith(b":") or line.startswith((b"event:", b"id:", b"retry:")):
            continue
        else:
            raise ValueError(f"not an SSE field line: {line[:80]!r}")
    return b"\n".join(data) if data else None


def parse_sse(reads: list[tuple[int, bytes]], rec: RequestRecord) -> StreamError | None:
    """Fill ``rec``'s stream fields from the timed raw reads; return an error or ``None``.
    Never raises: anything unexpected while parsing the body is the body's fault (``malformed_sse``)."""
    st = _StreamState()
    try:
        return _parse(reads, st)
    except Exception as exc:
        return ("malformed_sse", one_line(f"cannot parse the stream: {type(exc).__name__}: {exc}"))
    finally:
        st.apply(rec)


class _StreamState:
    """Plain attributes while parsing (pydantic setattr is slow); copied to the record once."""

    __slots__ = (
        "chunk_ns", "chunk_tokens", "events", "empty_before", "first_empty", "prompt_tokens",
        "completion_tokens", "chars", "finish_count", "finish_reason", "token_source", "cum",
        "first_content_ns", "reasoning_tokens",
    )

    def __init__(self) -> None:
        self.chunk_ns: list[int] = []
        self.chunk_tokens: list[int] = []
        self.events = 0
        self.empty_before = 0
        self.first_empty: bool | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.chars = 0
        self.finish_count = 0
        self.finish_reason: str | None = None
        self.token_source: str | None = None
        self.cum = 0  # cumulative completion tokens seen in continuous usage
        self.first_content_ns: int | None = None  # first token of the answer (not reasoning)
        self.reasoning_tokens: int | None = None  # None: the stream carried no reasoning delta

    def count(
        self, t: int, text: str, role_only: bool, finish: str | None, token_ids: list[int] | None, ct: int | None,
        reasoning: bool = False,
    ) -> StreamError | None:
        """Count one event's tokens (rules in the module docstring): the one place both event
        walkers (``_walk_typed``, ``_walk``) share. ``ct``: its usage's completion tokens."""
        if token_ids is not None:
            k = len(token_ids)
            src = "token_ids"
        elif ct is not None:
            k = ct - self.cum
            src = "usage"
        else:
            k = 1 if (text or not finish) and not role_only else 0
            src = "events"
        if ct is not None:
            self.cum = ct
        self.chars += len(text)
        chunk_ns = self.chunk_ns
        if k > 0:
            if self.finish_count:
                return ("protocol_error", "tokens arrived after the finish_reason")
            if reasoning:
                self.reasoning_tokens = (self.reasoning_tokens or 0) + k
            elif self.first_content_ns is None:
                self.first_content_ns = t
            if not chunk_ns:  # the first token
                self.first_empty = not text
                self.token_source = src
                chunk_ns.append(t)
                self.chunk_tokens.append(k)
            elif chunk_ns[-1] == t:  # same network read: one chunk of several tokens
                self.chunk_tokens[-1] += k
            else:
                chunk_ns.append(t)
                self.chunk_tokens.append(k)
        elif not chunk_ns:
            self.empty_before += 1
        if finish is not None:
            self.finish_count += 1
            self.finish_reason = finish
        return None

    def apply(self, rec: RequestRecord) -> None:
        d = rec.__dict__  # fields already validated by construction; plain types only
        d["chunk_ns"] = self.chunk_ns
        d["chunk_tokens"] = self.chunk_tokens
        d["events"] = self.events
        d["empty_events_before_first_token"] = self.empty_before
        d["first_token_text_empty"] = self.first_empty
        d["prompt_tokens"] = self.prompt_tokens
        d["completion_tokens"] = self.completion_tokens
        d["output_chars"] = self.chars
        d["finish_count"] = self.finish_count
        d["finish_reason"] = self.finish_reason
        d["token_source"] = self.token_source
        d["client_tokens"] = sum(self.chunk_tokens)
        if self.chunk_ns:
            d["first_token_ns"] = self.chunk_ns[0]
            d["last_token_ns"] = self.chunk_ns[-1]
        if self.reasoning_tokens is not None:  # a reasoning stream: its answer's first token and its thinking
            d["first_content_ns"] = self.first_content_ns
            d["reasoning_tokens"] = self.reasoning_tokens


def _decode_all(payloads: list[bytes]) -> list[Any] | StreamError:
    """JSON-decode every event payload in one C-scanner pass; on failure find the bad one."""
    try:
        objs: list[Any] = json.loads(b"[" + b",".join(payloads) + b"]")
        if len(objs) == len(payloads):
            return objs
    except ValueError:
        pass
    objs = []
    for p in payloads:
        try:
            objs.append(json.loads(p))
        except ValueError:
            return ("malformed_sse", one_line(f"data is not JSON: {p[:120]!r}"))
    return objs


def _parse(reads: list[tuple[int, bytes]], st: _StreamState) -> StreamError | None:
    times: list[int] = []
    payloads: list[bytes] = []
    done = False
    events = 0
    error: StreamError | None = None
    for t, block in _events(reads):
        if t is None:
            error = ("malformed_sse" if not done else "protocol_error",
                     one_line(f"truncated SSE event at end of body: {block[:120]!r}"))
            break
        if block.startswith(b"data:") and b"\n" not in block:
            payload = block[5:].strip()
        else:
            try:
                data = _payload(block)
            except ValueError as exc:
                error = ("malformed_sse", one_line(str(exc)))
                break
            if data is None:
                continue
            payload = data
        events += 1
        if payload == b"[DONE]":
            done = True
            continue
        times.append(t)
        payloads.append(payload)
    st.events = events
    if not payloads:
        return error
    if _fast_decoder is not None:
        try:
            events_typed = _fast_decoder.decode(b"[" + b",".join(payloads) + b"]")
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass  # unusual shape or bad JSON: the generic path classifies it
        else:
            if len(events_typed) == len(payloads):
                return _walk_typed(times, events_typed, st) or error
    decoded = _decode_all(payloads)
    if isinstance(decoded, tuple):
        return decoded
    err = _walk(times, decoded, st)
    return err or error


# Fast path: msgspec decodes each event straight into small typed structs, skipping the fields
# infx does not need (several times cheaper than json.loads into dicts). Any event that does not
# fit these types (or bad JSON) sends the whole stream through the generic dict path instead.
try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec ships with the engine extra
    msgspec = None  # type: ignore[assignment]  # the module is absent: the json path decodes every stream

if msgspec is not None:

    class _Delta(msgspec.Struct):
        content: str | None = None
        reasoning_content: str | None = None
        reasoning: str | None = None
        role: str | None = None

    class _Choice(msgspec.Struct):
        text: str | None = None
        delta: _Delta | None = None
        finish_reason: str | None = None
        token_ids: list[int] | None = None

    class _Usage(msgspec.Struct):
        prompt_tokens: int | None = None
        completion_tokens: int | None = None

    class _Event(msgspec.Struct):
        choices: list[_Choice] | None = None
        usage: _Usage | None = None
        error: Any = None

    _fast_decoder: Any = msgspec.json.Decoder(list[_Event])
else:  # pragma: no cover
    _fast_decoder = None


def _walk_typed(times: list[int], events: list[Any], st: _StreamState) -> StreamError | None:
    """``_walk`` over msgspec structs (same rules, attribute access)."""
    count = st.count
    try:
        for t, ev in zip(times, events, strict=True):
            choices = ev.choices
            if not choices and ev.error is not None:
                err = ev.error
                msg = err.get("message", err) if isinstance(err, dict) else err
                return ("stream_error", one_line(f"error event in stream: {msg}"))
            usage = ev.usage
            ct = None
            if usage is not None:
                ct = usage.completion_tokens
            if not choices:
                continue
            choice = choices[0]
            delta = choice.delta
            thinking = False
            if delta is not None:
                thought = delta.reasoning_content or delta.reasoning or ""
                text = delta.content or thought
                thinking = bool(thought) and not delta.content
                role_only = delta.role is not None and not text
            else:
                text = choice.text or ""
                role_only = False
            err = count(t, text, role_only, choice.finish_reason, choice.token_ids, ct, thinking)
            if err is not None:
                return err
    finally:
        for ev in events:  # prompt/completion tokens: the last usage that carried each
            u = ev.usage
            if u is not None:
                if u.prompt_tokens is not None:
                    st.prompt_tokens = u.prompt_tokens
                if u.completion_tokens is not None:
                    st.completion_tokens = u.completion_tokens
    return None


def _walk(times: list[int], objs: list[Any], st: _StreamState) -> StreamError | None:
    count = st.count
    try:
        for t, obj in zip(times, objs, strict=True):
            if obj.__class__ is not dict:
                return ("malformed_sse", one_line(f"data is not a JSON object: {str(obj)[:120]!r}"))
            choices = obj.get("choices")
            if not choices and obj.get("error") is not None:
                err = obj["error"]
                msg = err.get("message", err) if isinstance(err, dict) else err
                return ("stream_error", one_line(f"error event in stream: {msg}"))
            usage = obj.get("usage")
            ct = None
            if usage:
                pt = usage.get("prompt_tokens")
                if pt is not None:
                    if pt.__class__ is not int:
                        return ("malformed_sse", one_line(f"usage.prompt_tokens is not an integer: {pt!r}"))
                    st.prompt_tokens = pt
                ct = usage.get("completion_tokens")
                if ct is not None:
                    if ct.__class__ is not int:
                        return ("malformed_sse", one_line(f"usage.completion_tokens is not an integer: {ct!r}"))
                    st.completion_tokens = ct
            if not choices:
                continue
            choice = choices[0]
            delta = choice.get("delta")
            thinking = False
            if delta is not None:  # chat
                thought = delta.get("reasoning_content") or delta.get("reasoning") or ""
                text = delta.get("content") or thought
                thinking = bool(thought) and not delta.get("content")
                role_only = "role" in delta and not text
            else:
                text = choice.get("text") or ""
                role_only = False
            token_ids = choice.get("token_ids")
            if token_ids is not None and token_ids.__class__ is not list:
                return ("malformed_sse", one_line(f"token_ids is not a list: {token_ids!r}"))
            err = count(t, text, role_only, choice.get("finish_reason"), token_ids, ct, thinking)
            if err is not None:
                return err
    except Exception as exc:
        return ("malformed_sse", one_line(f"unexpected event shape: {type(exc).__name__}: {exc}"))
    return None
