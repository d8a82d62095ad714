"""Strict YAML loading that remembers where every node came from.

PyYAML's ``safe_load`` silently keeps the last of two equal keys and forgets positions.
:func:`load_yaml` composes the node tree with libyaml when available (CSafeLoader),
rejects duplicate keys, and returns plain Python data plus a position map from
key paths to ``(line, col)`` (1-based), so later validation errors can name ``file:line:col``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from infx.diagnostics import Diagnostic, InfxError, PathElem

try:  # libyaml is ~10x faster than the pure-Python parser
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - wheels ship libyaml
    _Loader = yaml.SafeLoader

Pos = tuple[int, int]


@dataclass
class YamlSource:
    """Parsed YAML data with the source position of every node."""

    file: str
    data: Any
    positions: dict[tuple[PathElem, ...], Pos] = field(default_factory=dict)
    #: Position of the *key* of every mapping entry (``positions`` holds the value's).
    key_positions: dict[tuple[PathElem, ...], Pos] = field(default_factory=dict)

    def locate(self, path: Sequence[PathElem]) -> tuple[tuple[PathElem, ...], Pos]:
        """Deepest existing prefix of ``path`` and its position.

        Elements that do not exist in the data (pydantic's union tags, a missing field's
        name) are skipped, so a ``missing`` error points at the enclosing mapping.
        """
        node = self.data
        found: list[PathElem] = []
        for elem in path:
            if isinstance(node, dict) and elem in node:
                node = node[elem]
                found.append(elem)
            elif isinstance(node, list) and isinstance(elem, int) and 0 <= elem < len(node):
                node = node[elem]
                found.append(elem)
        key = tuple(found)
        return key, self.positions.get(key, (1, 1))

    def diag(self, path: Sequence[PathElem], message: str, severity: str = "error") -> Diagnostic:
        _, (line, col) = self.locate(path)
        return Diagnostic(message, self.file, line, col, tuple(path), severity)  # type: ignore[arg-type]

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


def _pydantic_message(err: dict[str, Any], loc: tuple, found: tuple) -> str:
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


def _walk(node: yaml.Node, path: tuple, pos: dict, loader: Any, file: str, kpos: dict | None = None) -> Any:
    mark = node.start_mark
    pos[path] = (mark.line + 1, mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        first: dict[Any, Any] = {}
        for knode, vnode in node.value:
            key = _scalar(knode, loader) if isinstance(knode, yaml.ScalarNode) else loader.construct_object(knode, deep=True)
            try:
                hash(key)
            except TypeError:
                raise InfxError(Diagnostic("mapping key must be a scalar", file, knode.start_mark.line + 1, knode.start_mark.column + 1, path)) from None
            if key in out:
                fl = first[key]
                raise InfxError(
                    Diagnostic(
                        f"duplicate key '{key}' (first defined at line {fl})",
                        file, knode.start_mark.line + 1, knode.start_mark.column + 1, path + (key,),
                    )
                )
            first[key] = knode.start_mark.line + 1
            if kpos is not None:
                kpos[path + (key,)] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
            out[key] = _walk(vnode, path + (key,), pos, loader, file, kpos)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(v, path + (i,), pos, loader, file, kpos) for i, v in enumerate(node.value)]
    return _scalar(node, loader)


_SCALAR_MEMO: dict[tuple[str, str], Any] = {}
_IMMUTABLE = (str, int, float, bool, type(None))


def _scalar(node: yaml.Node, loader: Any) -> Any:
    """Construct a scalar; immutable results are memoised by (tag, text), since catalogs repeat them a lot."""
    memo_key = (node.tag, node.value)
    try:
        return _SCALAR_MEMO[memo_key]
    except KeyError:
        pass
    value = loader.construct_object(node)
    if type(value) in _IMMUTABLE and len(_SCALAR_MEMO) < 100_000:
        _SCALAR_MEMO[memo_key] = value
    return value


def parse_yaml(text: str | bytes, file: str) -> YamlSource:
    """Parse YAML text strictly. Syntax errors and duplicate keys raise :class:`InfxError`."""
    loader = _Loader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
            problem = exc.problem or exc.context or "invalid YAML"
            raise InfxError(Diagnostic(f"YAML syntax error: {problem}", file, line, col)) from None
        except yaml.YAMLError as exc:
            raise InfxError(Diagnostic(f"YAML error: {exc}", file)) from None
        pos: dict[tuple, Pos] = {}
        kpos: dict[tuple, Pos] = {}
        data = None if root is None else _walk(root, (), pos, loader, file, kpos)
        return YamlSource(file, data, pos, kpos)
    finally:
        loader.dispose()


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
