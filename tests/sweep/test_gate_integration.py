"""``infx run`` gates on the same checks as ``infx preflight`` (placeholders in catalog/changelog, memory, evals)
and ``infx run --changelog`` selects exactly what ``infx changelog matrix`` selects. No engine starts here:
the gate runs for real (real recipes, cards, preflight), launches go to the fake starter."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infx.sweep.execute import Wiring, run_sweep
from infx.sweep.prepare import ChangelogSelection, RunRequest, prepare
from tests.changelog.helpers import GitRepo

from .fakes import FakeMeasurer, FakeStarter

REPO = Path(__file__).resolve().parents[2]
DEMO = "tinyllama-bf16-cpu-vllm"


def _entry(conc: list[int], isl: int = 256) -> dict:
    data = yaml.safe_load((REPO / "configs/cpu-master.yaml").read_text())[DEMO]
    data["scenarios"]["fixed-seq-len"] = [{"isl": isl, "osl": 64, "search-space": [{"tp": 1, "conc-list": conc}]}]
    return data


def _catalog(tmp_path: Path, changelog: str | None = None) -> Path:
    """A workspace in ``tmp_path`` (marker, catalog, optional perf-changelog); returns its catalog file."""
    (tmp_path / "infx.toml").write_text("")
    master = tmp_path / "configs" / "test-master.yaml"
    master.parent.mkdir(exist_ok=True)
    master.write_text(yaml.safe_dump({DEMO: _entry([1, 2]), "tinyllama-todo": _entry([1], isl=128)},
                                     sort_keys=False))
    if changelog is not None:
        (tmp_path / "perf-changelog.yaml").write_text(changelog)
    return master


def _run(tmp_path: Path, master: Path, runners: Path, keys: list[str]):  # type: ignore[no-untyped-def]
    req = RunRequest(config_files=[str(master)], runner_config=str(runners), config_keys=keys,
                     results=str(tmp_path / "results"), run_id="gated", workspace=str(tmp_path))
    prep = prepare(req)
    starter = FakeStarter()
    summary = run_sweep(prep, Wiring(starter, FakeMeasurer()))
    return prep, starter, summary


def test_placeholder_in_the_changelog_entry_skips_only_that_entrys_points(tmp_path: Path) -> None:
    # the TODO reaches no launch argument: only the placeholder scan (catalog key <- changelog globs) finds it
    master = _catalog(tmp_path, "- config-keys:\n    - tinyllama-todo\n  description:\n    - \"TODO: say why\"\n"
                                "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n")
    prep, starter, summary = _run(tmp_path, master, REPO / "configs/runners.yaml", [DEMO, "tinyllama-todo"])
    todo = [p.point_id for p in prep.points if p.isl == 128]
    assert len(todo) == 1 and summary.skipped == todo
    st = prep.run_dir.read_status(todo[0])
    assert st is not None and st.state == "skipped"
    assert st.failure_class == "preflight:placeholders" and "TODO: say why" in st.reason
    assert sorted(summary.done) == sorted(p.point_id for p in prep.points if p.isl == 256)
    assert len(starter.started) == 1  # the clean entry's one launch group; nothing for the rejected point
    assert not (prep.run_dir.point_dir(todo[0]) / "result.json").exists()


def test_memory_failure_skips_every_point_with_zero_launches(tmp_path: Path) -> None:
    master = _catalog(tmp_path)
    runners = tmp_path / "runners.yaml"
    runners.write_text(re.sub(r"available-cpu-dram-mib: 24_000", "available-cpu-dram-mib: 1",
                              (REPO / "configs/runners.yaml").read_text()))
    prep, starter, summary = _run(tmp_path, master, runners, [DEMO])
    assert len(prep.points) == 2 and sorted(summary.skipped) == sorted(p.point_id for p in prep.points)
    assert starter.started == [] and summary.launches == 0 and summary.done == []
    for p in prep.points:
        st = prep.run_dir.read_status(p.point_id)
        assert st is not None and st.state == "skipped" and "memory" in (st.failure_class or "")
        assert "host memory" in st.reason


def test_run_dry_run_prints_the_reject_reason(tmp_path: Path) -> None:
    _catalog(tmp_path, "- config-keys:\n    - tinyllama-todo\n  description:\n    - \"FIXME later\"\n"
                       "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n")
    r = subprocess.run([sys.executable, "-m", "infx", "--workspace", str(tmp_path), "run", "--runner-config",
                        str(REPO / "configs/runners.yaml"), "--config-keys", "tinyllama*", "--results",
                        str(tmp_path / "res"), "--run-id", "dry", "--dry-run"], cwd=REPO, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "3 point(s), 1 launch group(s), 1 rejected by the gate" in r.stderr
    assert re.search(r"rejected \w+: preflight:placeholders: .*FIXME later", r.stderr), r.stderr
    plan = json.loads((tmp_path / "res" / "dry" / "plan.json").read_text())
    assert len(plan["groups"]) == 1 and len(plan["groups"][0]["point_ids"]) == 2
    assert not list((tmp_path / "res" / "dry").glob("points/*/status.json"))  # nothing launched or recorded


# ------------------------------------------------------------------------------------------ --changelog

LOG = "perf-changelog.yaml"
BASE_LOG = (b"- config-keys:\n    - tinyllama-bf16-cpu-vllm\n  description:\n    - \"first sweep\"\n"
            b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n")
NEW_ENTRY = (b"\n- config-keys:\n    - tinyllama-bf16-cpu-vllm\n  description:\n    - \"more concurrency\"\n"
             b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2\n  append-only: true\n")


@pytest.fixture
def change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[GitRepo, str, str]:
    """Base: the demo entry at conc 1,2. Head: conc 1,2,4,8 with an append-only changelog entry, so the
    change selects exactly the two new points."""
    for name in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REF", "INFX_CHANGELOG_REPO"):
        monkeypatch.delenv(name, raising=False)
    repo = GitRepo(tmp_path / "repo")
    runners = (REPO / "configs/runners.yaml").read_bytes()

    def master(conc: list[int]) -> bytes:
        return yaml.safe_dump({DEMO: _entry(conc)}, sort_keys=False).encode()

    base = repo.commit({LOG: BASE_LOG, "configs/cpu-master.yaml": master([1, 2]), "configs/runners.yaml": runners})
    head = repo.commit({LOG: BASE_LOG + NEW_ENTRY, "configs/cpu-master.yaml": master([1, 2, 4, 8])})
    return repo, base, head


def _matrix_ids(repo: GitRepo, base: str, head: str) -> list[str]:
    r = subprocess.run([sys.executable, "-m", "infx", "changelog", "matrix", "--base-ref", base, "--head-ref", head,
                        "--repo", str(repo.path)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    buckets = json.loads(r.stdout)
    ids = []
    for name, rows in buckets.items():
        if name == "changelog_metadata" or not isinstance(rows, (list, dict)):
            continue
        for row in rows.values() if isinstance(rows, dict) else rows:
            if isinstance(row, dict) and "point-id" in row:
                ids.append(row["point-id"])
            elif isinstance(row, list):
                ids += [x["point-id"] for x in row if isinstance(x, dict) and "point-id" in x]
    return ids


def test_run_changelog_selects_what_changelog_matrix_selects(tmp_path: Path, change) -> None:  # type: ignore[no-untyped-def]
    repo, base, head = change
    expected = _matrix_ids(repo, base, head)
    assert len(expected) == 2  # the two appended concurrencies (4, 8)
    results = tmp_path / "results"
    r = subprocess.run([sys.executable, "-m", "infx", "run", "--changelog", "--base-ref", base, "--head-ref", head,
                        "--repo", str(repo.path), "--results", str(results), "--dry-run"],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    plans = list(results.glob("*/plan.json"))
    assert len(plans) == 1 and plans[0].parent.name == f"changelog-{base[:12]}-{head[:12]}"
    plan = json.loads(plans[0].read_text())
    assert sorted(plan["points"]) == sorted(expected)
    assert sorted(pid for g in plan["groups"] for pid in g["point_ids"]) == sorted(expected)
    assert sorted(row["conc"] for row in plan["points"].values()) == [4, 8]
    assert plan["request"]["changelog"]["head_ref"] == head


def test_run_changelog_through_the_driver_launches_only_the_change(tmp_path: Path, change) -> None:  # type: ignore[no-untyped-def]
    repo, base, head = change
    req = RunRequest(config_files=[str(repo.path / "configs/cpu-master.yaml")],
                     runner_config=str(repo.path / "configs/runners.yaml"), config_keys=[],
                     results=str(tmp_path / "results"),
                     changelog=ChangelogSelection(repo=str(repo.path), base_ref=base, head_ref=head))
    prep = prepare(req)
    starter, measurer = FakeStarter(), FakeMeasurer()
    summary = run_sweep(prep, Wiring(starter, measurer))
    assert sorted(measurer.measured) == sorted(_matrix_ids(repo, base, head)) == sorted(summary.done)
    assert len(starter.started) == 1 and prep.run_id.startswith("changelog-")


def test_run_changelog_option_errors_are_diagnostics(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "infx", "run", "--changelog", "--base-ref", "HEAD", "--results",
                        str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--changelog needs --base-ref and --head-ref" in r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "infx", "run", "--results", str(tmp_path)], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "missing option --config-keys" in r.stderr
