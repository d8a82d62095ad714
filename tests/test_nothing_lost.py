"""Nothing lost (issue 26): output that cannot be written fails before any measuring, and a write that
dies half-way leaves the previous file as it was (and no temp file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx import atomic
from infx.cli import _register_all, app
from infx.loadgen.testserver import SyntheticServer

_register_all()


def _bench(srv: SyntheticServer, tokenizer: Path, out: Path):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["bench", "--base-url", srv.base_url, "--model", "m",
                                    "--tokenizer", str(tokenizer), "--concurrency", "1", "--num-prompts", "2",
                                    "--input-len", "16", "--output-len", "4",
                                    "--no-progress", "--no-summary", "--out", str(out)])


@pytest.mark.timeout(60)
def test_bench_whose_output_cannot_be_written_fails_before_measuring(tmp_path: Path, tiny_model_dir: Path) -> None:
    blocker = tmp_path / "out"
    blocker.write_text("an earlier file\n")
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.0005) as srv:
        bad = _bench(srv, tiny_model_dir, blocker)
        assert bad.exit_code == 2 and "Traceback" not in bad.stderr
        assert srv.requests == []  # not one request sent: nothing measured, nothing lost
        assert "--out" in bad.stderr and str(blocker) in bad.stderr
        good = _bench(srv, tiny_model_dir, tmp_path / "good")  # the same run, writable: it measures
        assert good.exit_code == 0, good.stderr
        assert len(srv.requests) >= 2 and (tmp_path / "good" / "result.json").is_file()
    assert blocker.read_text() == "an earlier file\n"


def test_a_write_that_dies_half_way_keeps_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "result.json"
    atomic.write_text(f, '{"v": 1}\n')

    def dying_fsync(fd: int) -> None:  # the disk fails after the new bytes went out, before the rename
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", dying_fsync)
    with pytest.raises(atomic.WriteFault, match="Input/output error"):  # one line naming the file, exit 2
        atomic.write_text(f, '{"v": 2, "and": "much more"}\n')
    assert f.read_text() == '{"v": 1}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temp file left behind
