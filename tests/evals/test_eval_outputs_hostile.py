"""What lm-eval leaves behind, damaged: each is a reason (a failed eval, or one line naming the file), never a
traceback. The files are written by hand; lm-eval itself never writes them so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.evals.parse import read_lmeval_scores
from infx.evals.runner import _error_info


@pytest.mark.parametrize(("content", "says"), [
    (None, "lm-eval exited 3"),
    (b"{not json", "unreadable: invalid JSON"),
    (b"\xff\xfe", "unreadable: not UTF-8"),
    (b"[1, 2]", "not a mapping of kind and message"),
    (b'{"kind": 7, "message": "x"}', "not a mapping of kind and message"),
    (b'{"kind": "oom", "message": ["a"]}', "not a mapping of kind and message"),
    (b"[" * 100_000 + b"]" * 100_000, "unreadable: JSON nests deeper"),
])
def test_a_damaged_error_file_is_an_internal_failure_with_its_reason(tmp_path: Path, content: bytes | None,
                                                                      says: str) -> None:
    err = tmp_path / "error.json"
    if content is not None:
        err.write_bytes(content)
    kind, message = _error_info(err, 3)
    assert kind == "internal" and says in message


def test_a_good_error_file_is_read_as_it_is(tmp_path: Path) -> None:
    err = tmp_path / "error.json"
    err.write_text(json.dumps({"kind": "unknown-task", "message": "no task gsm9k"}))
    assert _error_info(err, 1) == ("unknown-task", "no task gsm9k")


@pytest.mark.parametrize("data", [
    [],
    {"results": []},
    {"results": {"gsm8k": []}},
    {"results": {"gsm8k": {"exact_match,strict-match": 0.5}}, "configs": {"gsm8k": []}},
    {"results": {"gsm8k": {"exact_match,none": 0.5}}, "n-samples": {"gsm8k": {"effective": "many"}}},
])
def test_a_results_file_of_the_wrong_shape_is_one_line_naming_it(tmp_path: Path, data: object) -> None:
    f = tmp_path / "results_x.json"
    f.write_text(json.dumps(data))
    with pytest.raises(InfxError) as info:
        read_lmeval_scores(f, "gsm8k")
    (diag,) = info.value.diagnostics
    assert diag.file == str(f) and "not an lm-eval results file for task 'gsm8k'" in diag.message
