from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx.results.layout import ResultsDir


def _app():
    import typer

    from infx.report.cli import register as register_show
    from infx.results.cli import register as register_store

    app = typer.Typer()
    register_store(app)
    register_show(app)
    return app


@pytest.fixture(scope="module")
def report_html(_seed_template: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("report") / "results"
    shutil.copytree(_seed_template, root)
    out = root.parent / "report.html"
    res = CliRunner().invoke(_app(), ["report", str(root), "-o", str(out), "--baseline", "baseline"])
    assert res.exit_code == 0, res.output
    assert out.stat().st_mode & 0o777 == 0o644
    return out.read_text()


def test_report_is_self_contained(report_html: str) -> None:
    srcs = re.findall(r"<script[^>]*\bsrc\s*=\s*['\"]?([^'\" >]+)", report_html, flags=re.IGNORECASE)
    assert srcs == []
    assert not re.search(r"<link[^>]+href\s*=\s*['\"]?https?:", report_html, flags=re.IGNORECASE)
    assert not re.search(r"@import|url\(\s*['\"]?https?:", report_html)
    assert "Plotly.newPlot" in report_html  # the charts are drawn by the inlined library
    assert len(report_html) > 1_000_000  # plotly.js itself is inlined


def test_report_has_charts_table_failures_manifest_and_banner(report_html: str) -> None:
    for anchor in ('id="chart-main"', 'id="points-table"', 'id="failures"', 'id="manifest-table"',
                   'id="unofficial-banner"', 'id="arm-comparison"', 'id="baseline-comparison"'):
        assert anchor in report_html, anchor
    assert "Throughput per node vs interactivity" in report_html
    assert "Throughput per GPU vs interactivity" in report_html
    assert "TTFT and ITL vs concurrency" in report_html and "Latency distributions (per request)" in report_html
    assert "pull request #1234" in report_html
    assert "HIP out of memory" in report_html and "startup-oom" in report_html  # failure reason + log tail
    # the seed has one trial per point: verdicts are inconclusive, and the step shape's crossover (a
    # winner read off point estimates, noise not weighed) stays out of the report (issue 21)
    assert "crossover at" not in report_html and "inconclusive" in report_html and "A/B [95% CI]" in report_html
    assert report_html.count('<tr class="done">') == 16 and report_html.count('<tr class="failed">') == 1


def test_official_run_has_no_banner(seed_results: ResultsDir, tmp_path: Path) -> None:
    out = tmp_path / "b.html"
    res = CliRunner().invoke(_app(), ["report", str(seed_results.root), "-o", str(out), "--run", "baseline"])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert 'id="unofficial-banner"' not in text and "only one arm (TP=4)" in text


def test_unknown_run_is_a_one_line_error(seed_results: ResultsDir, tmp_path: Path) -> None:
    res = CliRunner().invoke(_app(), ["report", str(seed_results.root), "-o", str(tmp_path / "x.html"),
                                      "--run", "nope"])
    assert res.exit_code == 2
    assert "run 'nope' is not in" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("command", ["report", "compare"])
def test_read_only_commands_leave_an_empty_directory_alone(command: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    args = [command, str(empty)] + (["-o", str(tmp_path / "r.html")] if command == "report" else [])
    res = CliRunner().invoke(_app(), args)
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "no runs" in lines[0] and "Traceback" not in res.output
    assert list(empty.iterdir()) == []  # no infx.db created


def test_compare_cli_text_and_json(seed_results: ResultsDir) -> None:
    import json

    res = CliRunner().invoke(_app(), ["compare", str(seed_results.root), "-a", "tp=2", "-b", "tp=4", "--json",
                                      "--at", "15,25,60"])
    assert res.exit_code == 0, res.output
    cs = json.loads(res.output)
    (c,) = cs["comparisons"]
    assert [e["x"] for e in c["ladder"]] == [15, 25, 60]
    assert c["ladder"][2]["ratio"] is None and "no value for TP=2" in c["ladder"][2]["note"]
    res = CliRunner().invoke(_app(), ["compare", str(seed_results.root), "--baseline", "baseline"])
    assert res.exit_code == 0 and "TP=4 (pr-1234) (A) vs TP=4 (baseline) (B)" in res.output
    res = CliRunner().invoke(_app(), ["compare", str(seed_results.root), "--at", "1,x"])
    assert res.exit_code == 2 and "not a number" in res.output


def test_ingest_cli_reports_bad_points_and_is_idempotent(seed_results: ResultsDir) -> None:
    pid = "dsv41flash_tp4_conc16_kvnone_spec-mtp"
    seed_results.file("pr-1234", pid, "result.json").write_text("{")
    res = CliRunner().invoke(_app(), ["ingest", str(seed_results.root)])
    assert res.exit_code == 0
    assert "result.json:1:2: error: invalid JSON" in res.output
    assert "23 point(s) ingested" in res.output and "1 skipped" in res.output
    res = CliRunner().invoke(_app(), ["ingest", str(seed_results.root / "pr-1234"), "--strict"])
    assert res.exit_code == 2 and "0 point(s) ingested, 17 unchanged, 1 skipped" in res.output


def test_png_is_skipped_with_a_message_without_chromium(seed_results: ResultsDir, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFX_CHROMIUM", str(tmp_path / "no-such-chromium"))
    out = tmp_path / "r.html"
    res = CliRunner().invoke(_app(), ["report", str(seed_results.root), "-o", str(out), "--png"])
    assert res.exit_code == 0 and out.is_file() and not out.with_suffix(".png").exists()
    assert "chromium not found, PNG skipped" in res.output


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_png_export_with_chromium(seed_results: ResultsDir, tmp_path: Path) -> None:
    from infx.report.browser import find_chromium

    if find_chromium() is None:
        pytest.skip("chromium not installed (.ci/chromium.sh)")
    out = tmp_path / "r.html"
    res = CliRunner().invoke(_app(), ["report", str(seed_results.root), "-o", str(out), "--png"])
    assert res.exit_code == 0, res.output
    png = out.with_suffix(".png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_report_of_a_run_without_measurements_or_node_sizes(tmp_path: Path) -> None:
    from infx.results.layout import PointStatus, write_point_outcome
    from infx.results.synthetic import Arm, make_manifest, make_point, make_result

    rd = ResultsDir(tmp_path / "res")
    rd.write_manifest(make_manifest("cpu").model_copy(update={"gpus_per_node": {}}))
    p = make_point(1, 1, isl=128, osl=64, runner="cpu-local")
    write_point_outcome(rd, "cpu", p, PointStatus(state="done"), make_result(p, Arm(tp=1, t_max=100, c_half=4)))
    rd.write_manifest(make_manifest("allfail"))
    write_point_outcome(rd, "allfail", make_point(2, 1), PointStatus(state="failed", reason="boom", log_tail="oops"))
    out = tmp_path / "cpu.html"
    res = CliRunner().invoke(_app(), ["report", str(rd.root), "-o", str(out), "--run", "cpu"])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "GPUs per node unknown" in text and "per node vs interactivity" not in text
    assert "Latency distributions (summary percentiles)" in text  # no records.jsonl.gz
    assert 'id="chart-main"' in text  # the per-GPU chart is the main chart then
    res = CliRunner().invoke(_app(), ["report", str(rd.root), "-o", str(out), "--run", "allfail"])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "No measured points in this run." in text and "oops" in text


def test_pr_run_is_compared_with_the_baseline_its_manifest_names(seed_results: ResultsDir, tmp_path: Path) -> None:
    """Without --baseline, a run that records `baseline_run` (infx run --baseline-run) is compared with it."""
    out = tmp_path / "pr.html"
    res = CliRunner().invoke(_app(), ["report", str(seed_results.root), "-o", str(out), "--run", "pr-1234"])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert 'id="unofficial-banner"' in text and 'id="baseline-comparison"' in text


def test_compare_table_shows_each_ratio_with_its_interval_and_verdict(seed_results: ResultsDir,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The table under a comparison is the verdicts' evidence (ratio, 95 % CI, decision), never a bare
    step-frontier ratio that reads as a winner (issue 21's A/A run printed 1.12x-2.13x there)."""
    import json

    monkeypatch.setenv("COLUMNS", "250")
    res = CliRunner().invoke(_app(), ["compare", str(seed_results.root), "--baseline", "baseline", "--json"])
    assert res.exit_code == 0, res.output
    cs = json.loads(res.output)["comparisons"]
    assert cs[0]["by_conc"], "the same arm in two runs is matched by concurrency"
    evidence = [(v, bool(c["by_conc"])) for c in cs for v in (c["by_conc"] or c["targets"])]
    res = CliRunner().invoke(_app(), ["compare", str(seed_results.root), "--baseline", "baseline"])
    assert res.exit_code == 0, res.output
    assert res.output.count("A/B [95% CI]") == len(cs) and "point estimates only" not in res.output
    rows = [ln for ln in res.output.splitlines() if ln.count("│") == 4 and "━" not in ln]
    assert len(rows) == len(evidence)
    for ln, (v, by_conc) in zip(rows, evidence, strict=True):
        cells = [x.strip() for x in ln.split("│")]
        assert cells[0] == (f"{v['x']:g}" if by_conc else f"{v['x']:.2f}") and cells[4] == v["decision"]
        ci = "" if v["ratio_lo"] is None else f" [{v['ratio_lo']:.2f}, {v['ratio_hi']:.2f}]"
        assert cells[3] == f"{v['ratio']:.2f}x{ci}"
