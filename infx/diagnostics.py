"""Diagnostics that people can act on: ``FILE:LINE:COL: error: MESSAGE (at key.path[2].field)``.

Every stage reports bad input through :class:`InfxError`, which carries one or more
:class:`Diagnostic` records. The CLI prints them one per line on stderr and exits 2,
without a traceback (see :func:`exit_on_error`).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, ParamSpec, TypeVar

Severity = Literal["error", "warning"]
PathElem = str | int

EXIT_BAD_INPUT = 2


def format_path(path: Sequence[PathElem]) -> str:
    """``("a", 2, "b")`` -> ``a[2].b``."""
    out = ""
    for elem in path:
        if isinstance(elem, int):
            out += f"[{elem}]"
        else:
            out += ("." if out else "") + str(elem)
    return out


@dataclass(frozen=True)
class Diagnostic:
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    path: tuple[PathElem, ...] = ()
    severity: Severity = "error"

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
                if self.col is not None:
                    where += f":{self.col}"
            where += ": "
        at = f" (at {format_path(self.path)})" if self.path else ""
        return f"{where}{self.severity}: {self.message}{at}"


@dataclass
class InfxError(Exception):
    """Bad input. Holds every diagnostic found, not only the first."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __init__(self, diagnostics: Iterable[Diagnostic] | Diagnostic | str):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(diagnostics)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics)


_verbose = False


def set_verbose(on: bool) -> None:
    """``--verbose``: long warnings list every item, one per line."""
    global _verbose
    _verbose = on


def list_message(summary: str, items: Sequence[str], *, verbose: bool | None = None, shown: int = 3) -> str:
    """A warning about many items. Brief (the default): the summary, the first ``shown`` items and how many
    more, on one line. Verbose: the summary, then every item on a line of its own."""
    if _verbose if verbose is None else verbose:
        return summary + ":" + "".join(f"\n  {item}" for item in items)
    head = "; ".join(items[:shown])
    more = len(items) - shown
    return f"{summary}: {head}" + (f"; ... and {more} more (--verbose lists them all)" if more > 0 else "")


def warn(diag: Diagnostic | str) -> None:
    """Print a warning diagnostic on stderr."""
    if isinstance(diag, str):
        diag = Diagnostic(diag, severity="warning")
    print(str(diag), file=sys.stderr)


P = ParamSpec("P")
R = TypeVar("R")


def exit_on_error(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator for CLI entry points: InfxError -> diagnostics on stderr, exit 2, no traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except InfxError as exc:
            for diag in exc.diagnostics:
                print(str(diag), file=sys.stderr)
            raise SystemExit(EXIT_BAD_INPUT) from None

    return wrapper
