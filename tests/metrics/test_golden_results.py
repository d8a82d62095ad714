"""``result.json`` files written before the typed result contract (issue 20) still read, ingest, report and
export with byte-for-byte the same figures, and today's model writes back what the old infx wrote.

``tests/fixtures/golden_results``: ``results/`` was measured and written by infx at ce04c15 (loadgen single
trial and ``--trials 3``; telemetry with valid and invalid power, CPU energy and engine state; an agentic
point with sessions and the server's prefix cache; a disaggregated multi-node point; synthetic runs; two
results in older shapes); ``expected/`` is what that infx made of them (``make_golden.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.metrics.result import BenchResult
from infx.results.layout import read_model
from tests.metrics.golden import observe

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "golden_results"
RESULTS = sorted((FIXTURE / "results").glob("*/points/*/result.json"))
# hand-edited into the shapes older infx wrote (make_golden.py): not in today's key set or layout
OLDER = {"golden/points/golden_tp4_conc2_1024_128", "golden/points/dsv41flash_tp4_conc4_kvnone_spec-mtp"}


def _name(path: Path) -> str:
    return path.parent.relative_to(FIXTURE / "results").as_posix()


def test_older_results_ingest_report_and_export_the_same_figures(tmp_path: Path) -> None:
    got = observe(FIXTURE / "results", tmp_path)
    want = {p.name: p.read_text(encoding="utf-8") for p in sorted((FIXTURE / "expected").iterdir())}
    assert sorted(got) == sorted(want)
    for name, text in want.items():
        assert got[name] == text, f"{name} differs from what infx at ce04c15 made of the same results"


@pytest.mark.parametrize("path", [p for p in RESULTS if _name(p) not in OLDER], ids=_name)
def test_result_json_reads_and_writes_back_byte_for_byte(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    result = read_model(path, BenchResult)
    assert result.model_dump_json(indent=2) + "\n" == text
