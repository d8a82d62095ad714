"""Small behaviours of single rules, without a repository: the flags a changelog quotes, the job family of
a point."""

from __future__ import annotations

from infx.matrix.point import Point
from infx.review.rules.failure_isolation import family
from infx.review.rules.launch_claims import _FLAG, _argv_values, _norm_value


def _flags(line: str) -> list[tuple[str, str | None]]:
    return [(m.group(1), m.group(2) if m.group(2) is not None else m.group(3))
            for m in _FLAG.finditer(line.replace('\\"', '"'))]


def test_quoted_flags_in_a_changelog_line() -> None:
    line = (r'''    - "Add TP=2 (--engram-config '{\"cpu_offload\":true}') beside '''
            r''''{\"cpu_offload\":false}', --enforce-eager"''')
    assert _flags(line) == [("--engram-config", '{"cpu_offload":true}'), ("--enforce-eager", None)]
    assert _flags('use --max-num-seqs="256" and -- nothing') == [("--max-num-seqs", "256")]


def test_argv_values_and_json_equality() -> None:
    argv = ["vllm", "serve", "--engram-config", '{"cpu_offload": true}', "--max_num_seqs=8", "--enforce-eager"]
    assert _argv_values(argv, "--engram-config") == ['{"cpu_offload": true}']
    assert _argv_values(argv, "--max-num-seqs") == ["8"]
    assert _argv_values(argv, "--enforce-eager") == [None]
    assert _norm_value('{"cpu_offload":true}') == _norm_value('{"cpu_offload": true}')
    assert _norm_value('{"cpu_offload":true}') != _norm_value('{"cpu_offload":false}')


def _pt(**kw: object) -> Point:
    row = {"image": "i", "model": "m", "model-prefix": "p", "precision": "fp8", "framework": "vllm", "runner": "h100",
           "tp": 8, "conc": 4, "exp-name": "p_x", "point-id": "0" * 12, **kw}
    return Point.from_row(row)


def test_job_families() -> None:
    assert family(_pt(isl=1024, osl=1024)) == "single-node 1k1k /"
    assert family(_pt(isl=8192, osl=1024)) == "single-node 8k1k /"
    assert family(_pt(**{"scenario-type": "agentic-coding"})) == "agentic /"
