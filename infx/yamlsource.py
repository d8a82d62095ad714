"""Strict YAML loading that remembers where every node came from.

PyYAML's ``safe_load`` silently keeps the last of two equal keys and forgets positions.
:func:`load_yaml` rejects duplicate keys and returns plain Python data plus a position map from
key paths to ``(line, col)`` (1-based), so later validation errors can name ``file:line:col``.

Two paths give the same result. The fast path builds the data straight from libyaml's event
stream (no node tree, no resolver call per node: a plain scalar is resolved and constructed by
PyYAML's own SafeLoader once per distinct text, then memoised), recording positions as it goes.
Anything outside the plain-tree subset (anchors/aliases, explicit tags, merge keys, non-scalar
keys, several documents), any duplicate key and any syntax error sends the text down the full
path (compose a node tree with libyaml, then walk it), which yields the exact data or error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import yaml
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

from infx.bounds import int_in_range
from infx.diagnostics import Diagnostic, InfxError, PathElem, Severity

if TYPE_CHECKING:  # pydantic is only needed by callers that validate
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails

try:  # libyaml is ~10x faster than the pure-Python parser
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - wheels ship libyaml
    _Loader = yaml.SafeLoader

Pos = tuple[int, int]
#: Where a node sits: the keys and list indices from the root (a YAML key may be any scalar).
KeyPath = tuple[PathElem, ...]


@dataclass
class YamlSource:
    """Parsed YAML data with the source position of every node."""

    file: str
    data: Any
    positions: dict[KeyPath, Pos] = field(default_factory=dict)
    #: Position of the *key* of every mapping entry (``positions`` holds the value's).
    key_positions: dict[KeyPath, Pos] = field(default_factory=dict)

    def locate(self, path: Sequence[PathElem]) -> tuple[KeyPath, Pos]:
        """Deepest existing prefix of ``path`` and its position.

        Elements that do not exist in the data (pydantic's union tags, a missing field's
        name) are skipped, so a ``missing`` error points at the enclosing mapping.
        """
        node = self.data
        found: list[PathElem] = []
        for elem in path:
            if isinstance(node, list):
                if not (isinstance(elem, int) and 0 <= elem < len(node)):
                    continue
            elif not (isinstance(node, dict) and elem in node):
                continue
            node = node[elem]
            found.append(elem)
        key = tuple(found)
        return key, self.positions.get(key, (1, 1))

    def diag(self, path: Sequence[PathElem], message: str, severity: Severity = "error") -> Diagnostic:
        _, (line, col) = self.locate(path)
        return Diagnostic(message, self.file, line, col, tuple(path), severity)

    def diags_from_validation(
        self, exc: ValidationError, base: Sequence[PathElem] = ()
    ) -> list[Diagnostic]:
        """One diagnostic per pydantic error, each pointing at the offending node."""
        out = []
        for err in exc.errors(include_url=False):
            loc = tuple(base) + tuple(err["loc"])
            # A validator may name the sub-key it is about (``infx.catalog.schema.At``).
            sub = getattr((err.get("ctx") or {}).get("error"), "infx_subpath", ())
            loc += tuple(sub)
            found, (line, col) = self.locate(loc)
            if err.get("type") == "extra_forbidden" and found in self.key_positions:
                line, col = self.key_positions[found]
            msg = _pydantic_message(err, loc, found)
            clean = found
            if err.get("type") in ("missing", "extra_forbidden") and loc and loc[-1] not in found[-1:]:
                clean = found + (loc[-1],)
            out.append(Diagnostic(msg, self.file, line, col, clean))
        return out


def _pydantic_message(err: ErrorDetails, loc: KeyPath, found: KeyPath) -> str:
    kind = err.get("type", "")
    msg = err.get("msg", "invalid value")
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    elif msg.startswith("Assertion failed, "):
        msg = msg[len("Assertion failed, "):]
    if kind == "extra_forbidden":
        return f"unknown key '{loc[-1]}' (not allowed here)"
    if kind == "missing":
        return f"missing required field '{loc[-1]}'"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping, got {_describe(err.get('input'))}"
    if kind == "list_type":
        return f"expected a list, got {_describe(err.get('input'))}"
    if "input" in err and kind not in ("value_error", "assertion_error") and not isinstance(err["input"], (dict, list)):
        return f"{msg}, got {err['input']!r}"
    return msg


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {value!r}"


# ----------------------------------------------------------------------------------------------
# fast path: data and positions straight from the event stream


class _Fallback(Exception):
    """The fast path met something it leaves to the full path (which gives the exact answer)."""


#: Plain-scalar text -> its constructed value (immutable types only; process-wide, bounded).
_PLAIN_MEMO: dict[str, Any] = {}
_MEMO_LIMIT = 100_000
_MISS = object()
#: Plain texts the resolver maps to the merge (``<<``) and value (``=``) tags: full path only.
_SPECIAL_PLAIN = frozenset({"<<", "="})


def _fast(text: str | bytes) -> tuple[Any, dict[KeyPath, Pos], dict[KeyPath, Pos]]:
    """Data, positions and key positions of a plain single-document tree; :class:`_Fallback` otherwise.

    Equal to the full path's result by construction: the same libyaml events, every plain scalar
    resolved and constructed by the same SafeLoader, a non-plain untagged scalar is the string
    itself (PyYAML's ``str`` default tag), and a node's position is its start event's mark, as in
    the composed node tree.
    """
    loader = _Loader(text)
    try:
        get = loader.get_event
        memo = _PLAIN_MEMO
        miss = _MISS
        pos: dict[KeyPath, Pos] = {}
        kpos: dict[KeyPath, Pos] = {}

        def plain(value: str) -> Any:
            if value in _SPECIAL_PLAIN:
                raise _Fallback
            tag = loader.resolve(ScalarNode, value, (True, False))
            out = loader.construct_object(ScalarNode(tag, value))
            if _number_problem(out):
                raise _Fallback  # the full path reports it at its line
            if type(out) in _IMMUTABLE and len(memo) < _MEMO_LIMIT:
                memo[value] = out
            return out

        def node(ev: Any, path: KeyPath) -> Any:
            cls = ev.__class__
            if cls is ScalarEvent:
                if ev.tag is not None or ev.anchor is not None:
                    raise _Fallback
                m = ev.start_mark
                pos[path] = (m.line + 1, m.column + 1)
                if ev.implicit[0]:
                    value = memo.get(ev.value, miss)
                    return plain(ev.value) if value is miss else value
                return ev.value
            if cls is MappingStartEvent:
                if ev.tag is not None or ev.anchor is not None or len(path) >= MAX_DEPTH:
                    raise _Fallback
                m = ev.start_mark
                pos[path] = (m.line + 1, m.column + 1)
                out: dict[Any, Any] = {}
                while True:
                    k = get()
                    kcls = k.__class__
                    if kcls is MappingEndEvent:
                        return out
                    if kcls is not ScalarEvent or k.tag is not None or k.anchor is not None:
                        raise _Fallback
                    if k.implicit[0]:
                        key = memo.get(k.value, miss)
                        if key is miss:
                            key = plain(k.value)
                    else:
                        key = k.value
                    if key in out:
                        raise _Fallback  # the full path reports it with both positions
                    p = path + (key,)
                    m = k.start_mark
                    kpos[p] = (m.line + 1, m.column + 1)
                    out[key] = node(get(), p)
            if cls is SequenceStartEvent:
                if ev.tag is not None or ev.anchor is not None or len(path) >= MAX_DEPTH:
                    raise _Fallback
                m = ev.start_mark
                pos[path] = (m.line + 1, m.column + 1)
                seq: list[Any] = []
                append = seq.append
                i = 0
                while True:
                    item = get()
                    if item.__class__ is SequenceEndEvent:
                        return seq
                    append(node(item, path + (i,)))
                    i += 1
            raise _Fallback  # an alias

        get()  # StreamStartEvent
        ev = get()
        if ev.__class__ is StreamEndEvent:
            return None, pos, kpos
        data = node(get(), ())  # after DocumentStartEvent
        get()  # DocumentEndEvent
        if get().__class__ is not StreamEndEvent:
            raise _Fallback  # several documents: the full path reports it
        return data, pos, kpos
    finally:
        loader.dispose()


# ----------------------------------------------------------------------------------------------
# bounds: alias expansion and nesting depth, checked on the event stream before composing

#: Deepest nesting of mappings and sequences accepted (configs nest a dozen levels at most).
MAX_DEPTH = 100
#: Most nodes that aliases (and merge keys) may bring in, all together: an alias bomb's
#: ``[*a, *a, ...]`` tower expands exponentially, and every reader walks the expanded tree.
MAX_ALIAS_NODES = 100_000


def _check_bounds(text: str | bytes, file: str) -> None:
    """Reject a document nesting deeper than :data:`MAX_DEPTH`, expanding aliases past
    :data:`MAX_ALIAS_NODES`, or holding an alias inside the node it names (a cycle, which every
    reader would walk forever), naming the line of the offending collection or alias.

    One linear pass over libyaml's events: each anchored node's expanded size is recorded when
    it ends, and every alias adds that size to the running total and to its enclosing nodes.
    """
    loader = _Loader(text)
    try:
        sizes: dict[str, int] = {}
        stack: list[list[Any]] = []  # [anchor, expanded size so far]
        expanded = 0
        while True:
            try:
                ev = loader.get_event()
            except yaml.YAMLError:
                return  # the composer reports syntax errors exactly
            if ev is None or isinstance(ev, StreamEndEvent):
                return
            if isinstance(ev, CollectionStartEvent):
                if len(stack) >= MAX_DEPTH:
                    raise InfxError(Diagnostic(f"YAML nests deeper than {MAX_DEPTH} levels",
                                               file, *_line_col(ev.start_mark)))
                stack.append([ev.anchor, 1])
            elif isinstance(ev, CollectionEndEvent):
                anchor, size = stack.pop()
                if anchor is not None:
                    sizes[anchor] = size
                if stack:
                    stack[-1][1] += size
            elif isinstance(ev, (ScalarEvent, AliasEvent)):
                size = 1
                if isinstance(ev, AliasEvent):
                    if any(open_anchor == ev.anchor for open_anchor, _ in stack):
                        raise InfxError(Diagnostic(
                            f"YAML alias '*{ev.anchor}' refers to a node that contains it (a cycle)",
                            file, *_line_col(ev.start_mark)))
                    size = sizes.get(ev.anchor, 1) if ev.anchor is not None else 1
                    expanded += size
                    if expanded > MAX_ALIAS_NODES:
                        raise InfxError(Diagnostic(
                            f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} nodes "
                            f"(an alias bomb?) at alias '*{ev.anchor}'", file, *_line_col(ev.start_mark)))
                elif ev.anchor is not None:
                    sizes[ev.anchor] = 1
                if stack:
                    stack[-1][1] += size
    finally:
        loader.dispose()


# ----------------------------------------------------------------------------------------------
# full path: compose a node tree, then walk it


_PLAIN_COLLECTION_TAGS = frozenset({"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})


def _walk(node: yaml.Node, path: KeyPath, pos: dict[KeyPath, Pos], loader: Any, file: str,
          kpos: dict[KeyPath, Pos] | None = None) -> Any:
    mark = node.start_mark
    pos[path] = (mark.line + 1, mark.column + 1)
    if not isinstance(node, yaml.ScalarNode) and node.tag not in _PLAIN_COLLECTION_TAGS:
        # PyYAML's SafeLoader would build a map or list and drop the tag silently
        raise InfxError(Diagnostic(f"YAML tag '{node.tag}' is not supported on a "
                                   f"{'mapping' if isinstance(node, yaml.MappingNode) else 'list'}",
                                   file, mark.line + 1, mark.column + 1, path))
    if isinstance(node, yaml.MappingNode):
        # Keys written in this mapping must be unique; keys brought in by a merge (``<<``) may be
        # overridden by a written one, as in PyYAML (flatten_mapping puts merged pairs first).
        written = {id(k) for k, _ in node.value if k.tag != _MERGE_TAG}
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        first: dict[Any, Any] = {}
        for knode, vnode in node.value:
            if isinstance(knode, yaml.ScalarNode):
                key = _scalar(knode, loader, file, path)
            else:
                key = loader.construct_object(knode, deep=True)
            try:
                hash(key)
            except TypeError:
                raise InfxError(Diagnostic("mapping key must be a scalar", file, *_line_col(knode.start_mark),
                                           path)) from None
            if key in out and id(knode) in written and first[key][1]:
                fl = first[key][0]
                raise InfxError(
                    Diagnostic(
                        f"duplicate key '{key}' (first defined at line {fl})",
                        file, knode.start_mark.line + 1, knode.start_mark.column + 1, path + (key,),
                    )
                )
            first[key] = (knode.start_mark.line + 1, id(knode) in written)
            if kpos is not None:
                kpos[path + (key,)] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
            out[key] = _walk(vnode, path + (key,), pos, loader, file, kpos)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(v, path + (i,), pos, loader, file, kpos) for i, v in enumerate(node.value)]
    return _scalar(node, loader, file, path)


_MERGE_TAG = "tag:yaml.org,2002:merge"
_SCALAR_MEMO: dict[tuple[str, str], Any] = {}
_IMMUTABLE = (str, int, float, bool, type(None))


def _scalar(node: yaml.Node, loader: Any, file: str = "", path: KeyPath = ()) -> Any:
    """Construct a scalar; immutable results are memoised by (tag, text), since catalogs repeat them a lot."""
    memo_key = (node.tag, node.value)
    try:
        return _SCALAR_MEMO[memo_key]
    except KeyError:
        pass
    try:
        value = loader.construct_object(node)
    except (ValueError, IndexError, TypeError, OverflowError, KeyError) as exc:  # e.g. a timestamp-shaped
        # plain scalar that is no date (2020-13-45), an empty ``!!int``
        mark = node.start_mark
        raise InfxError(Diagnostic(f"invalid {node.tag.rsplit(':', 1)[-1]} value {node.value!r}: {exc}",
                                   file, mark.line + 1, mark.column + 1, path)) from None
    problem = _number_problem(value)
    if problem:
        mark = node.start_mark
        raise InfxError(Diagnostic(problem, file, mark.line + 1, mark.column + 1, path))
    if type(value) in _IMMUTABLE and len(_SCALAR_MEMO) < _MEMO_LIMIT:
        _SCALAR_MEMO[memo_key] = value
    return value




def _number_problem(value: Any) -> str | None:
    """Why a YAML number is refused in every input (not finite, or an integer past 64 bits), or None."""
    if type(value) is int:
        if not int_in_range(value):
            return f"integer {str(value)[:20]}... is out of range (beyond 64 bits)"
    elif type(value) is float and not math.isfinite(value):
        return f"number {value} is not finite (inf and NaN are not accepted)"
    return None


class _Mark(Protocol):
    """Where libyaml met a node or an error (PyYAML's ``Mark`` or libyaml's own): 0-based."""

    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...


def _line_col(mark: _Mark | None) -> tuple[int | None, int | None]:
    """1-based (line, column) of a libyaml mark; (None, None) where there is none."""
    return (mark.line + 1, mark.column + 1) if mark is not None else (None, None)


def _syntax_error(exc: yaml.YAMLError, file: str) -> InfxError:
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = exc.problem or exc.context or "invalid YAML"
        return InfxError(Diagnostic(f"YAML syntax error: {problem}", file,
                                    *_line_col(exc.problem_mark or exc.context_mark)))
    return InfxError(Diagnostic(f"YAML error: {exc}", file))


def _parse_full(text: str | bytes, file: str) -> YamlSource:
    _check_bounds(text, file)
    loader = _Loader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise _syntax_error(exc, file) from None
        pos: dict[KeyPath, Pos] = {}
        kpos: dict[KeyPath, Pos] = {}
        try:
            data = None if root is None else _walk(root, (), pos, loader, file, kpos)
        except yaml.MarkedYAMLError as exc:  # an unknown tag, a bad merge key, a bad !!binary...
            raise InfxError(Diagnostic(f"YAML error: {exc.problem or exc.context or 'cannot construct value'}",
                                       file, *_line_col(exc.problem_mark or exc.context_mark))) from None
        return YamlSource(file, data, pos, kpos)
    finally:
        loader.dispose()


def parse_yaml(text: str | bytes, file: str) -> YamlSource:
    """Parse YAML text strictly. Syntax errors and duplicate keys raise :class:`InfxError`."""
    try:
        data, pos, kpos = _fast(text)
    except Exception:
        return _parse_full(text, file)
    return YamlSource(file, data, pos, kpos)


def load_yaml(path: str | Path) -> YamlSource:
    """Read and parse a YAML file strictly; a missing or unreadable file is an InfxError."""
    p = Path(path)
    try:
        text = p.read_bytes()
    except FileNotFoundError:
        raise InfxError(Diagnostic(f"file '{path}' does not exist", str(path))) from None
    except OSError as exc:
        raise InfxError(Diagnostic(f"cannot read '{path}': {exc.strerror}", str(path))) from None
    return parse_yaml(text, str(path))
