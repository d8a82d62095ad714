"""--github-matrix buckets and the reusable workflows, golden-tested (no Actions runner can run here)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from infx.matrix.github import MAX_JOBS_PER_MATRIX, add_flag, emit, github_matrix

GOLDEN = Path(__file__).parent / "golden"
WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"


def test_buckets_match_golden():
    rows = json.loads((GOLDEN / "github_matrix_rows.json").read_text())
    got = github_matrix(rows).to_json(indent=1) + "\n"
    if os.environ.get("INFX_UPDATE_GOLDEN"):
        (GOLDEN / "github_matrix.json").write_text(got)
    assert got == (GOLDEN / "github_matrix.json").read_text()


def test_bucket_rules():
    rows = json.loads((GOLDEN / "github_matrix_rows.json").read_text())
    m = github_matrix(rows)
    assert set(m.single_node) == {"1k1k", "8k1k", "agentic"}
    assert all(r["isl"] == 8192 and r["osl"] == 1024 for r in m.single_node["8k1k"])
    assert all(r.get("scenario-type") == "agentic-coding" for r in m.single_node["agentic"])
    assert all("prefill" in r for rows_ in m.multi_node.values() for r in rows_)
    for name in ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals"):
        assert getattr(m, name) and all(r["eval-only"] for r in getattr(m, name))
    assert all("prefill" not in r and r.get("scenario-type") != "agentic-coding" for r in m.evals)
    # the duplicated first row is kept once; nothing else is lost
    assert sum(len(v) for v in m.buckets().values()) == len(rows) - 1
    # rows pass through unchanged (the job hands them to `infx run-point --row`)
    assert m.single_node["8k1k"][0] == rows[0]


def test_throughput_row_with_run_eval_stays_throughput():
    row = {"isl": 1024, "osl": 1024, "conc": 4, "run-eval": True, "point-id": "x"}
    m = github_matrix([row])
    assert m.single_node == {"1k1k": [row]} and m.evals == []


def test_emit_is_one_line_json_and_flag_parses():
    import argparse

    out = emit([{"isl": 1024, "osl": 1024, "conc": 1, "point-id": "a"}])
    assert "\n" not in out and json.loads(out)["single_node"]["1k1k"][0]["point-id"] == "a"
    p = argparse.ArgumentParser()
    add_flag(p)
    assert p.parse_args(["--github-matrix"]).github_matrix is True


def test_oversized_bucket_is_reported():
    rows = [{"isl": 1024, "osl": 1024, "conc": c, "point-id": str(c)} for c in range(MAX_JOBS_PER_MATRIX + 1)]
    assert github_matrix(rows).oversized() == [f"single_node.1k1k ({MAX_JOBS_PER_MATRIX + 1} rows)"]


def _load(name: str) -> dict:
    # PyYAML reads the bare key `on` as True
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True, data.get("on"))
    return data


def test_point_workflow_runs_run_point_and_uploads_the_point_dir():
    wf = _load("infx-point.yml")
    call = wf["on"]["workflow_call"]
    assert call["inputs"]["row"]["required"] is True and call["inputs"]["row"]["type"] == "string"
    job = wf["jobs"]["point"]
    assert job["env"]["INFX_ROW"] == "${{ inputs.row }}"
    steps = job["steps"]
    run = next(s for s in steps if s.get("id") == "run")["run"]
    assert "infx run-point --row \"$INFX_ROW\"" in run  # the row arrives via env, never spliced into the script
    assert "inputs.row" not in run
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()"
    assert "results/${{ inputs.run-id }}/points/${{ fromJson(inputs.row)['point-id'] }}" in upload["with"]["path"]


def test_sweep_workflow_fans_buckets_out_to_the_point_workflow():
    wf = _load("infx-sweep.yml")
    plan = wf["jobs"]["plan"]
    assert "--github-matrix" in next(s for s in plan["steps"] if s.get("id") == "matrix")["run"]
    fan = {name: job for name, job in wf["jobs"].items() if name != "plan"}
    assert {"single-node-1k1k", "single-node-8k1k", "single-node-agentic", "evals", "agentic-evals"} <= set(fan)
    for job in fan.values():
        assert job["uses"] == "./.github/workflows/infx-point.yml"
        assert job["with"]["row"] == "${{ toJson(matrix.row) }}"
        assert job["strategy"]["fail-fast"] is False
        assert "if" in job  # GitHub rejects an empty matrix
