"""The strict YAML source: the event-stream fast path equals the node-tree full path and PyYAML.

``parse_yaml`` builds data from libyaml events and falls back to composing a node tree for
anything outside the plain-tree subset. Both paths must give PyYAML ``safe_load``'s data
(YAML 1.1: underscore ints, sexagesimals, yes/no booleans, timestamps...), the same position
of every node and key, and must always reject duplicate keys.
"""

from __future__ import annotations

import datetime
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from infx import yamlsource
from infx.diagnostics import InfxError
from infx.yamlsource import _fast, _parse_full, parse_yaml


def _same(a: object, b: object) -> bool:
    """Equality that also compares types (1 != True != 1.0 here) and treats NaN as equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)  # type: ignore[arg-type]
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)  # type: ignore[index]
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    return a == b


def _both(text: str) -> tuple[yamlsource.YamlSource, yamlsource.YamlSource]:
    data, pos, kpos = _fast(text)  # raises _Fallback if the text is not fast-path material
    return yamlsource.YamlSource("f.yaml", data, pos, kpos), _parse_full(text, "f.yaml")


YAML11_SCALARS = [
    "1_000", "0x1F", "0o17", "017", "0b1010", "+12", "-0", "1:30", "190:20:30", "1_0.5", "1e3", "1.0e+3",
    "6.8523015e+5", ".inf", "-.Inf", ".NaN", "3.", ".5", "yes", "No", "on", "OFF", "y", "n", "true", "False",
    "~", "null", "Null", "", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10",
    "0.", "1__2", "12e03", "0x_1", "-0b1", "abc", "1.2.3", "v1", "00", "08", "1_", "=x", "<<x",
]


NON_FINITE = (".inf", "-.Inf", ".NaN")  # refused in every input (issue 26): tested below


def _out_of_range(value: object) -> bool:
    """A number every infx reader refuses: not finite, or an integer past 64 bits."""
    if isinstance(value, dict):
        return any(_out_of_range(k) or _out_of_range(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_out_of_range(v) for v in value)
    if type(value) is float:
        return not math.isfinite(value)
    return type(value) is int and not -(2**63 - 1) <= value <= 2**63 - 1


def test_yaml11_plain_scalars_match_safe_load() -> None:
    lines = [f"k{i}: {s}" for i, s in enumerate(YAML11_SCALARS) if s not in NON_FINITE]
    text = "\n".join(lines) + "\nlist: [" + ", ".join(s for s in YAML11_SCALARS
                                                     if s and s[0] not in "!" and s not in NON_FINITE) + "]\n"
    fast, full = _both(text)
    ref = yaml.safe_load(text)
    assert _same(fast.data, ref) and _same(full.data, ref)
    assert fast.data["k0"] == 1000 and fast.data["k7"] == 90  # 1:30 is sexagesimal
    assert isinstance(fast.data["k30"], datetime.date)
    assert fast.positions == full.positions and fast.key_positions == full.key_positions


def test_quoted_and_block_scalars_stay_strings() -> None:
    text = 'a: "1_000"\nb: \'yes\'\nc: |\n  12\nd: >\n  null\ne: "~"\n'
    fast, full = _both(text)
    expected = {"a": "1_000", "b": "yes", "c": "12\n", "d": "null\n", "e": "~"}
    assert fast.data == full.data == yaml.safe_load(text) == expected


def test_positions_of_every_node_and_key() -> None:
    text = "top:\n  list:\n  - a\n  - {x: 1, y: [2, 3]}\n  empty:\nother: 4\n"
    src = parse_yaml(text, "f.yaml")
    assert src.positions[()] == (1, 1)
    assert src.positions[("top", "list", 1, "y", 1)] == (4, 19)
    assert src.key_positions[("top", "list", 1, "y")] == (4, 12)
    assert src.positions[("top", "empty")] == (5, 9)
    assert src.key_positions[("other",)] == (6, 1)
    assert src.positions == _parse_full(text, "f.yaml").positions


@pytest.mark.parametrize("text", [
    "a: &x 1\nb: *x\n",                         # anchors and aliases
    "base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n",  # merge keys
    "a: !!str 12\nb: !!float 3\n",             # explicit tags
    "? [1, 2]\n: v\n",                          # non-scalar key (rejected by the full path)
    "a: 1\n---\nb: 2\n",                        # several documents
])
def test_unusual_input_takes_the_full_path_with_the_same_answer(text: str) -> None:
    with pytest.raises(yamlsource._Fallback):
        _fast(text)
    try:
        expected: object = _parse_full(text, "f.yaml").data
    except InfxError as exc:
        expected = str(exc)
    try:
        got: object = parse_yaml(text, "f.yaml").data
    except InfxError as exc:
        got = str(exc)
    assert got == expected


@pytest.mark.parametrize("text", [
    "base: &b {x: 1, y: 1}\nd:\n  <<: *b\n  y: 2\n",                         # a written key overrides a merged one
    "a: &a {x: 1}\nb: &b {x: 2, z: 3}\nd:\n  <<: [*a, *b]\n  w: 0\n",          # the first merge source wins
    "base: &b {x: 1}\nd:\n  y: 2\n  <<: *b\n",
])
def test_merge_keys_keep_pyyaml_semantics(text: str) -> None:
    src = parse_yaml(text, "f.yaml")
    assert src.data == yaml.safe_load(text)
    assert list(src.data["d"]) == list(yaml.safe_load(text)["d"])


def test_a_key_written_twice_next_to_a_merge_is_still_a_duplicate() -> None:
    with pytest.raises(InfxError) as exc:
        parse_yaml("base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n  y: 3\n", "f.yaml")
    assert str(exc.value) == "f.yaml:5:3: error: duplicate key 'y' (first defined at line 4) (at d.y)"


@pytest.mark.parametrize("text, where", [
    ("a: 1\nb: 2\na: 3\n", "f.yaml:3:1: error: duplicate key 'a' (first defined at line 1) (at a)"),
    ("x:\n  - {k: 1, k: 2}\n", "f.yaml:2:12: error: duplicate key 'k' (first defined at line 2) (at x[0].k)"),
    ("a: 1\ntrue: 2\n1: 3\n", "f.yaml:3:1: error: duplicate key '1' (first defined at line 2) (at [1])"),
    ("a: 1\n'a': 2\n", "f.yaml:2:1: error: duplicate key 'a' (first defined at line 1) (at a)"),
])
def test_duplicate_keys_are_always_rejected(text: str, where: str) -> None:
    with pytest.raises(InfxError) as exc:
        parse_yaml(text, "f.yaml")
    assert str(exc.value) == where


def test_syntax_error_and_bad_values_are_diagnostics() -> None:
    with pytest.raises(InfxError) as exc:
        parse_yaml("a: [1, 2\nb: 3\n", "f.yaml")
    assert str(exc.value).startswith("f.yaml:") and "YAML syntax error" in str(exc.value)
    with pytest.raises(InfxError) as exc:
        parse_yaml("a:\n  when: 2020-13-45\n", "f.yaml")
    assert str(exc.value).startswith("f.yaml:2:9: error: invalid timestamp value '2020-13-45'")
    with pytest.raises(InfxError) as exc:
        parse_yaml("a: !!python/object:os.system x\n", "f.yaml")
    assert str(exc.value).startswith("f.yaml:1:4: error: YAML error: could not determine a constructor")


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n", "null\n", "3\n", "[1, 2]\n"])
def test_empty_and_non_mapping_documents(text: str) -> None:
    fast, full = _both(text)
    assert _same(fast.data, yaml.safe_load(text)) and fast.positions == full.positions


def test_compat_catalog_fast_equals_full_and_safe_load(compat: Path) -> None:
    d = compat
    for name in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
        text = (d / name).read_bytes()
        fast, full = _both(text)  # type: ignore[arg-type]
        assert _same(fast.data, yaml.safe_load(text))
        assert fast.data == full.data and fast.positions == full.positions
        assert fast.key_positions == full.key_positions


# property: random plain-tree documents, emitted by PyYAML in varied styles

_scalar = st.one_of(
    st.sampled_from(YAML11_SCALARS),
    st.integers(-10**6, 10**6),
    st.floats(allow_nan=False, width=32),
    st.booleans(),
    st.none(),
    st.text(alphabet="ab1_:.-+ yx0oeE~", max_size=8),
)
_key = st.one_of(st.sampled_from(YAML11_SCALARS), st.integers(-50, 50),
                 st.text(alphabet="ab1_:.-", min_size=1, max_size=6))
_tree = st.recursive(_scalar, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                     st.dictionaries(_key, kids, max_size=4)), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(tree=_tree, flow=st.sampled_from([None, True, False]), plain_strings=st.booleans())
def test_random_documents_fast_equals_full_and_safe_load(tree: object, flow: bool | None, plain_strings: bool) -> None:
    text = yaml.safe_dump(tree, default_flow_style=flow, sort_keys=False, allow_unicode=True)
    if plain_strings:  # strip the quotes PyYAML adds, so ambiguous strings reach the resolver as plain scalars
        text = text.replace("'", "")
    try:  # libyaml (as parse_yaml uses) rejects a few odd plain scalars the pure-Python parser takes
        ref = yaml.load(text, Loader=yamlsource._Loader)
    except (yaml.YAMLError, ValueError):  # e.g. an unquoted date-shaped string that is no date
        with pytest.raises(InfxError):
            parse_yaml(text, "f.yaml")
        return
    if _out_of_range(ref):  # inf, NaN, a 20-digit integer: refused at their line (issue 26); a duplicate
        # key after unquoting ('-0' and '00' are both 0) may be the first error met in the same document
        with pytest.raises(InfxError, match="not finite|out of range|duplicate key"):
            parse_yaml(text, "f.yaml")
        return
    try:
        full = _parse_full(text, "f.yaml")
    except InfxError as exc:  # a duplicate key after unquoting: both paths must reject it
        with pytest.raises(InfxError) as fexc:
            parse_yaml(text, "f.yaml")
        assert str(fexc.value) == str(exc)
        assert "duplicate key" in str(exc)
        return
    src = parse_yaml(text, "f.yaml")
    assert _same(src.data, full.data) and _same(src.data, ref)
    assert src.positions == full.positions and src.key_positions == full.key_positions


def test_load_yaml_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InfxError) as exc:
        yamlsource.load_yaml(tmp_path / "nope.yaml")
    assert "does not exist" in str(exc.value)


@pytest.mark.parametrize("scalar", [*NON_FINITE, "9" * 400, "-" + "9" * 20])
def test_numbers_no_input_can_mean_are_refused_at_their_line(scalar: str) -> None:
    with pytest.raises(InfxError) as exc:
        parse_yaml(f"a: 1\nb: [2, {scalar}]\n", "f.yaml")
    msg = str(exc.value)
    assert msg.startswith("f.yaml:2:") and ("not finite" in msg or "out of range" in msg)


def test_alias_bomb_is_refused_at_the_alias_line() -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    with pytest.raises(InfxError) as exc:
        parse_yaml("\n".join(levels) + "\n", "bomb.yaml")
    msg = str(exc.value)
    assert msg.startswith("bomb.yaml:5:") and "alias" in msg and "\n" not in msg


def test_aliases_within_the_cap_still_expand() -> None:
    src = parse_yaml("base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\nl: [*b, *b]\n", "f.yaml")
    assert src.data["d"] == {"x": 1, "y": 2} and src.data["l"] == [{"x": 1}, {"x": 1}]


@pytest.mark.parametrize("text", ["[" * 150 + "]" * 150, "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 150)),
                                  "a: &a " + "[" * 150 + "]" * 150 + "\nb: *a\n"])
def test_nesting_past_the_cap_is_one_error(text: str) -> None:
    with pytest.raises(InfxError, match="nests deeper than"):
        parse_yaml(text, "deep.yaml")


@pytest.mark.parametrize("text", ["a: !foo [1, 2]\n", "a: !bar {x: 1}\n", "a: !!set {x, y}\n", "a: !!omap [b: 1]\n"])
def test_tags_on_lists_and_maps_are_refused(text: str) -> None:
    with pytest.raises(InfxError, match="tag .* is not supported") as exc:
        parse_yaml(text, "t.yaml")
    assert str(exc.value).startswith("t.yaml:1:4:")
