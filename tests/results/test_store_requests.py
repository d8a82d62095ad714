"""The store stage's requests through the CLI (``IngestRequest``, ``MigrateRequest``; ``infx store copy``'s two
stores; ``ExportRequest`` of the interop hook): a bad choice, a value out of range, both or neither of two
options is one line naming the option, exit 2, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx.cli import _register_all, app
from infx.results.layout import ResultsDir

_register_all()

BAD = [
    (["ingest", "--format", "csv", "{results}"], "error: --format must be infx or inferencex, not 'csv' "
                                                 "(at --format)"),
    (["ingest", "--db", "{tmp}/a.db", "--store", "{tmp}/b.db", "{results}"], "error: give --store or --db, not both"),
    (["ingest", "{results}", "{tmp}"], "error: expected one results directory, got 2 paths"),
    (["ingest", "--format", "inferencex", "--results", "{results}"],
     "error: --format inferencex: give the files or directories to import"),
    (["store", "migrate", "--results", "{results}", "--revision", "0"],
     "error: --revision must be >= 1, not 0 (at --revision)"),
    (["store", "migrate", "--results", "{results}", "--revision", "99"],
     "error: --revision must be <= {head}, not 99 (at --revision)"),
    (["store", "copy", "{results}/infx.db", "sqlite:///{results}/infx.db"],
     "error: SRC and DST are the same store ({results}/infx.db)"),
    (["export", "--format", "csv", "-o", "{tmp}/out", "{results}"],
     "error: --format must be inferencex, not 'csv' (at --format)"),
]


@pytest.mark.parametrize(("argv", "line"), BAD, ids=[" ".join(a[:3]) + f" #{i}" for i, (a, _) in enumerate(BAD)])
def test_a_bad_request_is_one_line_and_writes_nothing(argv: list[str], line: str, seed_results: ResultsDir,
                                                      tmp_path: Path) -> None:
    from infx.results.store import SCHEMA_VERSION

    def fill(text: str) -> str:
        return text.format(results=seed_results.root, tmp=tmp_path, head=SCHEMA_VERSION)

    before = sorted(tmp_path.rglob("*"))
    r = CliRunner().invoke(app, [fill(a) for a in argv])
    assert r.exit_code == 2, r.output
    assert r.stderr.splitlines() == [fill(line)] and r.stdout == ""
    assert sorted(tmp_path.rglob("*")) == before  # no store, no export, no imported run


def test_the_native_format_and_the_registered_ones_are_the_choices() -> None:
    from infx.cli_options import build_request
    from infx.results.ingest_hooks import INGEST_FORMATS
    from infx.results.ingestion import IngestRequest

    assert "inferencex" in INGEST_FORMATS  # infx.interop registered it when its commands were attached
    req = build_request(IngestRequest, {"paths": [Path("x")], "db": Path("s.db")})
    assert (req.format, req.store_url, req.strict) == ("infx", "s.db", False)
    assert build_request(IngestRequest, {"format": "inferencex", "paths": [Path("a"), Path("b")]}).paths == [
        Path("a"), Path("b")]  # an import takes many files
