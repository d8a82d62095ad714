"""Read ``perf-changelog.yaml`` under the reference's byte rules.

Rules (all checked; every violation becomes one ``FILE:LINE:COL`` diagnostic):
UTF-8; no carriage return, tab or NUL; a final newline; strict YAML (duplicate keys rejected);
the root is a list; one entry per line starting with ``- config-keys:``; each entry passes
:class:`~infx.changelog.models.ChangelogEntry`.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from infx.changelog.models import Changelog, ChangelogEntry, ParsedEntry
from infx.diagnostics import Diagnostic, InfxError
from infx.yamlsource import parse_yaml

ENTRY_START = b"- config-keys:"
_FORBIDDEN = {b"\r": "carriage return", b"\t": "tab", b"\x00": "NUL byte"}


def line_col(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of a byte offset."""
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, col


def entry_start_lines(data: bytes) -> list[int]:
    """1-based numbers of the lines that start with ``- config-keys:``."""
    out = []
    line = 1
    pos = 0
    if data.startswith(ENTRY_START):
        out.append(1)
    while True:
        nl = data.find(b"\n" + ENTRY_START, pos)
        if nl < 0:
            return out
        line += data.count(b"\n", pos, nl + 1)
        out.append(line)
        pos = nl + 1


def ends_with_blank_line(data: bytes) -> bool:
    """True when the last line of ``data`` is empty or whitespace-only (a historical quirk)."""
    if not data.endswith(b"\n"):
        return False
    last = data[:-1].rsplit(b"\n", 1)[-1]
    return len(data) > 1 and last.strip() == b""


def _byte_rules(data: bytes, file: str) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = line_col(data, exc.start)
        diags.append(Diagnostic(f"not valid UTF-8 (byte 0x{data[exc.start]:02x})", file, line, col))
    for needle, name in _FORBIDDEN.items():
        at = data.find(needle)
        if at >= 0:
            line, col = line_col(data, at)
            n = data.count(needle)
            more = f" ({n} in the file)" if n > 1 else ""
            diags.append(Diagnostic(f"{name} is not allowed{more}", file, line, col))
    if not data.endswith(b"\n"):
        line, col = line_col(data, len(data))
        diags.append(Diagnostic("the file must end with a newline", file, line, col))
    return diags


def parse_changelog(data: bytes, file: str = "perf-changelog.yaml") -> Changelog:
    """Parse and validate changelog bytes. Raises :class:`InfxError` with every problem found."""
    entries, diags = _parse(data, file, 0)
    if diags:
        raise InfxError(diags)
    return Changelog(file=file, data=data, entries=entries)


def parse_appended(base: Changelog, data: bytes, file: str) -> Changelog | None:
    """Fast path for the common change: ``data`` is ``base`` plus entries appended at the end.

    Only the appended text is parsed (half the work of a full parse). It applies when the
    appended text starts a new top-level item at column 0 right after base's last line, so the
    YAML of base cannot continue into it; otherwise returns None and the caller parses fully.
    The result equals ``parse_changelog(data, file)``: same entries, lines and diagnostics.
    """
    b = base.data
    if not base.entries:  # only a non-empty base is known to be a block sequence at column 0
        return None
    if not (b and data.startswith(b) and len(data) > len(b) and b.endswith(b"\n")):
        return None
    suffix = data[len(b):]
    if not (suffix.startswith(b"\n" + ENTRY_START) or (ends_with_blank_line(b) and suffix.startswith(ENTRY_START))):
        return None
    if b.startswith((b"---", b"%")) or b"\n---" in b or b"\n..." in b or b"\n%" in b:
        return None  # document markers or directives: let the full parser decide
    offset = b.count(b"\n")
    entries, diags = _parse(suffix, file, len(base.entries))
    if diags:
        raise InfxError([_shift_diag(d, offset, len(base.entries)) for d in diags])
    shifted = [
        e.model_copy(update={
            "line": e.line + offset, "end_line": e.end_line + offset,
            "key_lines": [k + offset for k in e.key_lines], "link_line": e.link_line + offset,
        })
        for e in entries
    ]
    old = list(base.entries)
    if old and shifted:
        old[-1] = old[-1].model_copy(update={"end_line": shifted[0].line - 1})
    return Changelog(file=file, data=data, entries=old + shifted)


_FIRST_AT = re.compile(r"\(first defined at line (\d+)\)")


def _shift_diag(d: Diagnostic, lines: int, index: int) -> Diagnostic:
    msg = _FIRST_AT.sub(lambda m: f"(first defined at line {int(m.group(1)) + lines})", d.message)
    path = d.path
    if path and isinstance(path[0], int) and not msg.startswith("entry #"):  # from the YAML reader: local index
        path = (path[0] + index, *path[1:])
    line = d.line + lines if d.line is not None else None
    return Diagnostic(msg, d.file, line, d.col, path, d.severity)


def _parse(data: bytes, file: str, index_offset: int) -> tuple[list[ParsedEntry], list[Diagnostic]]:
    """Entries and problems of ``data``; lines are local to ``data``, entry numbers start after ``index_offset``."""
    diags = _byte_rules(data, file)
    if diags and any("UTF-8" in d.message or "NUL" in d.message for d in diags):
        return [], diags  # YAML would only repeat the problem less clearly
    try:
        src = parse_yaml(data, file)
    except InfxError as exc:
        return [], [*diags, *exc.diagnostics]
    if src.data is None:
        src.data = []
    if not isinstance(src.data, list):
        diags.append(Diagnostic("the changelog must be a YAML list of entries", file, 1, 1))
        return [], diags
    starts = entry_start_lines(data)
    if len(starts) != len(src.data):
        diags.append(
            Diagnostic(
                f"found {len(src.data)} entries but {len(starts)} lines starting with '- config-keys:'; "
                "every entry must start at column 0 with '- config-keys:'",
                file, 1, 1,
            )
        )
    total_lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    entries: list[ParsedEntry] = []
    for i, item in enumerate(src.data):
        line = src.positions.get((i,), (1, 1))[0]
        nxt = src.positions.get((i + 1,), (total_lines + 1, 1))[0] if i + 1 < len(src.data) else total_lines + 1
        n = i + index_offset
        label = f"entry #{n + 1}"
        if not isinstance(item, dict):
            d = src.diag((i,), f"{label}: an entry must be a mapping starting with 'config-keys:'")
            diags.append(Diagnostic(d.message, d.file, d.line, d.col, (n,), d.severity))
            continue
        try:
            entry = ChangelogEntry.model_validate(item)
        except ValidationError as exc:
            for d in src.diags_from_validation(exc, (i,)):
                diags.append(Diagnostic(f"{label}: {d.message}", d.file, d.line, d.col, (n, *d.path[1:]), d.severity))
            continue
        if not _starts_with_config_keys(item):
            d = src.diag((i,), f"{label}: 'config-keys' must be the first key of an entry")
            diags.append(Diagnostic(d.message, d.file, d.line, d.col, (n,), d.severity))
        key_lines = [src.positions.get((i, "config-keys", j), (line, 1))[0] for j in range(len(entry.config_keys))]
        link_line = src.positions.get((i, "pr-link"), (line, 1))[0]
        entries.append(
            ParsedEntry(index=n, line=line, end_line=nxt - 1, entry=entry, raw=item, key_lines=key_lines,
                        link_line=link_line)
        )
    return entries, diags


def _starts_with_config_keys(item: dict[str, object]) -> bool:
    return next(iter(item), None) == "config-keys"
