"""Properties of the history rules, on the head of the real changelog (no git needed)."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from infx.changelog.history import PullRequestContext, check_history, layout_warnings
from infx.changelog.parse import parse_appended, parse_changelog
from infx.diagnostics import InfxError

from .helpers import real_changelog, seed_entry

# a slice of real history (about 10 KB) holding both frozen quirks: a double blank line and,
# at its end, a whitespace-only line; small so that each example stays fast
_REAL = real_changelog()
_START = _REAL.rindex(b"\n- config-keys:", 0, _REAL.index(b"\n\n\n")) + 1
_CUT = _REAL.index(b"- config-keys:", _REAL.index(b"\n  \n") + 1)
HISTORY = _REAL[_START:_CUT].rstrip(b"\n") + b"\n"
BASE = parse_changelog(HISTORY, "log.yaml")
PUSH = PullRequestContext()


def verdict(head: bytes) -> str:
    try:
        change = check_history(BASE, parse_changelog(head, "log.yaml"), PUSH)
    except InfxError:
        return "rejected"
    return f"accepted:{len(change.additions)}+{len(change.corrections)}"


def test_history_sample_has_quirks() -> None:
    assert len(BASE.entries) >= 10 and b"\n  \n" in HISTORY and b"\n\n\n" in HISTORY
    assert HISTORY.endswith(b"\n  \n")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(pos=HISTORY.index(b"/pull/") + 7, edit=b"", append=False)  # pull/1134 -> pull/134: a correction
@example(pos=HISTORY.index(b"/pull/") + 7, edit=b"", append=True)
@example(pos=HISTORY.index(b"\n", HISTORY.index(b"/pull/")) - 1, edit=b" ", append=False)  # "pull/113 ": not exact
@given(pos=st.integers(min_value=0, max_value=len(HISTORY) - 1),
       edit=st.sampled_from([b" ", b"\n", b"x", b""]), append=st.booleans())
def test_any_edit_of_history_is_rejected(pos: int, edit: bytes, append: bool) -> None:
    """Inserting, replacing or deleting one byte anywhere in history never passes the gate,
    with or without a valid appended entry, unless it turns one pr-link into another canonical
    link (a pr-link correction, accepted alone, never together with an addition)."""
    if edit == b"":
        mutated = HISTORY[:pos] + HISTORY[pos + 1:]
    elif HISTORY[pos:pos + 1] == edit:
        mutated = HISTORY[:pos] + edit + HISTORY[pos:]  # replacing with the same byte: insert instead
    else:
        mutated = HISTORY[:pos] + edit + HISTORY[pos + 1:]
    assert mutated != HISTORY
    head = mutated + (b"\n" + seed_entry() if append else b"")
    expected = "accepted:0+1" if _is_link_correction(mutated) and not append else "rejected"
    if append and mutated.startswith(HISTORY) and not mutated[len(HISTORY):].strip(b"\n"):
        # only blank lines after history: the same bytes as an append with extra blank lines before
        # the new entry, which is a layout warning (layout_warnings), not a history change
        expected = "accepted:1+0"
    if append and mutated == HISTORY[:-1]:
        # deleting history's final newline is undone by the separator of the appended entry:
        # the head is then the untouched history plus a valid append
        expected = "accepted:1+0"
    assert verdict(head) == expected


def _is_link_correction(mutated: bytes) -> bool:
    old, new = HISTORY.split(b"\n"), mutated.split(b"\n")
    if len(old) != len(new):
        return False
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    prefix = b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/"
    return (len(changed) == 1 and changed[0][0].startswith(prefix)
            and re.fullmatch(rb"  pr-link: https://github\.com/SemiAnalysisAI/InferenceX/pull/[1-9][0-9]*",
                             changed[0][1]) is not None)


@given(st.lists(st.sampled_from([seed_entry(), seed_entry().replace(b"3326", b"3327")]), min_size=1, max_size=4))
@settings(max_examples=15, deadline=None)
def test_appending_valid_entries_is_accepted(entries: list[bytes]) -> None:
    # HISTORY ends with a whitespace-only line (frozen): it already separates the first new entry
    head = HISTORY + b"\n".join(entries)
    assert verdict(head) == f"accepted:{len(entries)}+0"
    assert parse_appended(BASE, head, "log.yaml") == parse_changelog(head, "log.yaml")
    two_blank = HISTORY + b"\n" + b"\n".join(entries)  # two blank lines before the first new entry
    assert verdict(two_blank) == f"accepted:{len(entries)}+0"
    head = parse_changelog(two_blank, "log.yaml")
    warns = layout_warnings(BASE, head, check_history(BASE, head, PUSH))
    assert [w.severity for w in warns] == ["warning"] and "2 blank lines before the new entry" in warns[0].message
