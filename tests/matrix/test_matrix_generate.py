"""Generator semantics: conc expansion, DRAM budget, filters, CLI, the repo's own catalog."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infx.catalog import load_catalog, load_runners
from infx.diagnostics import InfxError
from infx.matrix.conc import expand_range, fixed_concs, list_concs
from infx.matrix.dram import DramBudgetError, dram_budget_gb, single_node_gpus
from infx.matrix.generate import full_sweep_rows, resolve_keys, test_config_rows
from infx.matrix.point import Point
from infx.matrix.select import select_points

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
SEED = "dsv41flash-fp4-mi355x-vllm-agentic-dspark"


def test_conc_expansion_examples() -> None:
    assert expand_range(4, 48) == [4, 8, 16, 32, 48]
    assert expand_range(1, 6) == [1, 2, 4, 6]
    assert expand_range(8, 8) == [8]
    assert expand_range(4, 64, 4) == [4, 16, 64]


def test_full_sweep_min_max_semantics() -> None:
    assert fixed_concs(4, 64, None, min_conc=10) == [10, 20, 40, 64]
    assert fixed_concs(4, 8, None, min_conc=16) == []
    assert fixed_concs(4, 64, None, max_conc=20) == [4, 8, 16, 20]
    assert fixed_concs(32, 64, None, max_conc=16) == [16]  # the reference fabricates this point
    assert fixed_concs(None, None, [32, 64], max_conc=16) == [16]
    assert list_concs(None, None, [1, 4, 8], max_conc=2, fabricate=False) == [1]
    assert list_concs(None, None, [4, 8], max_conc=2, fabricate=False) == []


def test_dram_budget_worked_values() -> None:
    assert dram_budget_gb(2_964_436, 8, 0.8, 4) == 1199  # b300-nv tp4
    assert dram_budget_gb(2_964_436, 8, 0.8, 8) == 2399  # b300-nv tp8
    assert dram_budget_gb(3_095_781, 8, 0.5, 8) == 1499  # mi355x-amds tp8
    assert dram_budget_gb(3_095_781, 8, 1.0, 8) == 2999  # 3 TB decimal cap
    with pytest.raises(DramBudgetError, match="requires 16 GPUs and exceeds gpus-per-node=8"):
        single_node_gpus(8, 2, 1, 8, "cluster:x")


@pytest.fixture(scope="module")
def repo_cat() -> Any:
    return load_catalog([CONFIGS / "amd-master.yaml", CONFIGS / "cpu-master.yaml"])


@pytest.fixture(scope="module")
def repo_runners() -> Any:
    return load_runners(CONFIGS / "runners.yaml")


def test_seed_entry_prints_16_named_points(repo_cat: Any, repo_runners: Any) -> None:
    rows = test_config_rows(repo_cat, repo_runners, [SEED])
    names = [r["exp-name"] for r in rows]
    concs = [1, 2, 4, 8, 16, 32, 64, 128]
    assert names == [f"dsv41flash_tp{tp}_conc{c}_kvnone_spec-mtp" for tp in (4, 2) for c in concs]
    for r in rows:
        assert r["runner"] == "cluster:mi355x-amds" and r["precision"] == "fp4"
        assert r["spec-decoding"] == "mtp" and r["kv-offloading"] == "none" and r["total-cpu-dram-gb"] == 0
        assert r["image"] == "vllm/vllm-openai-rocm:nightly-rocm100-3df4ae153eb385e27b52f26c81f8edb9e20b9984"
        assert r["model"] == "deepseek-ai/DeepSeek-V4.1-Flash" and r["run-eval"] is False
    assert len({r["point-id"] for r in rows}) == 16
    assert repo_cat.entries[SEED].scenarios.agentic_coding[0].dram_utilization == 0.60


def test_seed_cli_evals_only() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "infx.matrix.generate", "test-config", "--config-files", "configs/amd-master.yaml",
         "--runner-config", "configs/runners.yaml", "--config-keys", SEED, "--evals-only"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    rows = json.loads(proc.stdout)
    assert [(r["tp"], r["conc"]) for r in rows] == [(4, 128), (2, 128)]


def test_cpu_catalog(repo_cat: Any, repo_runners: Any) -> None:
    rows = test_config_rows(repo_cat, repo_runners, ["tinyllama-*"], evals="none")
    fixed = [r for r in rows if r.get("isl") == 256]  # the demo sweep (the 8k1k entry is the eval one)
    assert [r["conc"] for r in rows if r.get("isl") == 8192] == [16]
    agentic = [r for r in rows if r.get("scenario-type") == "agentic-coding"]
    assert [(r["conc"], r["spec-decoding"]) for r in fixed] == [(1, "none"), (2, "none"), (4, "none"), (8, "none"),
                                                               (16, "none"), (1, "ngram"), (4, "ngram"),
                                                               (16, "ngram")]
    assert all(r["runner"] == "local" and r["tp"] == 1 and r["max-model-len"] <= 2048 for r in fixed)
    assert [r["conc"] for r in agentic] == [1, 2, 4]
    assert all(r["runner"] == "cluster:local" for r in agentic)


def test_resolve_keys_globs_and_errors(repo_cat: Any) -> None:
    assert resolve_keys(repo_cat, ["tinyllama-*", "tinyllama-bf16-cpu-vllm", SEED]) == [
        "tinyllama-bf16-cpu-vllm", "tinyllama-bf16-cpu-vllm-agentic", "tinyllama-bf16-cpu-vllm-eval", SEED]
    with pytest.raises(InfxError) as exc:
        resolve_keys(repo_cat, ["nope-*", "tinyllama-*", "missing"])
    assert "not found: nope-*, missing" in str(exc.value)


def test_select_points_returns_typed_points() -> None:
    points = select_points([CONFIGS / "cpu-master.yaml"], CONFIGS / "runners.yaml", ["tinyllama-bf16-cpu-vllm"])
    assert all(isinstance(p, Point) for p in points)
    assert [p.concs for p in points] == [[1], [2], [4], [8], [16], [1], [4], [16]]  # plain, then n-gram arm
    assert points[0].to_row()["point-id"] == points[0].point_id


def test_filters(repo_cat: Any, repo_runners: Any) -> None:
    rows = full_sweep_rows(repo_cat, repo_runners, evals="none", max_conc=8, scenario_types=["agentic-coding"])
    assert {r["conc"] for r in rows} == {1, 2, 4, 8}
    rows = test_config_rows(repo_cat, repo_runners, [SEED], conc=[4, 128], evals="none")
    assert [r["conc"] for r in rows] == [4, 128, 4, 128]
    rows = test_config_rows(repo_cat, repo_runners, [SEED], conc=[1], runner_node_filter="amds_0", evals="none")
    assert [r["runner"] for r in rows][:3] == ["mi355x-amds_00", "mi355x-amds_01", "mi355x-amds_02"]
    rows = test_config_rows(repo_cat, repo_runners, [SEED], conc=[1], runner_node_filter="cluster:", evals="none")
    assert [r["runner"] for r in rows] == ["cluster:mi355x-amds"] * 2  # test-config keeps a matching label
    assert full_sweep_rows(repo_cat, repo_runners, runner_node_filter="cluster:", evals="none") == []
    assert full_sweep_rows(repo_cat, repo_runners, model_prefix=["tiny"], multi_node=True) == []
    with pytest.raises(InfxError, match="Invalid runner type"):
        full_sweep_rows(repo_cat, repo_runners, runner_type=["h100"])
    with pytest.raises(InfxError, match="--step-size must be > 1"):
        full_sweep_rows(repo_cat, repo_runners, step_size=1)


def test_dram_rows_and_missing_hardware(tmp_path: Path, repo_runners: Any) -> None:
    base = (CONFIGS / "amd-master.yaml").read_text().replace(
        "{ tp: 2, kv-offloading: none,", "{ tp: 8, kv-offloading: dram, kv-offload-backend: { name: hicache },")
    (tmp_path / "a.yaml").write_text(base)
    cat = load_catalog([tmp_path / "a.yaml"])
    rows = test_config_rows(cat, repo_runners, [SEED], conc=[1], evals="none")
    assert [(r["exp-name"], r["total-cpu-dram-gb"]) for r in rows] == [
        ("dsv41flash_tp4_conc1_kvnone_spec-mtp", 0), ("dsv41flash_tp8_conc1_kvdram-hicache_spec-mtp", 1799)]
    (tmp_path / "r.yaml").write_text("labels:\n  cluster:mi355x-amds: [n_0]\n")
    with pytest.raises(InfxError, match="requires 'available-cpu-dram-mib' in runner hardware metadata"):
        test_config_rows(cat, load_runners(tmp_path / "r.yaml"), [SEED])


def test_infx_matrix_is_the_same_command() -> None:
    args = ["test-config", "--config-files", "configs/cpu-master.yaml", "--config-keys", "tinyllama-*", "--no-evals"]
    kw: dict[str, Any] = {"capture_output": True, "text": True, "cwd": REPO, "timeout": 120}
    a = subprocess.run([sys.executable, "-m", "infx", "matrix", *args], **kw)
    b = subprocess.run([sys.executable, "-m", "infx.matrix.generate", *args], **kw)
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout and len(json.loads(a.stdout)) == 12


def test_all_and_no_evals_conflict() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "infx.matrix.generate", "full-sweep", "--config-files", "configs/cpu-master.yaml",
         "--no-evals", "--all-evals"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "--all-evals" in proc.stderr


def test_github_matrix_flag_buckets_the_same_rows() -> None:
    """`--github-matrix` emits the workflow buckets holding exactly the rows of the flat array."""
    root = Path(__file__).resolve().parents[2]
    base = [sys.executable, "-m", "infx.matrix.generate", "test-config",
            "--config-files", "configs/amd-master.yaml", "configs/cpu-master.yaml",
            "--runner-config", "configs/runners.yaml", "--config-keys", "*", "--no-evals"]
    flat = json.loads(subprocess.run(base, cwd=root, capture_output=True, check=True, text=True).stdout)
    buckets = json.loads(subprocess.run(base + ["--github-matrix"], cwd=root, capture_output=True,
                                        check=True, text=True).stdout)
    agentic = buckets["single_node"]["agentic"]
    fixed = buckets["single_node"]["256_256"] + buckets["single_node"]["8k1k"]
    multi = [r for rows in buckets["multi_node"].values() for r in rows]  # the CPU disagg deployment
    assert sorted(r["point-id"] for r in agentic + fixed + multi) == sorted(r["point-id"] for r in flat)
    assert all(r["scenario-type"] == "agentic-coding" for r in agentic)
    assert [r["exp-name"] for r in multi] == ["tinyllama_512_32"] and buckets["evals"] == []
