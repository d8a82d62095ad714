"""The show commands' requests (``CompareRequest``, ``ReportRequest``, ``ServeRequest``, ``CostExportRequest``)
through the CLI: a bad choice, a value out of range or two options that exclude each other is one line naming
the option, exit 2, before the store is opened (no ``infx.db`` is created); the defaults are the models'."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx.cli import _register_all, app
from infx.diagnostics import InfxError
from infx.results.layout import ResultsDir

_register_all()

BAD = [
    (["compare", "--per", "rack"], "error: --per must be gpu, node or server, not 'rack' (at --per)"),
    (["compare", "--metric", "watts"], "error: --metric must be total, output, energy or cost, not 'watts' "
                                       "(at --metric)"),
    (["compare", "--x", "ttft"], "error: --x must be interactivity or interactivity_p90, not 'ttft' (at --x)"),
    (["compare", "--metric", "cost", "--basis", "both"], "error: --basis must be all or role, not 'both' "
                                                         "(at --basis)"),
    (["compare", "--margin", "1"], "error: --margin must be a fraction in (0, 1) such as 0.05, not 1 (at --margin)"),
    (["compare", "--margin", "nan"], "error: --margin must be a fraction in (0, 1) such as 0.05, not nan "
                                     "(at --margin)"),
    (["compare", "--ladder", "1"], "error: --ladder must be >= 2, not 1 (at --ladder)"),
    (["compare", "--gpus-per-node", "0"], "error: --gpus-per-node must be >= 1, not 0 (at --gpus-per-node)"),
    (["compare", "--at", "10,-5"], "error: --at: '-5' is not a positive interactivity target (tok/s/user) "
                                   "(at --at)"),
    (["compare", "--at", "10,inf"], "error: --at: 'inf' is not a positive interactivity target (tok/s/user) "
                                    "(at --at)"),
    (["compare", "--at", "10,x"], "error: --at: not a number: 'x' (expected e.g. 10,20,40) (at --at)"),
    (["compare", "--as-of", "latest", "--run", "pr-1234", "--baseline", "baseline"],
     "error: --as-of compares the curves as of then with --run or --baseline, not both"),
    (["report", "--gpus-per-node", "-1"], "error: --gpus-per-node must be >= 1, not -1 (at --gpus-per-node)"),
    (["serve", "--port", "65536"], "error: --port must be <= 65535, not 65536 (at --port)"),
    (["serve", "--port", "-1"], "error: --port must be >= 0, not -1 (at --port)"),
    (["cost", "export", "--format", "xml"], "error: --format must be csv or json, not 'xml' (at --format)"),
]


@pytest.mark.parametrize(("argv", "line"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_option_is_one_line_naming_it_before_the_store_is_opened(argv: list[str], line: str,
                                                                      seed_results: ResultsDir) -> None:
    out = seed_results.root.parent / "r.html"
    r = CliRunner().invoke(app, [*argv, str(seed_results.root), *(["-o", str(out)] if argv[0] == "report" else [])])
    assert r.exit_code == 2, r.output
    assert r.stderr.splitlines() == [line] and r.stdout == ""
    assert not seed_results.db_path.exists() and not out.exists()  # refused before anything was read or written


def test_the_requests_defaults_are_what_the_commands_run_with(seed_results: ResultsDir) -> None:
    import json

    from infx.cli_options import default_of
    from infx.report.build import ReportRequest
    from infx.report.comparison import CompareRequest
    from infx.report.costexport import CostExportRequest
    from infx.report.server import ServeRequest

    assert (default_of(CompareRequest, "per"), default_of(CompareRequest, "margin"),
            default_of(CompareRequest, "ladder_points")) == ("node", 0.05, 10)
    assert default_of(ReportRequest, "output") == Path("report.html")
    assert (default_of(ServeRequest, "host"), default_of(ServeRequest, "port")) == ("127.0.0.1", 8787)
    assert default_of(CostExportRequest, "format") == "csv"
    # a comparison given the defaults by hand is the comparison without them
    base = ["compare", str(seed_results.root), "-a", "tp=2", "-b", "tp=4", "--json"]
    plain = CliRunner().invoke(app, base)
    given = CliRunner().invoke(app, [*base, "--per", "node", "--metric", "total", "--x", "interactivity",
                                     "--ladder", "10", "--margin", "0.05"])
    assert plain.exit_code == given.exit_code == 0, plain.output + given.output
    assert json.loads(plain.stdout) == json.loads(given.stdout)
    assert json.loads(plain.stdout)["norm"] == "node"


def test_interactivity_targets_are_read_from_one_text() -> None:
    from infx.cli_options import build_request
    from infx.report.comparison import CompareRequest

    assert build_request(CompareRequest, {"at": " 10, 20,,40 "}).at == [10.0, 20.0, 40.0]
    assert build_request(CompareRequest, {"at": ""}).at is None
    assert build_request(CompareRequest, {"at": [15.0, 25.0]}).at == [15.0, 25.0]  # already numbers: checked only
    with pytest.raises(InfxError, match="must be > 0"):
        build_request(CompareRequest, {"at": [15.0, 0.0]})
