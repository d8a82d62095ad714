"""The "weka" agentic trace format: one coding-agent session per JSONL line.

A trace is ``{id, models, block_size, hash_id_scope, requests}``. Each entry of ``requests`` is
either a normal model call (``type: "n"``) or a subagent (``type: "subagent"``) that holds its own
nested requests. Consecutive subagent entries form a *stretch*; the distinct agents of one stretch
run in parallel (that is the fan-out), and the main session continues once all of them are done.

``hash_ids`` name the prompt's ``block_size``-token blocks: two requests that share a leading run
of ids share that much prompt prefix. With ``hash_id_scope: "local"`` the ids mean something only
inside one trace.

:func:`load_traces` validates a file and reports every bad line as
``FILE:LINE: error: MESSAGE (at requests[3].in)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError
from pydantic_core import ErrorDetails

from infx import jsonio
from infx.atomic import write_text
from infx.diagnostics import Diagnostic, InfxError

DEFAULT_BLOCK_SIZE = 64
MAX_DIAGNOSTICS = 50


class _Model(BaseModel):
    # Real traces carry extra bookkeeping fields; keep them, validate what replay needs.
    model_config = ConfigDict(allow_inf_nan=False, extra="allow", populate_by_name=True)


#: Most tokens one trace request may state (input or output).
MAX_TOKENS = 100_000_000


class TraceRequest(_Model):
    """One model call of the session (``type: "n"``)."""

    t: float = Field(ge=0, description="seconds since the start of the trace")
    type: Literal["n"] = "n"
    model: str | None = None
    # bounded: the replay builds prompts of these sizes (no context is 100M tokens)
    in_: int = Field(alias="in", ge=0, le=MAX_TOKENS, description="input (prompt) tokens")
    out: int = Field(ge=0, le=MAX_TOKENS, description="output tokens")
    hash_ids: list[Annotated[int, Field(ge=0, le=2**63 - 1)]]
    api_time: float | None = Field(None, ge=0, description="recorded service time, seconds")

    @property
    def end_t(self) -> float:
        return self.t + (self.api_time or 0.0)


class SubagentEntry(_Model):
    """A subagent the main agent started; its calls are in ``requests``."""

    t: float = Field(ge=0)
    type: Literal["subagent"] = "subagent"
    agent_id: str
    subagent_type: str
    duration_ms: float = Field(ge=0)
    total_tokens: int = Field(ge=0, le=2**63 - 1)
    status: str
    requests: list[TraceEntry] = Field(min_length=1)
    models: list[str] = Field(default_factory=list)

    @property
    def end_t(self) -> float:
        return self.t + self.duration_ms / 1000.0

    def flat_requests(self) -> Iterator[TraceRequest]:
        for r in self.requests:
            if isinstance(r, SubagentEntry):
                yield from r.flat_requests()
            else:
                yield r


def _entry_tag(v: Any) -> str | None:
    if isinstance(v, dict):
        return v.get("type")
    return getattr(v, "type", None)


TraceEntry = Annotated[
    Annotated[TraceRequest, Tag("n")] | Annotated[SubagentEntry, Tag("subagent")],
    Discriminator(
        _entry_tag,
        custom_error_type="entry_type",
        custom_error_message="each request needs a 'type' of \"n\" or \"subagent\"",
    ),
]
SubagentEntry.model_rebuild()


class Trace(_Model):
    """One agent session."""

    id: str
    models: list[str] = Field(default_factory=list)
    block_size: int = Field(DEFAULT_BLOCK_SIZE, gt=0)
    hash_id_scope: Literal["local", "global"] = "local"
    requests: list[TraceEntry] = Field(min_length=1)

    def all_requests(self) -> Iterator[TraceRequest]:
        """Every model call, subagents' included, in file order."""
        for e in self.requests:
            if isinstance(e, SubagentEntry):
                yield from e.flat_requests()
            else:
                yield e

    def main_requests(self) -> list[TraceRequest]:
        return [e for e in self.requests if isinstance(e, TraceRequest)]

    def dump_line(self) -> str:
        return json.dumps(self.model_dump(by_alias=True, exclude_none=True), separators=(",", ":"))


_TAGS = {"n", "subagent"}


def _clean_loc(loc: tuple[Any, ...]) -> tuple[str | int, ...]:
    """Drop pydantic's union-tag elements (``requests.3.n.in`` -> ``requests[3].in``)."""
    out: list[str | int] = []
    for i, elem in enumerate(loc):
        if isinstance(elem, str) and elem in _TAGS and i > 0 and isinstance(loc[i - 1], int):
            continue
        out.append(elem)
    return tuple(out)


def _message(err: ErrorDetails, loc: tuple[str | int, ...]) -> str:
    kind = err.get("type", "")
    msg = str(err.get("msg", "invalid value"))
    if kind == "missing":
        return f"missing required field '{loc[-1]}'" if loc else "missing required field"
    if kind == "entry_type":
        got = _entry_tag(err.get("input"))
        if got is None:
            return "request has no 'type' (expected \"n\" or \"subagent\")"
        return f"unknown request type {got!r} (expected \"n\" or \"subagent\")"
    if kind == "too_short" and loc and loc[-1] == "requests":
        return "no requests (a subagent or trace needs at least one)"
    if "input" in err and not isinstance(err["input"], (dict, list)):
        return f"{msg}, got {err['input']!r}"
    return msg


def _diags_for(exc: ValidationError, file: str, line: int) -> list[Diagnostic]:
    out = []
    for err in exc.errors():
        loc = _clean_loc(tuple(err.get("loc", ())))
        out.append(Diagnostic(_message(err, loc), file, line, None, loc))
    return out


def parse_traces(lines: Iterable[str], file: str = "<traces>") -> list[Trace]:
    """Validate JSONL text. Collects every bad line (up to 50) into one :class:`InfxError`."""
    traces: list[Trace] = []
    diags: list[Diagnostic] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(lines, start=1):
        if len(diags) >= MAX_DIAGNOSTICS:
            break
        text = raw.strip()
        if not text:
            continue
        try:
            data = jsonio.loads(text, file, lineno)
        except InfxError as exc:
            diags.extend(exc.diagnostics)
            continue
        if not isinstance(data, dict):
            diags.append(Diagnostic(f"a trace line must be a JSON object, got {type(data).__name__}", file, lineno))
            continue
        try:
            trace = Trace.model_validate(data)
        except ValidationError as exc:
            diags.extend(_diags_for(exc, file, lineno))
            continue
        if trace.id in seen:
            diags.append(Diagnostic(f"duplicate trace id {trace.id!r} (first on line {seen[trace.id]})", file, lineno,
                                    None, ("id",)))
            continue
        seen[trace.id] = lineno
        traces.append(trace)
    if diags:
        raise InfxError(diags)
    if not traces:
        raise InfxError(Diagnostic("no traces in file", file))
    return traces


def load_traces(path: str | Path) -> list[Trace]:
    """Read and validate a weka-format ``traces.jsonl`` (``.gz`` accepted)."""
    p = Path(path)
    if not p.exists():
        raise InfxError(Diagnostic("trace file not found", str(path)))
    text = jsonio.read_text(p, what="trace file")  # gzip inflation, size and UTF-8 bounded
    return parse_traces(text.splitlines(), str(path))


def write_traces(path: str | Path, traces: Iterable[Trace]) -> None:
    write_text(path, "".join(t.dump_line() + "\n" for t in traces))
