"""Records read back are bounded before the metrics allocate by them: a chunk count of 10^11 tokens would make
the per-token ITL expansion ask numpy for 745 GiB."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.records import MAX_RESPONSE_TOKENS, iter_records

GOOD = {"request_id": "r1", "endpoint": "completions", "max_tokens": 4, "send_ns": 1, "end_ns": 9,
        "chunk_ns": [3, 5], "chunk_tokens": [1, 3], "client_tokens": 4}


def _write(path: Path, *records: dict) -> Path:
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    return path


@pytest.mark.timeout(5)
@pytest.mark.parametrize(("change", "says"), [
    ({"chunk_tokens": [1, 10**11]}, f"tokens in one response (at most {MAX_RESPONSE_TOKENS:,})"),
    ({"chunk_tokens": [1, 0]}, "every chunk carries at least one token"),
    ({"chunk_tokens": [1, -5]}, "every chunk carries at least one token"),
    ({"chunk_ns": [3]}, "chunk_ns has 1 entries but chunk_tokens 2"),
])
def test_an_impossible_record_is_refused_at_its_line(tmp_path: Path, change: dict, says: str) -> None:
    f = _write(tmp_path / "records.jsonl.gz", GOOD, {**GOOD, "request_id": "r2", **change})
    with pytest.raises(InfxError) as info:
        list(iter_records(f))
    (diag,) = info.value.diagnostics
    assert diag.file == str(f) and diag.line == 2 and says in str(diag)


def test_a_good_record_reads_back(tmp_path: Path) -> None:
    (rec,) = iter_records(_write(tmp_path / "records.jsonl.gz", GOOD))
    assert rec.chunk_tokens == [1, 3] and rec.output_tokens == 4
