"""perf-changelog: parser, append-only history gate, change-driven matrices.

Public API: :func:`parse_changelog`, :func:`check_history`, :func:`run_gate`,
:func:`changelog_points` (the points a change selects, for ``infx run --changelog``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["GateOptions", "PullRequestContext", "changelog_points", "check_history", "parse_changelog", "run_gate"]


def __getattr__(name: str) -> Any:  # lazy: keep `import infx.changelog` cheap
    if name == "parse_changelog":
        from infx.changelog.parse import parse_changelog
        return parse_changelog
    if name in ("check_history", "PullRequestContext"):
        from infx.changelog import history
        return getattr(history, name)
    if name in ("run_gate", "changelog_points", "GateOptions"):
        from infx.changelog import gate
        return getattr(gate, name)
    raise AttributeError(name)
