"""Real history: a workspace made from the InferenceX corpus, one real bench script changed the way the
seed changed its recipe (dsv4_fp4_b200_vllm_mtp.sh: no fixed --max-num-seqs, capture sizes up to
max(2*CONC, 128)). Only that script's rows are in the changed set, and launch-derivation shows the new
capture ceiling per concurrency. Real git, real sandbox."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.engines.test_scripts_seed import CORPUS, ENTRY, SCRIPT, _seed_edit

from .helpers import findings, review
from .seedrepo import git

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) not installed"),
    pytest.mark.skipif(not (CORPUS / "benchmarks").is_dir(), reason="InferenceX corpus absent"),
]


def build_inferencex_workspace(root: Path) -> tuple[str, str]:
    """base = the corpus as published; head = the seed's edit of one agentic bench script + its changelog entry."""
    (root / "configs").mkdir(parents=True)
    for f in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
        shutil.copy(CORPUS / f, root / "configs" / f)
    shutil.copy(CORPUS / "perf-changelog.yaml", root / "perf-changelog.yaml")
    shutil.copytree(CORPUS / "benchmarks", root / "benchmarks")
    (root / "infx.toml").write_text("")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD")
    script = root / SCRIPT
    script.write_text(_seed_edit(script.read_text()))
    with open(root / "perf-changelog.yaml", "ab") as fh:
        fh.write(ENTRY)
    git(root, "commit", "-q", "-am", "seed edit")
    return base, git(root, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def ix(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    root = tmp_path_factory.mktemp("ix") / "repo"
    return (root, *build_inferencex_workspace(root))


def test_only_the_edited_scripts_rows_change_and_the_table_shows_the_new_ceiling(ix: tuple[Path, str, str]) -> None:
    root, base, head = ix
    rep = review(root, base, head)
    p = rep.summary.points
    assert p.added == 0 and p.removed == 0 and p.changed > 0 and p.unchanged > 1000
    tables = [f for f in findings(rep, "launch-derivation") if "table" in f.evidence]
    rows = {(f.evidence["arm"], r["conc"]): r for f in tables for r in f.evidence["table"]}
    assert len(rows) == p.changed  # one table row per changed point, every one from this script
    assert all(f.evidence["arm"].startswith("dsv4-fp4-b200-vllm-agentic-mtp/") for f in tables)
    for (_, conc), r in rows.items():
        assert r["head"]["capture_ceiling"] == max(2 * conc, 128)
        assert r["head"]["capture_ceiling_source"].endswith(f"{SCRIPT}:275")
        assert r["head"]["max_num_seqs_source"] == "engine default"
        assert r["base"]["capture_ceiling"] != r["head"]["capture_ceiling"]
        assert r["base"]["max_num_seqs_source"].startswith("--max-num-seqs, " + SCRIPT)
    changed_points = {n for f in findings(rep, "recipe-link") for n in f.points}
    assert changed_points and all(n.startswith("dsv4_tp") for n in changed_points)
