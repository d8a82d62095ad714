"""Compatibility with the reference generator on the real InferenceX catalog (208 entries)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infx.catalog import load_catalog, load_runners
from infx.matrix.generate import full_sweep_rows, test_config_rows

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cat(compat: Path) -> Any:
    return load_catalog([compat / "amd-master.yaml", compat / "nvidia-master.yaml"])


@pytest.fixture(scope="module")
def runners(compat: Path) -> Any:
    return load_runners(compat / "runners.yaml")


def ref(compat: Path, name: str) -> list[dict[str, Any]]:
    return json.loads((compat / "reference" / name).read_text())


def assert_same_rows(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    """Same rows, same order, every reference field with the same value and key order."""
    assert len(ours) == len(theirs)
    for i, (o, r) in enumerate(zip(ours, theirs, strict=True)):
        o = {k: v for k, v in o.items() if k != "point-id"}
        assert list(o) == list(r), f"row {i}: key order differs"
        assert o == r, f"row {i} differs"


def test_full_sweep_no_evals_matches_reference(compat: Path, cat: Any, runners: Any) -> None:
    rows = full_sweep_rows(cat, runners, evals="none")
    assert_same_rows(rows, ref(compat, "full-sweep-no-evals.json"))
    assert all(len(r["point-id"]) == 12 for r in rows)


def test_all_evals_matches_reference(compat: Path, cat: Any, runners: Any) -> None:
    # mark_all_eval_entries marks every arm, so per-arm grouping changes nothing here.
    assert_same_rows(full_sweep_rows(cat, runners, evals="all", on_warning=lambda m: None),
                     ref(compat, "full-sweep-all-evals.json"))


@pytest.mark.parametrize(
    ("pattern", "name"),
    [
        ("dsr1-fp4-mi355x-*", "test-config-dsr1-fp4-mi355x.json"),
        ("dsv4-fp4-mi355x-vllm-agentic-mtp", "test-config-dsv4-fp4-mi355x-vllm-agentic-mtp.json"),
        ("kimik3-fp4-mi355x-vllm-agentic-mtp", "test-config-kimik3-fp4-mi355x-vllm-agentic-mtp.json"),
    ],
)
def test_test_config_matches_reference(compat: Path, cat: Any, runners: Any, pattern: str, name: str) -> None:
    # The reference files were produced with the default eval mode: fixed rows carry run-eval
    # (some true), agentic rows carry run-eval false. Per-arm grouping gives the same marks here.
    theirs = ref(compat, name)
    assert any("run-eval" in r for r in theirs)
    assert_same_rows(test_config_rows(cat, runners, [pattern], on_warning=lambda m: None), theirs)


def test_point_ids_unique_and_stable(cat: Any, runners: Any) -> None:
    rows = full_sweep_rows(cat, runners, evals="none")
    ids = [r["point-id"] for r in rows]
    assert len(set(ids)) == len(ids)
    agentic = [(r["runner"], r["exp-name"]) for r in rows if r.get("scenario-type") == "agentic-coding"]
    assert len(agentic) == 746 and len(set(agentic)) == 649  # exp-names collide; point-ids do not
    again = full_sweep_rows(cat, runners, evals="default", on_warning=lambda m: None)
    assert [r["point-id"] for r in again] == ids  # eval flags are not part of the identity


def test_cli_bytes_match_reference_format(compat: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "infx.matrix.generate", "test-config", "--config-files", str(compat / "amd-master.yaml"),
         str(compat / "nvidia-master.yaml"), "--runner-config", str(compat / "runners.yaml"),
         "--config-keys", "kimik3-fp4-mi355x-vllm-agentic-mtp"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    stripped = json.dumps([{k: v for k, v in r.items() if k != "point-id"} for r in rows]) + "\n"
    assert stripped == (compat / "reference" / "test-config-kimik3-fp4-mi355x-vllm-agentic-mtp.json").read_text()


@pytest.mark.parametrize("mode", ["none", "default", "evals-only", "all"])
def test_every_row_parses_as_a_point(cat: Any, runners: Any, mode: str) -> None:
    from infx.matrix.point import Point

    rows = full_sweep_rows(cat, runners, evals=mode, on_warning=lambda m: None)
    points = [Point.from_row(r) for r in rows]
    assert [p.point_id for p in points] == [r["point-id"] for r in rows]
    assert all(p.to_row()["exp-name"] == r["exp-name"] for p, r in zip(points, rows, strict=True))
