"""The bounded JSON/JSONL/gzip reader every JSON input goes through (issue 26): each hostile input is
one InfxError naming the file (and the line), and good input reads as json.loads reads it."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest

from infx import jsonio
from infx.diagnostics import InfxError


def _err(fn, *args, **kw) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(InfxError) as exc:
        fn(*args, **kw)
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_good_json_reads_as_the_standard_library_reads_it(tmp_path: Path) -> None:
    doc = {"a": [1, 2.5, None, True, "é"], "b": {"c": -(2**63)}, "d": 10**39}
    f = tmp_path / "x.json"
    f.write_text(json.dumps(doc))
    assert jsonio.load(f) == doc
    g = tmp_path / "x.json.gz"
    g.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert jsonio.load(g) == doc


@pytest.mark.parametrize(("text", "expect"), [
    ("[" * 5000 + "]" * 5000, "nests deeper than 100"),
    ("[" * 150 + "]" * 150, "nests deeper than 100"),  # deep enough to break the walkers, not json itself
    ('{"a":\n' + "9" * 5000 + "}", "x.json:2: error: invalid JSON: integer with 5,000 digits"),
    ('{"a": NaN}', "NaN is not a number JSON allows"),
    ('{"a": -Infinity}', "-Infinity is not a number JSON allows"),
    ('{"a": 1e999}', "1e999 is out of range"),
    ('{"a": 1,\n "b": }', "x.json:2:7: error: invalid JSON"),
])
def test_hostile_json_is_one_error_naming_file_and_line(tmp_path: Path, text: str, expect: str) -> None:
    f = tmp_path / "x.json"
    f.write_text(text)
    assert expect in _err(jsonio.load, f)


def test_a_bad_byte_names_its_line(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_bytes(b'{"a": 1,\n"b": "\xff"}')
    assert _err(jsonio.load, f).startswith(f"{f}:2: error: not UTF-8 text: byte 0xff")


def test_jsonl_errors_carry_the_file_line(tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_text('{"a": 1}\n\n{"a": 2}\n{"a": [[[[\n')
    it = jsonio.iter_jsonl(f)
    assert next(it) == (1, {"a": 1}) and next(it) == (3, {"a": 2})
    assert _err(next, it).startswith(f"{f}:4:")


def test_truncated_and_corrupt_gzip_are_one_line(tmp_path: Path) -> None:
    data = gzip.compress(b'{"a": 1}\n' * 5000)
    cut, bad = tmp_path / "cut.jsonl.gz", tmp_path / "bad.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    bad.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    assert "truncated gzip" in _err(lambda: list(jsonio.iter_jsonl(cut)))
    assert "truncated gzip" in _err(jsonio.load, cut)
    assert "bad.json.gz: error: corrupt or truncated gzip" in _err(jsonio.load, bad)


def test_a_gzip_bomb_stops_at_the_bound(tmp_path: Path) -> None:
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    f = tmp_path / "bomb.json.gz"
    f.write_bytes(co.compress(b" " * (8 * 2**20)) + co.flush())  # 8 MiB of spaces in a few KiB
    assert "inflates to more than 1 MiB" in _err(jsonio.load, f, max_bytes=2**20)
    lines = tmp_path / "bomb.jsonl.gz"
    lines.write_bytes(gzip.compress(b"\n" * (4 * 2**20)))
    assert "inflates to more than 1 MiB" in _err(lambda: list(jsonio.lines(lines, max_bytes=2**20)))


def test_an_endless_line_stops_at_the_line_bound(tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_bytes(b"1" * 5000)
    assert f"{f}:1: error: line is longer than" in _err(lambda: list(jsonio.lines(f, max_line=1000)))


def test_missing_file_and_directory_are_one_line(tmp_path: Path) -> None:
    assert "does not exist" in _err(jsonio.load, tmp_path / "none.json")
    assert "is a directory" in _err(jsonio.load, tmp_path)
