"""A small, safe expression language for recipe values.

``max(2 * conc, 128) * (1 + spec_tokens)`` is parsed with :mod:`ast` and evaluated by walking a
whitelist of nodes: numbers and strings, names bound to point fields, ``+ - * / // % **``, unary
``- + not``, comparisons, ``and``/``or``, ``x if c else y``, and calls to ``min``, ``max``, ``int``,
``ceil`` only. No attribute access, no subscripts, no Python ``eval``. Unknown names and
forbidden syntax raise :class:`ExprError` naming the problem; the recipe loader turns that into a
``FILE:LINE:COL`` diagnostic.
"""

from __future__ import annotations

import ast
import math
import operator
import warnings
from collections.abc import Mapping
from typing import Any

Value = int | float | bool | str

_BINOPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNOPS: dict[type, Any] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_CMPOPS: dict[type, Any] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCS: dict[str, Any] = {"min": min, "max": max, "int": int, "ceil": math.ceil}
_MAX_POW = 64  # keep ** from building astronomically large integers
#: Bounds on what an expression may build: its text (checked before ``ast.parse``), its nesting,
#: the integers (bits; ~308 digits, the float range) and strings its operators produce.
MAX_SOURCE = 2_000
MAX_DEPTH = 50
MAX_INT_BITS = 1_024
MAX_STR = 10_000


class ExprError(ValueError):
    pass


class Expr:
    """A parsed expression; ``names`` are the free variables it reads."""

    def __init__(self, source: str) -> None:
        self.source = source
        if len(source) > MAX_SOURCE:
            raise ExprError(f"expression is {len(source):,} characters long (at most {MAX_SOURCE:,}): "
                            f"{source[:40]!r}...")
        try:
            with warnings.catch_warnings():  # '1if x' warns on stderr: the verdict below is what counts
                warnings.simplefilter("ignore", SyntaxWarning)
                tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as exc:
            raise ExprError(f"invalid expression {source!r}: {exc.msg}") from None
        except (RecursionError, MemoryError, ValueError) as exc:  # too deep for the parser; NUL bytes
            raise ExprError(f"invalid expression {source!r}: {type(exc).__name__}") from None
        self._body = tree.body
        self.names: set[str] = set()
        _check_depth(self._body, source)
        self._check(self._body)

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, str, bool)) or node.value is None:
                raise ExprError(f"constant {node.value!r} is not allowed in {self.source!r}")
        elif isinstance(node, ast.Name):
            if node.id in _FUNCS:
                raise ExprError(f"'{node.id}' can only be called, in {self.source!r}")
            if node.id not in ("True", "False"):
                self.names.add(node.id)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise ExprError(f"operator {type(node.op).__name__} is not allowed in {self.source!r}")
            self._check(node.left)
            self._check(node.right)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
                raise ExprError(f"operator {type(node.op).__name__} is not allowed in {self.source!r}")
            self._check(node.operand)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                self._check(v)
        elif isinstance(node, ast.Compare):
            if any(type(op) not in _CMPOPS for op in node.ops):
                raise ExprError(f"only == != < <= > >= comparisons are allowed in {self.source!r}")
            self._check(node.left)
            for c in node.comparators:
                self._check(c)
        elif isinstance(node, ast.IfExp):
            self._check(node.test)
            self._check(node.body)
            self._check(node.orelse)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS:
                what = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
                raise ExprError(f"call to '{what}' is not allowed (only min, max, int, ceil) in {self.source!r}")
            if node.keywords:
                raise ExprError(f"keyword arguments are not allowed in {self.source!r}")
            if not node.args:
                raise ExprError(f"'{node.func.id}' needs arguments in {self.source!r}")
            for a in node.args:
                if isinstance(a, ast.Starred):
                    raise ExprError(f"'*' arguments are not allowed in {self.source!r}")
                self._check(a)
        elif isinstance(node, ast.Attribute):
            raise ExprError(f"attribute access is not allowed in {self.source!r}")
        elif isinstance(node, ast.Subscript):
            raise ExprError(f"subscripts are not allowed in {self.source!r}")
        else:
            raise ExprError(f"{type(node).__name__} is not allowed in {self.source!r}")

    def evaluate(self, env: Mapping[str, Value]) -> Value:
        unknown = sorted(n for n in self.names if n not in env)
        if unknown:
            known = ", ".join(sorted(env))
            raise ExprError(f"unknown name '{unknown[0]}' in {self.source!r} (known: {known})")
        return self._eval(self._body, env)

    def _eval(self, node: ast.AST, env: Mapping[str, Value]) -> Value:
        if isinstance(node, ast.Constant):
            return self._bounded(node.value)
        if isinstance(node, ast.Name):
            if node.id == "True":
                return True
            if node.id == "False":
                return False
            return env[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, env), self._eval(node.right, env)
            if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > _MAX_POW:
                raise ExprError(f"exponent {right} too large in {self.source!r}")
            self._presize(node.op, left, right)
            try:
                out = _BINOPS[type(node.op)](left, right)
            except (TypeError, ZeroDivisionError, OverflowError, ValueError, MemoryError) as exc:
                raise ExprError(f"cannot evaluate {self.source!r}: {exc}") from None
            return self._bounded(out)
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, env)
            if isinstance(node.op, ast.Not):
                return not v
            try:
                return self._bounded(_UNOPS[type(node.op)](v))
            except TypeError as exc:
                raise ExprError(f"cannot evaluate {self.source!r}: {exc}") from None
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                result: Value = True
                for operand in node.values:
                    result = self._eval(operand, env)
                    if not result:
                        return result
                return result
            result = False
            for operand in node.values:
                result = self._eval(operand, env)
                if result:
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, env)
            for op, comp in zip(node.ops, node.comparators, strict=True):
                right = self._eval(comp, env)
                try:
                    if not _CMPOPS[type(op)](left, right):
                        return False
                except TypeError as exc:
                    raise ExprError(f"cannot compare in {self.source!r}: {exc}") from None
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self._eval(node.body if self._eval(node.test, env) else node.orelse, env)
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            args = [self._eval(a, env) for a in node.args]
            try:
                out = _FUNCS[node.func.id](*args)
            except (TypeError, ValueError, OverflowError) as exc:
                raise ExprError(f"cannot evaluate {self.source!r}: {exc}") from None
            return self._bounded(out)
        raise ExprError(f"{type(node).__name__} is not allowed")  # pragma: no cover - _check rejects it

    def _presize(self, op: ast.operator, left: Any, right: Any) -> None:
        """Refuse an operation whose result would be too large to build, before building it."""
        big = False
        if isinstance(op, ast.Pow) and _is_int(left) and _is_int(right) and right > 0:
            big = (abs(left).bit_length() - 1) * right > MAX_INT_BITS
        elif isinstance(op, ast.Mult):
            if _is_int(left) and _is_int(right):
                big = abs(left).bit_length() + abs(right).bit_length() > 2 * MAX_INT_BITS + 2
            elif isinstance(left, str) and _is_int(right):
                big = len(left) * right > MAX_STR
            elif isinstance(right, str) and _is_int(left):
                big = len(right) * left > MAX_STR
        elif isinstance(op, ast.Mod) and isinstance(left, str):
            # printf-style widths and precisions ('%999999999d') build strings of that size
            big = any(len(w) > 4 for w in _digit_runs(left))
        elif isinstance(op, ast.Add) and isinstance(left, str) and isinstance(right, str):
            big = len(left) + len(right) > MAX_STR
        if big:
            raise ExprError(f"result too large in {self.source!r}")

    def _bounded(self, out: object) -> Value:
        """The value of an operation, refused when it is too large, not finite or not real."""
        if isinstance(out, bool):
            return out
        if isinstance(out, int):
            if out.bit_length() > MAX_INT_BITS:
                raise ExprError(f"integer result too large (over {MAX_INT_BITS} bits) in {self.source!r}")
            return out
        if isinstance(out, float):
            if not math.isfinite(out):
                raise ExprError(f"result is {out} (not a finite number) in {self.source!r}")
            return out
        if isinstance(out, str):
            if len(out) > MAX_STR:
                raise ExprError(f"string result too long (over {MAX_STR:,} characters) in {self.source!r}")
            return out
        if isinstance(out, complex):
            raise ExprError(f"result {out} is a complex number in {self.source!r}")
        # constants, names and the whitelisted operations only make the four kinds above
        raise ExprError(f"result {out!r} is not a number or a string in {self.source!r}")  # pragma: no cover


def _is_int(v: Any) -> bool:
    return isinstance(v, int)


def _digit_runs(text: str) -> list[str]:
    import re

    return re.findall(r"[0-9]+", text)


def _check_depth(body: ast.AST, source: str) -> None:
    """Refuse an expression nesting deeper than :data:`MAX_DEPTH` (the walkers recurse)."""
    stack = [(body, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ExprError(f"expression nests deeper than {MAX_DEPTH} levels: {source[:40]!r}")
        stack.extend((c, depth + 1) for c in ast.iter_child_nodes(node))


def evaluate(source: str, env: Mapping[str, Value]) -> Value:
    return Expr(source).evaluate(env)
