"""Match changelog ``config-keys`` patterns against catalog keys.

Same meaning as the reference's changelog processor: ``*`` matches any run of characters
(the whole key must match); every other character, ``?`` included, is literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from infx.changelog.models import Changelog, ParsedEntry
from infx.diagnostics import Diagnostic, Severity


@lru_cache(maxsize=4096)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


def match_pattern(pattern: str, keys: Iterable[str]) -> list[str]:
    """Keys matching ``pattern``, in catalog order."""
    if "*" not in pattern:
        return [pattern] if pattern in keys else []
    rx = _regex(pattern)
    return [k for k in keys if rx.fullmatch(k)]


class Unmatched(BaseModel):
    model_config = ConfigDict(frozen=True)
    entry_index: int
    pattern: str
    line: int


class Resolution(BaseModel):
    """Keys selected by one entry (deduplicated, in pattern order) and patterns that matched nothing."""

    model_config = ConfigDict(frozen=True)
    keys: list[str]
    unmatched: list[Unmatched]


def resolve_entry(entry: ParsedEntry, keys: list[str]) -> Resolution:
    keyset = set(keys)
    out: dict[str, None] = {}
    unmatched = []
    patterns = entry.entry.config_keys
    lines = entry.key_lines or [entry.line] * len(patterns)  # one line per pattern
    for pattern, line in zip(patterns, lines, strict=True):
        found = match_pattern(pattern, keyset if "*" not in pattern else keys)
        if not found:
            unmatched.append(Unmatched(entry_index=entry.index, pattern=pattern, line=line))
        out.update(dict.fromkeys(found))
    return Resolution(keys=list(out), unmatched=unmatched)


def unmatched_diagnostic(file: str, entry: ParsedEntry, u: Unmatched, where: str,
                         severity: Severity = "error") -> Diagnostic:
    return Diagnostic(
        f"{entry.label}: config-key pattern '{u.pattern}' matches no key in the catalog {where}",
        file, u.line, 1, (entry.index, "config-keys"), severity,
    )


class HistoryReport(BaseModel):
    """Resolution of every entry of a changelog (historical keys may be gone from today's catalog)."""

    model_config = ConfigDict(frozen=True)
    entries: int
    patterns: int
    resolved_patterns: int
    unmatched: list[Unmatched]

    @property
    def missing_patterns(self) -> list[str]:
        return sorted({u.pattern for u in self.unmatched})


def resolve_history(changelog: Changelog, keys: list[str]) -> HistoryReport:
    unmatched: list[Unmatched] = []
    total = 0
    for e in changelog.entries:
        total += len(e.entry.config_keys)
        unmatched.extend(resolve_entry(e, keys).unmatched)
    return HistoryReport(entries=len(changelog.entries), patterns=total,
                         resolved_patterns=total - len(unmatched), unmatched=unmatched)
