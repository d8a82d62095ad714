"""One streaming OpenAI-compatible request -> one :class:`RequestRecord`. Never raises.

The hot path does as little as possible: it stamps ``time.monotonic_ns()`` on every body read
and keeps the raw bytes (:class:`_TimedReader`); SSE framing, JSON decoding and token counting
happen after the body has ended, in :mod:`infx.loadgen.sse` (same process, off the timing path).
This module is the transport: the request body, the keep-alive session, the timed body reader
and the classification of HTTP and connection errors.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from typing import Any, cast

import aiohttp
from pydantic import BaseModel, ConfigDict

from infx.loadgen.sse import StreamError, completion_error, one_line, parse_sse
from infx.records import ENDPOINT_PATHS, ErrorClass, RequestRecord, RequestSpec

_now = time.monotonic_ns

DEFAULT_READ_BUFSIZE = 4 * 1024 * 1024  # aiohttp's 64 KiB default collapses long-context streams


class Target(BaseModel):
    """Where and how to send: the server, the served model name, what to ask for in the stream."""

    model_config = ConfigDict(extra="forbid")

    base_url: str
    model: str
    stall_timeout_s: float = 120.0  # no byte at all for this long -> timeout_stall
    # the first request that stalls ends the run (no new request; those in flight are cancelled): the server
    # stopped answering, and every request after it would wait the stall timeout too (a sweep's points)
    stop_on_stall: bool = False
    total_timeout_s: float | None = 1800.0  # whole request -> timeout_total
    continuous_usage: bool = True  # stream_options.continuous_usage_stats (vLLM, TRT-LLM)
    token_ids: bool = False  # vLLM return_token_ids (exact per-chunk counts)
    api_key: str | None = None


def make_session(connections: int = 0, read_bufsize: int = DEFAULT_READ_BUFSIZE) -> aiohttp.ClientSession:
    """One keep-alive session for the whole run (``connections`` 0 = unlimited)."""
    connector = aiohttp.TCPConnector(limit=connections, limit_per_host=0, keepalive_timeout=300, ttl_dns_cache=None)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None),
        read_bufsize=read_bufsize,
        auto_decompress=False,
        skip_auto_headers=("Accept-Encoding",),
    )


def build_body(spec: RequestSpec, target: Target) -> dict[str, Any]:
    body: dict[str, Any] = {"model": spec.model or target.model}
    if spec.endpoint == "chat":
        body["messages"] = (spec.messages if spec.messages is not None
                            else [{"role": "user", "content": spec.prompt or ""}])
    else:
        body["prompt"] = spec.prompt if spec.prompt is not None else ""
    body["max_tokens"] = spec.max_tokens
    body["stream"] = True
    opts: dict[str, Any] = {"include_usage": True}
    if target.continuous_usage:
        opts["continuous_usage_stats"] = True
    body["stream_options"] = opts
    if spec.ignore_eos:
        body["ignore_eos"] = True
    if target.token_ids:
        body["return_token_ids"] = True
    body.update(spec.extra_body)
    return body


def _classify_status(status: int) -> ErrorClass:
    if status == 429:
        return "http_429"
    if 400 <= status < 500:
        return "http_4xx"
    if 500 <= status < 600:
        return "http_5xx"
    return "http_other"


async def stream_request(
    session: aiohttp.ClientSession,
    spec: RequestSpec,
    target: Target,
    *,
    worker: int | None = None,
) -> RequestRecord:
    """Send ``spec`` to ``target`` over ``session`` and record everything; never raises
    (except ``asyncio.CancelledError``, which callers turn into a ``cancelled`` record)."""
    path = ENDPOINT_PATHS[spec.endpoint]
    url = target.base_url.rstrip("/") + path
    try:
        payload = json.dumps(build_body(spec, target), separators=(",", ":")).encode()
    except (TypeError, ValueError) as exc:
        now = _now()
        return RequestRecord.for_spec(spec, now, now, worker,
                                      error=("client_error", f"cannot encode request body: {exc}"))
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if target.api_key:
        headers["Authorization"] = f"Bearer {target.api_key}"
    if spec.headers:
        headers.update(spec.headers)
    # sock_read: aiohttp fails the body when no byte came for stall_timeout_s; the total
    # deadline is ours (aiohttp's total timer does not cover _TimedReader.wait_eof).
    timeout = aiohttp.ClientTimeout(total=target.total_timeout_s, sock_read=target.stall_timeout_s)

    reads: list[tuple[int, bytes]] = []
    status: int | None = None
    headers_ns: int | None = None
    error: StreamError | None = None
    content_type = ""
    eof_ns: int | None = None
    send_ns = _now()
    deadline = None if target.total_timeout_s is None else send_ns + int(target.total_timeout_s * 1e9)
    try:
        async with session.post(url, data=payload, headers=headers, timeout=timeout) as resp:
            headers_ns = _now()
            status = resp.status
            if status != 200:
                try:
                    text = (await resp.content.read(4096)).decode("utf-8", "replace")
                except Exception:
                    text = ""
                error = (_classify_status(status), one_line(f"HTTP {status}: {text}"))
            else:
                content_type = resp.headers.get("Content-Type", "")
                eof_ns = await _read_body(resp.content, reads, headers_ns, deadline)
    except asyncio.CancelledError:
        raise
    except aiohttp.ConnectionTimeoutError as exc:
        error = ("connect_error", one_line(f"connect timeout: {exc}"))
    except aiohttp.ServerTimeoutError as exc:
        error = ("timeout_stall", f"no data for {target.stall_timeout_s:g} s" + (f" ({exc})" if str(exc) else ""))
    except TimeoutError:
        error = ("timeout_total", f"request exceeded {target.total_timeout_s:g} s")
    except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as exc:  # ClientErrors, but ours, not the connection's
        error = ("client_error", one_line(f"invalid URL {url!r}: {type(exc).__name__}: {exc}"))
    except aiohttp.ClientConnectorError as exc:
        error = ("connect_error", one_line(str(exc)))
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError, ConnectionError) as exc:
        error = ("connection_reset", one_line(f"{type(exc).__name__}: {exc}"))
    except aiohttp.ClientError as exc:
        error = ("connection_reset", one_line(f"{type(exc).__name__}: {exc}"))
    except Exception as exc:
        error = ("client_error", one_line(f"{type(exc).__name__}: {exc}"))
    end_ns = eof_ns if eof_ns is not None and error is None else _now()

    rec = RequestRecord.for_spec(spec, send_ns, end_ns, worker)
    rec.http_status = status
    rec.headers_ns = headers_ns
    if reads:
        rec.first_byte_ns = reads[0][0]
    if status == 200 and error is None and "text/event-stream" not in content_type:
        error = ("protocol_error", f"expected Content-Type text/event-stream, got {content_type or 'none'!r}")
    parse_error = parse_sse(reads, rec) if reads else None
    if error is None:
        error = parse_error
    if error is None:
        error = completion_error(rec, spec)
    if error is not None:
        rec.error_class, rec.error_message = error
    return rec


class _TimedReader(aiohttp.StreamReader):
    """Body reader that stamps every piece of body the HTTP parser hands over and keeps it,
    without waking the request's task (which waits for the end of the body). Stamping happens
    synchronously inside the transport's ``data_received``, i.e. at the socket read, and the
    per-chunk cost is one call instead of a task switch. Installed on a response's
    ``StreamReader`` by ``__class__`` assignment (same slots); the class is restored after."""

    __slots__ = ()
    # aiohttp declares a deque of body bytes; it holds (arrival_ns, bytes) pairs while this class is installed
    _buffer: deque[tuple[int, bytes]]  # type: ignore[assignment]  # the pairs this reader keeps, see above

    def feed_data(self, data: bytes, size: int = 0) -> bool:
        if data:
            self._buffer.append((_now(), data))
            self.total_bytes += len(data)
        return False

    def feed_eof(self) -> None:
        self._buffer.append((_now(), b""))  # the end-of-body stamp
        super().feed_eof()

    def begin_http_chunk_receiving(self) -> None:
        return None

    def end_http_chunk_receiving(self) -> None:
        return None


_FAST_READER = True  # set False to fall back to the plain readany loop (debugging)


async def _read_body(
    content: aiohttp.StreamReader, reads: list[tuple[int, bytes]], headers_ns: int, deadline: int | None
) -> int | None:
    """Collect ``(arrival_ns, bytes)`` for the whole body into ``reads``; return the time the
    end of the body was parsed (None if unknown). Raises aiohttp's payload / timeout errors, and
    ``TimeoutError`` past ``deadline``."""
    if _FAST_READER and type(content) is aiohttp.StreamReader:
        try:
            pending = list(content._buffer)  # body bytes parsed together with the headers
            content._buffer.clear()
            content._size = 0
            content.__class__ = _TimedReader
        except (TypeError, AttributeError):
            pass
        else:
            reads.extend((headers_ns, b) for b in pending if b)
            try:
                if deadline is None:
                    await content.wait_eof()
                else:
                    async with asyncio.timeout_at(asyncio.get_running_loop().time() + (deadline - _now()) / 1e9):
                        await content.wait_eof()
            finally:
                eof_ns = None
                for t, b in cast("deque[tuple[int, bytes]]", content._buffer):  # filled by _TimedReader
                    if b:
                        reads.append((t, b))
                    else:
                        eof_ns = t
                content._buffer.clear()
                content.__class__ = aiohttp.StreamReader
            failed = content.exception()
            if failed is not None:
                raise failed
            return eof_ns
    readany = content.readany
    append = reads.append
    while True:
        data = await readany()
        if not data:
            return _now()
        append((_now(), data))
