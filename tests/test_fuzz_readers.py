"""Hypothesis fuzz of the readers of hostile input (issue 26): the YAML loader, the expression evaluator,
the trace reader and the result reader either succeed or raise infx's own error, never anything else
(no RecursionError, OverflowError, MemoryError, UnicodeDecodeError, zlib.error, ValidationError...).

Bounded: a fixed number of examples each; ``timeout`` guards against a hang, it times nothing.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infx.diagnostics import InfxError
from infx.engines.expr import MAX_INT_BITS, MAX_STR, Expr, ExprError

#: Examples per reader: 150 in the suite; ``INFX_FUZZ_EXAMPLES=1000`` for a deeper one-off run.
EXAMPLES = int(os.environ.get("INFX_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# --------------------------------------------------------------------------- YAML

_YAML_TOKENS = st.sampled_from([
    "a", "b", "k", ":", ": ", "- ", "-", "[", "]", "{", "}", ",", " ", "  ", "\n", "\n  ", "\n    ", "&x ", "*x", "&y ",
    "*y", "<<: ", "!tag ", "!!set ", "!!omap ", "!!binary ", "!!int ", "!!float ", "'", '"', "#", "|", ">", "?",
    "---\n", "...\n", ".inf", "-.inf", ".nan", "9" * 30, "1e999", "0x1F", "1:30", "2001-13-45", "yes", "~", "\t",
    "%YAML 1.1\n", "\x00", "\xff", "é", "&x [*x]", "&y {a: *y}", "&x\n  - *x", "9" * 5000,
])


@pytest.mark.timeout(600)
@FUZZ
@given(st.lists(_YAML_TOKENS, max_size=60).map("".join))
def test_yaml_loader_gives_data_or_infx_error(text: str) -> None:
    from infx.yamlsource import parse_yaml

    try:
        parse_yaml(text, "f.yaml")
    except InfxError as exc:
        assert str(exc).startswith("f.yaml")


@pytest.mark.timeout(600)
@FUZZ
@given(st.binary(max_size=400))
def test_yaml_loader_on_raw_bytes(data: bytes) -> None:
    from infx.yamlsource import parse_yaml

    with contextlib.suppress(InfxError):
        parse_yaml(data, "f.yaml")


# --------------------------------------------------------------------------- expressions

_EXPR_TOKENS = st.sampled_from([
    "1", "2", "9", "64", "0", "0.5", "1e308", "10", "9" * 25, "conc", "tp", "s", "(", ")", "+", "-", "*", "/", "//",
    "%", "**", " ", "max(", "min(", "int(", "ceil(", ",", "'ab'", "'%999d'", "'%s'", " if ", " else ", " and ",
    " or ", "not ", "==", "<", ">=", "True", "x.y", "[0]", "lambda", "__import__", "\x00",
])


@pytest.mark.timeout(60)
@FUZZ
@given(st.lists(_EXPR_TOKENS, max_size=40).map("".join))
def test_expression_evaluator_gives_a_bounded_value_or_expr_error(source: str) -> None:
    try:
        value = Expr(source).evaluate({"conc": 64, "tp": 8, "s": "abc"})
    except ExprError:
        return
    if isinstance(value, int) and not isinstance(value, bool):
        assert value.bit_length() <= MAX_INT_BITS
    elif isinstance(value, str):
        assert len(value) <= MAX_STR
    elif isinstance(value, float):
        assert value == value and abs(value) != float("inf")
    else:
        assert isinstance(value, bool)


# --------------------------------------------------------------------------- traces and results

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
_JUNK = st.sampled_from([b"[" * 3000, b"9" * 5000, b"NaN", b"Infinity", b"1e999", b"\xff\xfe", b"{", b"\x00", b"\n",
                         b'{"id": "t", "requests": [{"type": "subagent"}]}'])


_COUNT = (st.integers(-2, 10**4) | st.sampled_from([10**19, 10**30, 2**63]) | st.floats(allow_nan=False)
          | st.text(max_size=2))
_REQUEST = st.recursive(
    st.fixed_dictionaries({"t": st.floats(-1, 10**20) | st.integers(0, 10**30), "type": st.just("n"), "in": _COUNT,
                           "out": _COUNT, "hash_ids": st.lists(st.integers(-1, 10**20), max_size=3)}),
    lambda inner: st.fixed_dictionaries({
        "t": st.floats(-1, 10), "type": st.just("subagent"), "agent_id": st.text(max_size=3),
        "subagent_type": st.just("x"), "duration_ms": st.floats(-1, 1e300), "total_tokens": _COUNT,
        "status": st.just("ok"), "requests": st.lists(inner, max_size=3)}),
    max_leaves=6,
)


def _trace_line(obj: object) -> bytes:
    return json.dumps(obj).encode()


_TRACE_LINES = st.lists(
    st.one_of(
        _JSON.map(_trace_line),
        _JUNK,
        st.fixed_dictionaries({"id": st.text(max_size=4), "requests": st.lists(_REQUEST, max_size=3)}).map(_trace_line),
    ),
    min_size=1, max_size=6,
)


@pytest.mark.timeout(600)
@FUZZ
@given(lines=_TRACE_LINES, gz=st.sampled_from(["none", "whole", "truncated"]))
def test_trace_reader_gives_traces_or_infx_error(tmp_path: Path, lines: list[bytes], gz: str) -> None:
    from infx.agentic.trace import load_traces

    data = b"\n".join(lines) + b"\n"
    name = "t.jsonl"
    if gz != "none":
        data = gzip.compress(data)
        data = data[: max(1, len(data) // 2)] if gz == "truncated" else data
        name += ".gz"
    f = tmp_path / name
    f.write_bytes(data)
    try:
        traces = load_traces(f)
    except InfxError as exc:
        assert name in str(exc)
        return
    from infx.agentic.stats import trace_stats

    trace_stats(traces)  # what `infx traces stats` prints: a loaded trace is a usable one


@pytest.fixture(scope="module")
def _result_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    from infx.results.synthetic import write_seed_scenario

    root = write_seed_scenario(tmp_path_factory.mktemp("fuzz") / "results").root
    return next(root.glob("*/points/*/result.json")).read_text()


def _set(doc: object, path: list[int], value: object) -> object:
    """Replace the node ``path`` picks (each step an index into a container's children) by ``value``."""
    if not path or not isinstance(doc, (dict, list)) or not doc:
        return value
    keys = list(doc) if isinstance(doc, dict) else list(range(len(doc)))
    k = keys[path[0] % len(keys)]
    doc[k] = _set(doc[k], path[1:], value)  # type: ignore[index]
    return doc


@pytest.mark.timeout(600)
@FUZZ
@given(path=st.lists(st.integers(0, 50), max_size=5),
       value=st.one_of(_JSON, st.sampled_from([-1, 10**30, 99, "NaN", [[[[]]]], {"x": None}])),
       junk=st.one_of(st.none(), _JUNK), cut=st.one_of(st.none(), st.integers(0, 4000)))
def test_result_reader_gives_a_result_or_infx_error(tmp_path: Path, _result_text: str, path: list[int],
                                                     value: object, junk: bytes | None, cut: int | None) -> None:
    from infx.metrics.result import BenchResult
    from infx.results.layout import read_model

    doc = _set(json.loads(_result_text), path, value)
    data = json.dumps(doc).encode()
    if junk is not None:
        data = data[: len(data) // 2] + junk + data[len(data) // 2:]
    if cut is not None:
        data = data[:cut]
    f = tmp_path / "result.json"
    f.write_bytes(data)
    try:
        read_model(f, BenchResult)
    except InfxError as exc:
        assert "result.json" in str(exc)


# --------------------------------------------------------------------------- infx.toml

_TOML_TOKENS = st.sampled_from([
    "[paths]\n", "[store]\n", "[recipes]\n", "[x]\n", "configs = ", "results = ", "url = ", "path = ", "n = ",
    '"configs"', '"x"', "'y'", "1", "9" * 25, "9" * 5000, "-", "inf", "nan", "1e999", "[", "]", "{", "}", ",", "=",
    " ", "\n", "#", "\x00", "\xff", "é", "true", "2026-13-45", '"""', "a.b = 1\n",
])


@pytest.mark.timeout(600)
@FUZZ
@given(st.lists(_TOML_TOKENS, max_size=40).map("".join))
def test_workspace_file_reader_gives_a_workspace_or_infx_error(tmp_path: Path, text: str) -> None:
    from infx.workspace import load_workspace_file

    f = tmp_path / "infx.toml"
    f.write_bytes(text.encode("utf-8", "surrogateescape"))
    try:
        load_workspace_file(f)
    except InfxError as exc:
        assert "infx.toml" in str(exc)


# --------------------------------------------------------------------------- request records

_RECORD = st.fixed_dictionaries({
    "request_id": st.text(max_size=3), "endpoint": st.sampled_from(["completions", "chat", "x"]),
    "max_tokens": _COUNT, "send_ns": _COUNT, "end_ns": _COUNT,
    "chunk_ns": st.lists(_COUNT, max_size=4), "chunk_tokens": st.lists(st.one_of(_COUNT, st.just(10**11)), max_size=4),
})


@pytest.mark.timeout(600)
@FUZZ
@given(lines=st.lists(st.one_of(_RECORD.map(_trace_line), _JSON.map(_trace_line), _JUNK), min_size=1, max_size=5),
       gz=st.sampled_from(["whole", "truncated"]))
def test_records_reader_gives_bounded_records_or_infx_error(tmp_path: Path, lines: list[bytes], gz: str) -> None:
    from infx.metrics.compute import itl_samples_ms
    from infx.records import MAX_RESPONSE_TOKENS, iter_records

    data = gzip.compress(b"\n".join(lines) + b"\n")
    f = tmp_path / "records.jsonl.gz"
    f.write_bytes(data[: max(1, len(data) // 2)] if gz == "truncated" else data)
    try:
        for rec in iter_records(f):
            assert sum(rec.chunk_tokens) <= MAX_RESPONSE_TOKENS
            itl_samples_ms(rec)  # what the metrics allocate from a record
    except InfxError as exc:
        assert "records.jsonl.gz" in str(exc)


# --------------------------------------------------------------------------- lm-eval outputs

@pytest.mark.timeout(600)
@FUZZ
@given(doc=_JSON, junk=st.one_of(st.none(), _JUNK))
def test_lmeval_outputs_give_scores_or_a_reason(tmp_path: Path, doc: object, junk: bytes | None) -> None:
    from infx.evals.parse import read_lmeval_scores
    from infx.evals.runner import _error_info

    data = junk if junk is not None else json.dumps({"results": {"gsm8k": doc}, "configs": {"gsm8k": doc},
                                                     "n-samples": doc}).encode()
    for name in ("results_x.json", "error.json"):
        (tmp_path / name).write_bytes(data)
    with contextlib.suppress(InfxError):
        read_lmeval_scores(tmp_path / "results_x.json", "gsm8k")
    kind, message = _error_info(tmp_path / "error.json", 1)
    assert isinstance(kind, str) and isinstance(message, str)
