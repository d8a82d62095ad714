"""Runtime failures: something that ran and did not work (an engine that never became ready, a deployment
role that died, a launch group that failed, an eval without a complete score).

Bad *input* is :class:`infx.diagnostics.InfxError` (exit 2, one line per problem). A runtime failure is a
fact about a run that gets recorded (``status.json``, ``eval-status.json``, a deployment record): what kind
of failure it was, a one-line message, and the tail of the log that shows it. Every stage's failure class
derives from :class:`Failure`, so code that records one reads the same three attributes.
"""

from __future__ import annotations


class Failure(Exception):
    """A classified runtime failure: ``kind`` (a short classification, e.g. ``oom-loading``, ``timeout``,
    ``server``), ``message`` (one line saying what happened) and ``log_tail`` (the last lines of the log)."""

    def __init__(self, kind: str, message: str = "", log_tail: str = "") -> None:
        self.kind = kind
        self.message = message
        self.log_tail = log_tail
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}" if self.message else self.kind
