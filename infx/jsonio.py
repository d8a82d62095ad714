"""Bounded reading of JSON, JSONL and gzip inputs: one module for every JSON reader.

Anything read from disk (results, manifests, traces, agg files, eval files, telemetry files,
GitHub event files) is bad input until parsed. The standard library's readers fail on it in many
ways, each a traceback: ``JSONDecodeError``, ``RecursionError`` on deep nesting, ``ValueError``
past the 4,300-digit integer limit, ``UnicodeDecodeError``, ``zlib.error``/``BadGzipFile``/
``EOFError`` on a truncated ``.gz``, and a gzip bomb inflates whole into memory. Here each is one
:class:`~infx.diagnostics.InfxError` naming the file (and the line, where there is one), and the
bounds (size, inflated size, nesting depth, integer digits, non-finite numbers) are checked as
the data is read, so later stages only see sane values.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from infx.bounds import MAX_INT_DIGITS, line_of_long_digits
from infx.diagnostics import Diagnostic, InfxError

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

#: Largest JSON document (or inflated gzip stream) read whole.
MAX_BYTES = 512 * 2**20
#: Longest line of a JSONL file (one record; a whole agentic session fits in far less).
MAX_LINE = 64 * 2**20
#: Deepest nesting of arrays and objects (the data infx writes nests a few levels).
MAX_DEPTH = 100

_GZIP_ERRORS = (OSError, EOFError, zlib.error)


class _Refused(ValueError):
    """A bound was exceeded while parsing (raised inside the json hooks)."""


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"integer with {len(text):,} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > 400:
        raise _Refused(f"number written with {len(text):,} characters")
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text[:20]} is out of range (not finite)")
    return value


def _parse_constant(text: str) -> float:
    raise _Refused(f"{text} is not a number JSON allows")


def _too_deep(data: Any, max_depth: int) -> bool:
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return False


def decode(data: bytes, file: str, line: int | None = None) -> str:
    """UTF-8 text of ``data``; a bad byte is an InfxError at its line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = line if line is not None else data.count(b"\n", 0, exc.start) + 1
        raise InfxError(Diagnostic(f"not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be decoded",
                                   file, at)) from None


def loads(text: str | bytes, file: str, line: int | None = None, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse one JSON document with the module's bounds; ``line`` is the file line of a JSONL record."""
    if isinstance(text, bytes):
        text = decode(text, file, line)
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        if line is None:
            raise InfxError(Diagnostic(f"invalid JSON: {exc.msg}", file, exc.lineno, exc.colno)) from None
        # a JSONL record is one line: the error stays on it (past its end, the column means nothing)
        col = exc.colno if exc.lineno == 1 else None
        raise InfxError(Diagnostic(f"invalid JSON: {exc.msg}", file, line, col)) from None
    except _Refused as exc:
        at = line
        if at is None:  # name the line of the first over-long integer, when that is what it is
            at = line_of_long_digits(text)
        raise InfxError(Diagnostic(f"invalid JSON: {exc}", file, at)) from None
    except RecursionError:
        raise InfxError(Diagnostic(f"JSON nests deeper than {max_depth} levels", file, line)) from None
    except (ValueError, MemoryError) as exc:
        raise InfxError(Diagnostic(f"invalid JSON: {exc}", file, line)) from None
    if _too_deep(data, max_depth):
        raise InfxError(Diagnostic(f"JSON nests deeper than {max_depth} levels", file, line))
    return data


def _is_gzip(path: Path, head: bytes) -> bool:
    return path.suffix == ".gz" or head[:2] == b"\x1f\x8b"


def read_bytes(path: str | Path, *, max_bytes: int | None = None, what: str = "file") -> bytes:
    """The bytes of ``path`` (inflated when it is gzip), at most ``max_bytes`` (default :data:`MAX_BYTES`)."""
    p = Path(path)
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    try:
        with p.open("rb") as raw:
            head = raw.read(2)
            raw.seek(0)
            if _is_gzip(p, head):
                try:
                    with gzip.GzipFile(fileobj=raw) as gz:
                        data = gz.read(max_bytes + 1)
                except _GZIP_ERRORS as exc:
                    raise InfxError(Diagnostic(f"corrupt or truncated gzip {what}: {_gzip_reason(exc)}",
                                               str(p))) from None
                if len(data) > max_bytes:
                    raise InfxError(Diagnostic(f"gzip {what} inflates to more than {max_bytes / 2**20:,.0f} MiB",
                                               str(p)))
                return data
            data = raw.read(max_bytes + 1)
    except FileNotFoundError:
        raise InfxError(Diagnostic(f"{what} '{p}' does not exist", str(p))) from None
    except IsADirectoryError:
        raise InfxError(Diagnostic(f"{what} '{p}' is a directory", str(p))) from None
    except OSError as exc:
        raise InfxError(Diagnostic(f"cannot read {what} '{p}': {exc.strerror or exc}", str(p))) from None
    if len(data) > max_bytes:
        raise InfxError(Diagnostic(f"{what} is larger than {max_bytes / 2**20:,.0f} MiB", str(p)))
    return data


def read_text(path: str | Path, *, max_bytes: int | None = None, what: str = "file") -> str:
    """UTF-8 text of ``path`` (inflated when gzip), bounded; every failure is one InfxError."""
    return decode(read_bytes(path, max_bytes=max_bytes, what=what), str(path))


def load(path: str | Path, *, max_bytes: int | None = None, what: str = "file") -> Any:
    """Parse the JSON file (or gzip JSON file) at ``path`` with the module's bounds."""
    return loads(read_bytes(path, max_bytes=max_bytes, what=what), str(path))


def _gzip_reason(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the stream ends early"
    return str(exc) or type(exc).__name__


def lines(path: str | Path, *, max_bytes: int | None = None, max_line: int | None = None,
          what: str = "file") -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of each line of ``path`` (gzip inflated as it streams), bounded in
    line length and, for gzip, in inflated size (``max_bytes``, default 8x :data:`MAX_BYTES`)."""
    p = Path(path)
    limit = max_bytes if max_bytes is not None else 8 * MAX_BYTES
    max_line = MAX_LINE if max_line is None else max_line
    try:
        raw = p.open("rb")
    except FileNotFoundError:
        raise InfxError(Diagnostic(f"{what} '{p}' does not exist", str(p))) from None
    except OSError as exc:
        raise InfxError(Diagnostic(f"cannot read {what} '{p}': {exc.strerror or exc}", str(p))) from None
    with raw:
        head = raw.read(2)
        raw.seek(0)
        gz = _is_gzip(p, head)
        fh: io.BufferedIOBase = gzip.GzipFile(fileobj=raw) if gz else raw
        total = 0
        lineno = 0
        while True:
            lineno += 1
            try:
                line = fh.readline(max_line + 1)
            except _GZIP_ERRORS as exc:
                if not gz:
                    raise InfxError(Diagnostic(f"cannot read {what}: {exc}", str(p), lineno)) from None
                raise InfxError(Diagnostic(f"corrupt or truncated gzip {what}: {_gzip_reason(exc)}", str(p))) from None
            if not line:
                return
            if len(line) > max_line:
                raise InfxError(Diagnostic(f"line is longer than {max_line / 2**20:,.0f} MiB", str(p), lineno))
            total += len(line)
            if gz and total > limit:
                raise InfxError(Diagnostic(f"gzip {what} inflates to more than {limit / 2**20:,.0f} MiB",
                                           str(p), lineno))
            yield lineno, line


def iter_jsonl(path: str | Path, *, what: str = "file", **bounds: Any) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of a JSONL (or gzip JSONL) file."""
    file = str(path)
    for lineno, line in lines(path, what=what, **bounds):
        if line.strip():
            yield lineno, loads(line, file, lineno)


def iter_models(path: str | Path, model: type[M], *, what: str = "file") -> Iterator[M]:
    """Each non-blank line of a JSONL (or gzip JSONL) file validated as ``model``; a line that does not
    validate is an InfxError at its line."""
    from pydantic import ValidationError

    file = str(path)
    for lineno, data in iter_jsonl(path, what=what):
        try:
            yield model.model_validate(data)
        except ValidationError as exc:
            raise invalid(exc, file, lineno) from None


def invalid(exc: Any, file: str, line: int | None = None) -> InfxError:
    """A pydantic ``ValidationError`` of a JSON record as one InfxError at the record's line."""
    diags = []
    for err in exc.errors(include_url=False)[:5]:
        loc = tuple(err.get("loc", ()))
        diags.append(Diagnostic(str(err.get("msg", "invalid value")), file, line, None, loc))
    return InfxError(diags or [Diagnostic("invalid record", file, line)])
