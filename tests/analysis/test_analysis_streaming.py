"""Points whose streaming check warned (responses that arrived in one chunk) keep their throughput but lose
their TPOT-based interactivity, so they never shape a frontier; the report says so."""

from __future__ import annotations

import json

from infx.analysis.dataset import frontier_membership, load_measured, streaming_warned
from infx.metrics.result import BenchResult, Check
from infx.report.data import load_report_data
from infx.results.layout import ResultsDir
from infx.results.store import Store

RUN = "pr-1234"


def _mark_buffered(results: ResultsDir) -> str:
    """Give one measured point of RUN a failed streaming check and an absurd interactivity (what a burst
    produces); returns its point id."""
    path = next(p for p in sorted((results.run_dir(RUN) / "points").glob("*/result.json")))
    r = BenchResult.model_validate_json(path.read_text())
    checks = [c for c in r.checks if c.name != "streaming"]
    checks.append(Check(name="streaming", status="warn",
                        detail="13 of 16 multi-token responses arrived in a single chunk (buffered by the server?)"))
    metrics = r.metrics.model_copy(update={"interactivity_median": 2.5e6, "interactivity_p90": 1.0e6})
    path.write_text(r.model_copy(update={"checks": checks, "metrics": metrics}).model_dump_json())
    return path.parent.name


def test_streaming_warned_reads_the_stored_checks() -> None:
    assert streaming_warned(json.dumps([{"name": "streaming", "status": "warn", "detail": "x"}]))
    assert streaming_warned(json.dumps([{"name": "streaming", "status": "fail", "detail": "x"}]))
    assert not streaming_warned(json.dumps([{"name": "streaming", "status": "ok", "detail": "x"},
                                            {"name": "client_lag", "status": "warn", "detail": "x"}]))
    assert not streaming_warned("[]") and not streaming_warned(None) and not streaming_warned("not json")


def test_buffered_point_leaves_the_frontier(seed_results: ResultsDir) -> None:
    bad = _mark_buffered(seed_results)
    with Store(seed_results.db_path) as st:
        st.ingest_dir(seed_results.root)
        measured = load_measured(st, [RUN])
        data = load_report_data(st, RUN)
    (m,) = [m for m in measured if m.point_id == bad]
    assert m.buffered_stream and m.interactivity_median is None and m.interactivity_p90 is None
    assert m.total_tok_per_s > 0  # throughput is still real
    others = [x for x in measured if x.point_id != bad]
    assert others and not any(x.buffered_stream for x in others)
    assert all(x.interactivity_median is not None for x in others)
    member = frontier_membership(measured)
    assert not member[next(i for i, x in enumerate(measured) if x.point_id == bad)]
    assert any("streaming check" in n for n in data.notes)
