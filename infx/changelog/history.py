"""The append-only history rules: compare a base and a head changelog.

* Every base entry is unchanged in the head at the same index, except a **pr-link-only
  correction** (the new link canonical and pointing at a different pull request).
* New entries are **appended at the physical end**: the head bytes start with the base bytes.
  Historical bytes, stray whitespace included, are immutable (errors). Each appended entry should
  be preceded by exactly one empty line and the file should not end with a blank line: those are
  warnings with their fix (:func:`layout_warnings`), never errors.
* Corrections and additions are never mixed in one change.
* New entries carry a canonical link; on a pull request, the PR's own link or ``XXX``.

Every violation is a diagnostic on the changelog path naming the entry and the line.
"""

from __future__ import annotations

import os
import re

from pydantic import BaseModel, ConfigDict

from infx.bounds import NUMBER_ID
from infx.changelog.models import (
    DEFAULT_REPO_SLUG,
    PLACEHOLDER_LINK,
    Changelog,
    ParsedEntry,
    canonical_pr_link,
    pr_link_number,
)
from infx.changelog.parse import entry_start_lines
from infx.diagnostics import Diagnostic, InfxError

_ANY_PR_NUMBER = re.compile(r"/pull/(" + NUMBER_ID + r")(?![0-9])")


class PullRequestContext(BaseModel):
    """Where the change comes from. ``number`` is set when validating a pull request; it comes from
    ``--pr-number`` or, in GitHub Actions, from the ``pull_request`` event. ``repo_slug`` is the
    ``owner/name`` whose ``/pull/<n>`` links are canonical."""

    model_config = ConfigDict(frozen=True)

    number: int | None = None
    repo_slug: str = DEFAULT_REPO_SLUG

    @classmethod
    def from_env(cls, number: int | None = None, repo_slug: str | None = None,
                 env: dict[str, str] | None = None) -> PullRequestContext:
        """Explicit values win. Otherwise the PR number comes from a GitHub Actions ``pull_request``
        event (``GITHUB_EVENT_PATH``'s ``pull_request.number``, else ``GITHUB_REF`` ``refs/pull/N/merge``),
        and the link repository from ``INFX_CHANGELOG_REPO`` (default ``SemiAnalysisAI/InferenceX``;
        not ``GITHUB_REPOSITORY``, which names a fork when CI runs on one)."""
        env = dict(os.environ) if env is None else env
        if number is None and env.get("GITHUB_EVENT_NAME", "").startswith("pull_request"):
            number = _event_pr_number(env.get("GITHUB_EVENT_PATH"))
            if number is None:
                m = re.fullmatch(r"refs/pull/(" + NUMBER_ID + ")/(merge|head)", env.get("GITHUB_REF", ""))
                number = int(m.group(1)) if m else None
        slug = repo_slug or env.get("INFX_CHANGELOG_REPO") or DEFAULT_REPO_SLUG
        return cls(number=number, repo_slug=slug)


def _event_pr_number(path: str | None) -> int | None:
    if not path:
        return None
    from infx import jsonio

    try:
        event = jsonio.load(path, what="GitHub event file")
    except InfxError:
        return None
    pr = event.get("pull_request") if isinstance(event, dict) else None
    num = pr.get("number") if isinstance(pr, dict) else event.get("number") if isinstance(event, dict) else None
    return num if isinstance(num, int) and num > 0 else None


class Correction(BaseModel):
    model_config = ConfigDict(frozen=True)
    base: ParsedEntry
    head: ParsedEntry


class ChangeSet(BaseModel):
    """What a valid change does: appends ``additions`` or corrects links (never both)."""

    model_config = ConfigDict(frozen=True)

    additions: list[ParsedEntry] = []
    corrections: list[Correction] = []


def _diag(head: Changelog, line: int, message: str, col: int = 1) -> Diagnostic:
    return Diagnostic(message, head.file, line, col)


def _changed_fields(a: ParsedEntry, b: ParsedEntry) -> list[str]:
    da, db = a.entry.model_dump(by_alias=True), b.entry.model_dump(by_alias=True)
    return [k for k in da if da[k] != db[k]]


def compare_entries(base: Changelog, head: Changelog, pr: PullRequestContext) -> ChangeSet:
    """Entry-level history rules (see the module docstring)."""
    diags: list[Diagnostic] = []
    nb, nh = len(base.entries), len(head.entries)
    corrections: list[Correction] = []
    for i in range(min(nb, nh)):
        b, h = base.entries[i], head.entries[i]
        if b.entry == h.entry:
            continue
        shift = nh - nb
        if shift > 0 and i + shift < nh and head.entries[i + shift].entry == b.entry:
            diags.append(_diag(head, h.line,
                f"{h.label}: new entry inserted before historical entry #{i + 1} (base line {b.line}); "
                "new entries must be appended at the end of the file"))
            break
        if shift < 0 and i - shift < nb and base.entries[i - shift].entry == h.entry:
            diags.append(_diag(head, h.line,
                f"historical entry #{i + 1} [{', '.join(b.entry.config_keys)}] (base line {b.line}) was deleted; "
                "entries are append-only"))
            break
        if b.entry.without_link() == h.entry.without_link():
            corrections.append(Correction(base=b, head=h))
            continue
        fields = ", ".join(_changed_fields(b, h))
        diags.append(_diag(head, h.line,
            f"historical entry #{i + 1} [{', '.join(b.entry.config_keys)}] (base line {b.line}) was modified "
            f"({fields}); only a pr-link correction may change a historical entry"))
    if not diags and nh < nb:
        lost = base.entries[nh]
        diags.append(_diag(head, max(1, head.data.count(b"\n")),
            f"historical entry #{nh + 1} [{', '.join(lost.entry.config_keys)}] (base line {lost.line}) was deleted; "
            f"{nb - nh} entr{'y' if nb - nh == 1 else 'ies'} missing at the end; entries are append-only"))
    if diags:
        raise InfxError(diags)

    additions = head.entries[nb:]
    for c in corrections:
        old, new = c.base.entry.pr_link, c.head.entry.pr_link
        number = pr_link_number(new, pr.repo_slug)
        if number is None:
            diags.append(_diag(head, c.head.link_line,
                f"{c.head.label}: corrected pr-link '{new}' is not canonical "
                f"(expected {canonical_pr_link(1, pr.repo_slug).removesuffix('1')}<number>)"))
            continue
        m = _ANY_PR_NUMBER.search(old)
        if m and int(m.group(1)) == number:
            diags.append(_diag(head, c.head.link_line,
                f"{c.head.label}: pr-link reformatted without a semantic change ('{old}' -> '{new}')"))
    if corrections and additions:
        diags.append(_diag(head, additions[0].line,
            f"{additions[0].label}: pr-link corrections (entry #{corrections[0].head.index + 1}, line "
            f"{corrections[0].head.link_line}) and new entries cannot be mixed in one change"))
    for a in additions:
        diags.extend(_check_new_link(head, a, pr))
    if diags:
        raise InfxError(diags)
    return ChangeSet(additions=additions, corrections=corrections)


def _check_new_link(head: Changelog, a: ParsedEntry, pr: PullRequestContext) -> list[Diagnostic]:
    link = a.entry.pr_link
    if pr.number is not None:
        own = canonical_pr_link(pr.number, pr.repo_slug)
        if link in (own, PLACEHOLDER_LINK, own.rsplit("/", 1)[0] + "/" + PLACEHOLDER_LINK):
            return []
        return [_diag(head, a.link_line,
            f"{a.label}: pr-link '{link}' must be this pull request's link '{own}' "
            f"or the placeholder '{PLACEHOLDER_LINK}'")]
    if pr_link_number(link, pr.repo_slug) is None:
        return [_diag(head, a.link_line,
            f"{a.label}: new entry needs a canonical pr-link "
            f"'{canonical_pr_link(1, pr.repo_slug).removesuffix('1')}<number>', got '{link}'")]
    return []


def first_difference(a: bytes, b: bytes) -> int:
    """Byte offset of the first difference (len of the shorter if one is a prefix)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # invariant: a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:  # binary search with C-speed slice compares
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _entry_label_at(data: bytes, line: int) -> str:
    starts = entry_start_lines(data)
    k = sum(1 for s in starts if s <= line)
    return f"entry #{k}" if k else "before the first entry"


def validate_raw_change(base: Changelog, head: Changelog, change: ChangeSet) -> None:
    """Byte-level rules: history bytes untouched, entries appended with one blank line each."""
    b, h = base.data, head.data
    if change.additions:
        if not h.startswith(b):
            off = first_difference(b, h)
            line = _line_of(h, off)
            raise InfxError(_diag(head, line,
                f"{_entry_label_at(b, _line_of(b, off))} (line {line}): historical bytes changed; "
                "historical whitespace and formatting are immutable"))
        suffix = h[len(b):]
        if b and not suffix.lstrip(b"\n").startswith(b"- config-keys:"):
            raise InfxError(_diag(head, change.additions[0].line,
                f"{change.additions[0].label}: appended text must start with '- config-keys:' after the last "
                f"historical line (line {_line_of(h, len(b)) - 1}), separated by one empty line"))
        return  # the blank-line layout of the appended text: warnings (layout_warnings), never errors
    if change.corrections:
        bl, hl = b.split(b"\n"), h.split(b"\n")
        if len(bl) != len(hl):
            raise InfxError(_diag(head, change.corrections[0].head.link_line,
                f"{change.corrections[0].head.label}: a pr-link correction must not add or remove lines "
                f"(base has {len(bl)} lines, head {len(hl)})"))
        changed = [n for n, (x, y) in enumerate(zip(bl, hl, strict=True)) if x != y]
        links = {c.head.link_line: c.head.entry.pr_link for c in change.corrections}
        diags = []
        for n in changed:
            if not (bl[n].startswith(b"  pr-link:") and hl[n].startswith(b"  pr-link:")):
                diags.append(_diag(head, n + 1,
                    f"{_entry_label_at(h, n + 1)} (line {n + 1}): only '  pr-link:' lines may change in a correction; "
                    "historical whitespace and formatting are immutable"))
            elif n + 1 in links and hl[n] != b"  pr-link: " + links[n + 1].encode():
                diags.append(_diag(head, n + 1,
                    f"{_entry_label_at(h, n + 1)} (line {n + 1}): a corrected link must be written exactly "
                    f"'  pr-link: {links[n + 1]}' (no quotes or extra spaces)"))
        if not diags and len(changed) != len(change.corrections):
            diags.append(_diag(head, change.corrections[0].head.link_line,
                f"{len(changed)} pr-link lines changed but {len(change.corrections)} entries were corrected"))
        if diags:
            raise InfxError(diags)
        return
    if b != h:
        off = first_difference(b, h)
        line = _line_of(h, off)
        raise InfxError(_diag(head, line,
            f"{_entry_label_at(h, line)} (line {line}): historical bytes changed; "
            "historical whitespace and formatting are immutable"))


def layout_warnings(base: Changelog, head: Changelog, change: ChangeSet) -> list[Diagnostic]:
    """Blank lines around appended entries, each a warning with its fix: InferenceX merges changes
    with two blank lines before the new entry, or a trailing blank line, so these never block."""
    if not change.additions:
        return []
    h = head.data
    lines = h.split(b"\n")
    out: list[Diagnostic] = []
    for a in change.additions:
        i = a.line - 1  # 0-based index of the '- config-keys:' line
        if i == 0:
            continue
        blanks = 0
        while i - blanks - 1 >= 0 and lines[i - blanks - 1].strip() == b"":
            blanks += 1
        if blanks == 1:
            continue
        if blanks == 0:
            msg = f"{a.label}: no empty line before the new entry; fix: insert one empty line before line {a.line}"
            line = a.line
        else:
            first = a.line - blanks
            line = first + 1  # the second blank line
            what = "lines" if blanks - 1 > 1 else "line"
            msg = (f"{a.label}: {blanks} blank lines before the new entry; fix: delete {what} {first + 1}"
                   + (f"-{a.line - 1}" if blanks > 2 else "") + " (one empty line separates entries)")
        out.append(Diagnostic(msg, head.file, line, 1, severity="warning"))
    if h.endswith(b"\n\n"):
        n = _line_of(h, len(h) - 1)
        out.append(Diagnostic(f"{change.additions[-1].label}: the file ends with a blank line; fix: delete line {n}",
                              head.file, n, 1, severity="warning"))
    return out


def check_history(base: Changelog, head: Changelog, pr: PullRequestContext) -> ChangeSet:
    """Both rule sets; returns what the change adds or corrects."""
    change = compare_entries(base, head, pr)
    validate_raw_change(base, head, change)
    return change
