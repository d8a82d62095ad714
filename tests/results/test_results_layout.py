from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.results.layout import (
    PointStatus,
    ResultsDir,
    StartupSummary,
    check_name,
    write_point_outcome,
)
from infx.results.synthetic import SEED_ARMS, make_manifest, make_point, make_result


def test_roundtrip_of_every_file(tmp_path: Path) -> None:
    rd = ResultsDir(tmp_path)
    rd.write_manifest(make_manifest("r1", official=False, baseline="base"))
    point = make_point(2, 8)
    result = make_result(point, SEED_ARMS[0])
    status = PointStatus(state="done", launch_fingerprint="fp", startup=StartupSummary(kv_cache_tokens=1234))
    d = write_point_outcome(rd, "r1", point, status, result, records=[{"a": 1}], engine_log="log\n")
    assert d == tmp_path / "r1" / "points" / point.point_id
    assert sorted(p.name for p in d.iterdir()) == ["engine.log", "point.json", "records.jsonl.gz",
                                                   "result.json", "status.json"]
    assert rd.runs() == ["r1"] and rd.points("r1") == [point.point_id]
    m = rd.read_manifest("r1")
    assert (m.official, m.pr.number if m.pr else None, m.baseline_run) == (False, 1234, "base")
    pf = rd.read_point("r1", point.point_id)
    assert pf.typed() == point and pf.launch_fingerprint == "fp"
    assert rd.read_status("r1", point.point_id).startup.kv_cache_tokens == 1234
    assert rd.read_result("r1", point.point_id) == result
    assert json.loads(gzip.decompress((d / "records.jsonl.gz").read_bytes())) == {"a": 1}
    assert rd.read_engine_log("r1", point.point_id) == "log\n"


@pytest.mark.parametrize("bad", ["../etc", "a/b", "..", "", ".hidden", "x\x00y", "a\\b"])
def test_ids_must_be_one_safe_path_component(bad: str) -> None:
    with pytest.raises(InfxError):
        check_name(bad, "run id")
    with pytest.raises(InfxError):
        ResultsDir("/tmp").run_dir(bad)


def test_bad_json_reports_file_line_col(tmp_path: Path) -> None:
    rd = ResultsDir(tmp_path)
    rd.write_manifest(make_manifest("r1"))
    path = rd.manifest_path("r1")
    path.write_text('{\n  "run_id": "r1",\n  "started_at": oops\n}\n')
    with pytest.raises(InfxError) as exc:
        rd.read_manifest("r1")
    d = exc.value.diagnostics[0]
    assert (d.file, d.line) == (str(path), 3) and "invalid JSON" in d.message


def test_bad_field_reports_its_position(tmp_path: Path) -> None:
    rd = ResultsDir(tmp_path)
    point = make_point(4, 1)
    rd.write_status("r1", point.point_id, PointStatus(state="done"))
    path = rd.file("r1", point.point_id, "status.json")
    path.write_text('{\n  "state": "exploded"\n}\n')
    with pytest.raises(InfxError) as exc:
        rd.read_status("r1", point.point_id)
    d = exc.value.diagnostics[0]
    assert d.line == 2 and d.path == ("state",) and "exploded" in d.message
    assert str(d).startswith(f"{path}:2:")


def test_manifest_run_id_must_match_directory(tmp_path: Path) -> None:
    rd = ResultsDir(tmp_path)
    rd.write_manifest(make_manifest("r1"))
    (tmp_path / "r1").rename(tmp_path / "r2")
    with pytest.raises(InfxError, match="does not match"):
        rd.read_manifest("r2")


def test_startup_summary_from_any_parser_output() -> None:
    s = StartupSummary.from_facts({"kv_cache_tokens": 5, "max_concurrency": 2.5, "graph_sizes": "1,2,4", "x": [1]})
    assert s is not None and s.kv_cache_tokens == 5 and s.max_concurrency == 2.5
    assert s.other == {"graph_sizes": "1,2,4"}
    assert StartupSummary.from_facts(None) is None
