"""What one request asks for (:class:`RequestSpec`) and what happened to it (:class:`RequestRecord`).

Every figure infx publishes is recomputable from the records: one JSON line per request, gzip,
in ``records.jsonl.gz`` next to ``result.json``. Times are ``time.monotonic_ns()`` values
(CLOCK_MONOTONIC: system-wide on Linux, so records from several worker processes share one
clock); ``result.json`` carries the anchor that maps them to unix time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from infx import atomic
from infx.pointfiles import RECORDS_FILE as RECORDS_FILE

Endpoint = Literal["completions", "chat"]

ENDPOINT_PATHS: dict[str, str] = {
    "completions": "/v1/completions",
    "chat": "/v1/chat/completions",
}

# Every way a request can end other than "ok". Kept as a closed set so that result.json's
# ``error_classes`` histogram and the checks can be read without guessing.
ErrorClass = Literal[
    "http_429",  # rate limited
    "http_4xx",  # other client errors (bad request, unknown model...)
    "http_5xx",  # server errors
    "http_other",  # 1xx/3xx or anything not 2xx/4xx/5xx
    "connect_error",  # could not connect (refused, DNS, TLS)
    "connection_reset",  # connection dropped after the request was sent / mid-stream
    "malformed_sse",  # bytes that are not SSE ``data:`` events carrying JSON
    "stream_error",  # the server sent an error object inside the stream
    "timeout_stall",  # no byte for ``stall_timeout_s``
    "timeout_total",  # the request exceeded ``total_timeout_s`` (a stream that never finishes)
    "incomplete_stream",  # the body ended without a finish_reason
    "empty_output",  # finished without a single generated token (max_tokens > 0)
    "protocol_error",  # several finish_reasons, tokens after finish, unexpected content type
    "cancelled",  # the run was stopped (Ctrl-C / deadline) while the request was in flight
    "client_error",  # a bug or resource error on our side (never hidden: message kept)
]

TokenSource = Literal["token_ids", "usage", "events"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RequestSpec(_Model):
    """One request to send. Built by a request source (dataset, schedule, agentic replay)."""

    request_id: str
    endpoint: Endpoint = "completions"
    prompt: str | list[int] | None = None  # completions
    messages: list[dict[str, Any]] | None = None  # chat
    max_tokens: int
    ignore_eos: bool = False
    model: str | None = None  # overrides the target's model name
    headers: dict[str, str] = Field(default_factory=dict)
    extra_body: dict[str, Any] = Field(default_factory=dict)  # merged last into the JSON body
    # identity for grouping (agentic sessions, turns) and for the run
    session_id: str | None = None
    turn: int | None = None
    lane: int | None = None
    warmup: bool = False
    expected_input_tokens: int | None = None  # by the client tokenizer, when known
    # When the request should have been sent (monotonic ns). ``None``: as soon as a slot is free
    # (closed loop); the runner then stamps the time the slot was freed.
    intended_send_ns: int | None = None


#: Most tokens one response may carry (no model's context comes near it).
MAX_RESPONSE_TOKENS = 2**24


class RequestRecord(_Model):
    """One raw per-request record. All ``*_ns`` are ``time.monotonic_ns()``."""

    request_id: str
    endpoint: Endpoint
    session_id: str | None = None
    turn: int | None = None
    lane: int | None = None
    worker: int | None = None
    warmup: bool = False
    trial: int = 0  # which trial of the point (``--trials N``: 0..N-1)
    max_tokens: int
    ignore_eos: bool = False
    expected_input_tokens: int | None = None

    intended_send_ns: int | None = None
    send_ns: int  # just before the HTTP request was written
    headers_ns: int | None = None  # response status line + headers received
    first_byte_ns: int | None = None  # first body bytes received
    first_token_ns: int | None = None  # first chunk carrying >= 1 generated token
    last_token_ns: int | None = None  # last chunk carrying >= 1 generated token
    # reasoning streams only (``delta.reasoning_content`` / ``delta.reasoning``; left out otherwise): the first
    # chunk carrying an answer (non-reasoning) token, and the reasoning tokens streamed before and between
    first_content_ns: int | None = Field(None, exclude_if=lambda v: v is None)
    reasoning_tokens: int | None = Field(None, exclude_if=lambda v: v is None)
    end_ns: int  # body fully received (or the failure was detected)

    # content chunks: one entry per SSE event that carried >= 1 generated token
    chunk_ns: list[int] = Field(default_factory=list)
    chunk_tokens: list[int] = Field(default_factory=list)
    token_source: TokenSource | None = None  # how chunk_tokens were counted
    events: int = 0  # SSE data events received (incl. role-only, usage-only, [DONE])
    empty_events_before_first_token: int = 0  # choice-bearing events before the first token
    first_token_text_empty: bool | None = None  # first token's text decoded to ""

    prompt_tokens: int | None = None  # server usage
    completion_tokens: int | None = None  # server usage (final)
    client_tokens: int = 0  # sum(chunk_tokens)
    output_chars: int = 0
    finish_reason: str | None = None
    finish_count: int = 0

    http_status: int | None = None
    error_class: ErrorClass | None = None
    error_message: str | None = None

    @model_validator(mode="after")
    def _chunks_bounded(self) -> RequestRecord:
        """Read records are bounded before anything allocates by them (the metrics expand each chunk into its
        tokens): one time per chunk, each chunk at least one token, a response at most MAX_RESPONSE_TOKENS."""
        if len(self.chunk_ns) != len(self.chunk_tokens):
            raise ValueError(f"chunk_ns has {len(self.chunk_ns)} entries but chunk_tokens {len(self.chunk_tokens)}")
        if any(k < 1 for k in self.chunk_tokens):
            raise ValueError("chunk_tokens: every chunk carries at least one token")
        if sum(self.chunk_tokens) > MAX_RESPONSE_TOKENS:
            raise ValueError(f"chunk_tokens: {sum(self.chunk_tokens):,} tokens in one response (at most "
                             f"{MAX_RESPONSE_TOKENS:,})")
        return self

    @property
    def ok(self) -> bool:
        return self.error_class is None

    @property
    def output_tokens(self) -> int:
        """Generated tokens: the server's count when it gave one, else the client's."""
        return self.completion_tokens if self.completion_tokens is not None else self.client_tokens

    @classmethod
    def for_spec(
        cls,
        spec: RequestSpec,
        send_ns: int,
        end_ns: int,
        worker: int | None = None,
        error: tuple[ErrorClass, str] | None = None,
    ) -> RequestRecord:
        """A record carrying ``spec``'s identity and the send/end times (and ``(class, message)``
        when the request failed); the stream facts are filled in by the caller."""
        rec = cls(
            request_id=spec.request_id,
            endpoint=spec.endpoint,
            session_id=spec.session_id,
            turn=spec.turn,
            lane=spec.lane,
            worker=worker,
            warmup=spec.warmup,
            max_tokens=spec.max_tokens,
            ignore_eos=spec.ignore_eos,
            expected_input_tokens=spec.expected_input_tokens,
            intended_send_ns=spec.intended_send_ns,
            send_ns=send_ns,
            end_ns=end_ns,
        )
        if error is not None:
            rec.error_class, rec.error_message = error
        return rec

    @classmethod
    def cancelled(cls, spec: RequestSpec, send_ns: int, end_ns: int, worker: int | None = None) -> RequestRecord:
        return cls.for_spec(
            spec, send_ns, end_ns, worker, error=("cancelled", "run stopped while the request was in flight")
        )




def write_records(path: str | Path, records: Iterable[RequestRecord]) -> None:
    """Atomically write records as gzip JSON lines (one record per line)."""
    atomic.write_jsonl_gz(path, (r.model_dump(mode="json") for r in records))


def iter_records(path: str | Path) -> Iterator[RequestRecord]:
    """Records of a ``records.jsonl.gz``; a bad or truncated file is an InfxError naming file and line."""
    from infx import jsonio

    yield from jsonio.iter_models(path, RequestRecord, what="records file")


def read_records(path: str | Path) -> list[RequestRecord]:
    return list(iter_records(path))
