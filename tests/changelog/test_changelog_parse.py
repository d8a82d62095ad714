"""The changelog parser: byte rules, schema, entry positions."""

from __future__ import annotations

import pytest

from infx.changelog.models import ChangelogEntry
from infx.changelog.parse import entry_start_lines, parse_changelog
from infx.diagnostics import InfxError

from .helpers import real_changelog, seed_entry

GOOD = b"""- config-keys:
    - a-*
  description:
    - "one"
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1

- config-keys:
    - b
  scenario-type:
    - agentic-coding
  description:
    - "two"
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2
"""


def errors(data: bytes) -> list[str]:
    with pytest.raises(InfxError) as exc:
        parse_changelog(data, "log.yaml")
    return [str(d) for d in exc.value.diagnostics]


def test_real_changelog_parses_with_every_entry() -> None:
    log = parse_changelog(real_changelog(), "perf-changelog.yaml")
    assert len(log.entries) == 772
    assert log.entries[0].line == 1 and log.entries[0].entry.config_keys == ["70b-fp8-*-vllm"]
    last = log.entries[-1]
    assert last.entry.pr_link.endswith("/pull/2707")
    assert last.entry.scenario_type == ["agentic-coding"]
    assert last.line == 6373 and last.end_line == 6380
    assert sum(e.entry.append_only for e in log.entries) == 1
    assert sum(e.entry.evals_only for e in log.entries) == 6


def test_positions_of_entries_keys_and_links() -> None:
    log = parse_changelog(GOOD, "log.yaml")
    assert [e.line for e in log.entries] == [1, 7]
    assert log.entries[0].end_line == 6
    assert log.entries[1].key_lines == [8]
    assert log.entries[1].link_line == 13
    assert entry_start_lines(GOOD) == [1, 7]


@pytest.mark.parametrize(
    ("data", "where", "text"),
    [
        (GOOD.replace(b"\"one\"", b"\"o\rne\""), "log.yaml:4:9", "carriage return"),
        (GOOD.replace(b"    - b\n", b"\t- b\n"), "log.yaml:8:1", "tab"),
        (GOOD.replace(b"two", b"t\x00o"), "log.yaml:12:9", "NUL"),
        (GOOD.replace(b"two", b"t\xffo"), "log.yaml:12:9", "UTF-8"),
        (GOOD[:-1], "log.yaml:13:", "must end with a newline"),
    ],
)
def test_byte_rules(data: bytes, where: str, text: str) -> None:
    errs = errors(data)
    assert any(e.startswith(where) and text in e for e in errs), errs


def test_duplicate_key_in_entry() -> None:
    data = GOOD.replace(b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2\n",
                        b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2\n  description: [x]\n")
    errs = errors(data)
    assert errs == ["log.yaml:14:3: error: duplicate key 'description' (first defined at line 11) (at [1].description)"]


def test_schema_errors_name_entry_and_line() -> None:
    link = b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n"
    data = GOOD.replace(b"agentic-coding", b"agentic").replace(link, link + b"  colour: red\n")
    errs = errors(data)
    assert any(e.startswith("log.yaml:6:") and "entry #1: unknown key 'colour'" in e for e in errs), errs
    assert any(e.startswith("log.yaml:11:") and "entry #2:" in e and "scenario-type" in e for e in errs), errs


def test_append_only_cannot_combine_with_eval_fields() -> None:
    data = GOOD + b"""
- config-keys:
    - c
  description:
    - "three"
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/3
  append-only: true
  evals-only: true
"""
    errs = errors(data)
    assert len(errs) == 1 and errs[0].startswith("log.yaml:15:") and "entry #3" in errs[0]
    assert "append-only cannot be combined with eval selection fields" in errs[0]
    with pytest.raises(ValueError):
        ChangelogEntry.model_validate({"config-keys": ["k"], "description": ["d"], "pr-link": "x",
                                       "append-only": True, "eval-min-prefill-ep": 2})
    ok = ChangelogEntry.model_validate({"config-keys": ["k"], "description": ["d"], "pr-link": "x",
                                        "append-only": True})
    assert ok.append_only


@pytest.mark.parametrize(
    ("field", "value"),
    [("config-keys", "[]"), ("description", "[]"), ("eval-min-prefill-ep", "0"), ("evals-only", "'yes'"),
     ("scenario-type", "[]")],
)
def test_field_rules(field: str, value: str) -> None:
    base = {"config-keys": "[k]", "description": "[d]", "pr-link": "x"}
    base[field] = value
    keys_first = sorted(base.items(), key=lambda kv: kv[0] != "config-keys")
    text = "- " + "\n  ".join(f"{k}: {v}" for k, v in keys_first) + "\n"
    errs = errors(text.encode())
    assert any(field in e and "entry #1" in e for e in errs), errs


def test_every_entry_must_start_with_config_keys_line() -> None:
    data = GOOD.replace(b"- config-keys:\n    - b\n  scenario-type:", b"- scenario-type:", 1)
    data = data.replace(b"    - agentic-coding\n", b"    - agentic-coding\n  config-keys:\n    - b\n", 1)
    errs = errors(data)
    assert any("1 lines starting with '- config-keys:'" in e for e in errs), errs
    assert any(e.startswith("log.yaml:7:3") and "entry #2: 'config-keys' must be the first key" in e
               for e in errs), errs


def test_root_must_be_a_list() -> None:
    assert errors(b"config-keys: [a]\n") == ["log.yaml:1:1: error: the changelog must be a YAML list of entries"]


BAD_TAILS = [
    b"  colour: red\n",  # unknown key
    b"  description: [again]\n",  # duplicate key
    b"  pr-link: [1, 2\n",  # YAML syntax error
    b"  evals-only: true\n  append-only: true\n",  # combination rule
]


def test_incremental_parse_of_an_append_equals_the_full_parse() -> None:
    from infx.changelog.parse import parse_appended

    base = parse_changelog(real_changelog(), "log.yaml")
    head = real_changelog() + b"\n" + seed_entry() + b"\n" + GOOD
    fast = parse_appended(base, head, "log.yaml")
    assert fast is not None
    assert fast == parse_changelog(head, "log.yaml")
    assert len(fast.entries) == 775 and fast.entries[-1].index == 774
    for tail in BAD_TAILS:
        broken = real_changelog() + b"\n" + seed_entry() + tail
        with pytest.raises(InfxError) as slow_exc:
            parse_changelog(broken, "log.yaml")
        with pytest.raises(InfxError) as fast_exc:
            parse_appended(base, broken, "log.yaml")
        assert fast_exc.value.diagnostics == slow_exc.value.diagnostics, tail
    # not a plain append: the caller must parse fully
    assert parse_appended(base, real_changelog() + seed_entry(), "log.yaml") is None
    assert parse_appended(base, b"x" + real_changelog(), "log.yaml") is None
