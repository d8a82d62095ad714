"""``infx plan`` on the seed catalog entry and on the CPU catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx.cli import _register_all, app

REPO = Path(__file__).resolve().parents[2]
SEED_KEY = "dsv41flash-fp4-mi355x-vllm-agentic-dspark"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    _register_all()


def _plan(*args: str):
    return CliRunner().invoke(app, ["plan", *args])


def test_plan_seed_shows_16_launches() -> None:
    res = _plan("--config-files", "configs/amd-master.yaml", "--runner-config", "configs/runners.yaml",
                "--config-keys", SEED_KEY)
    assert res.exit_code == 0, res.output
    out = res.output
    assert "16 points, 16 launches rendered, 4 distinct" in out
    argvs = [line for line in out.splitlines() if line.startswith("  argv: ")]
    assert len(argvs) == 16
    tp2 = [a for a in argvs if "--tensor-parallel-size 2" in a]
    tp4 = [a for a in argvs if "--tensor-parallel-size 4" in a]
    assert len(tp2) == len(tp4) == 8
    assert all("--engram-config '{\"cpu_offload\":true}'" in a for a in tp2)
    assert all("--engram-config '{\"cpu_offload\":false}'" in a for a in tp4)
    ceilings = [json.loads(a.split("--compilation-config ")[1].split("'")[1])["max_cudagraph_capture_size"]
                for a in argvs]
    assert sorted(ceilings) == [1024] * 14 + [2048] * 2


def test_plan_seed_json() -> None:
    res = _plan("--config-files", "configs/amd-master.yaml", "--config-keys", "dsv41flash*", "--json")
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output)
    assert len(plan["points"]) == 16 and len(plan["groups"]) == 4
    by_conc = {(p["launch"]["argv"][p["launch"]["argv"].index("--tensor-parallel-size") + 1], p["conc"]):
               p["launch"]["fingerprint"] for p in plan["points"]}
    assert by_conc[("2", 1)] == by_conc[("2", 64)] != by_conc[("2", 128)]
    assert sorted(len(g["point_ids"]) for g in plan["groups"]) == [1, 1, 7, 7]


def test_plan_runtime_slurm() -> None:
    res = _plan("--config-files", "configs/amd-master.yaml", "--config-keys", SEED_KEY, "--runtime", "slurm")
    assert res.exit_code == 0, res.output
    assert res.output.count("argv: srun ") == 16 and "--gres=gpu:2" in res.output


def test_plan_cpu_catalog() -> None:
    res = _plan("--config-files", "configs/cpu-master.yaml", "--config-keys", "*")
    assert res.exit_code == 0, res.output
    assert "vllm.entrypoints.openai.api_server" in res.output and "tinyllama-cpu-vllm" in res.output


def test_plan_reports_recipe_problems_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "match: {model-prefix: dsv41flash, framework: vllm, precision: fp4}\nengine: vllm\nspec-tokens: 7\n"
        "base:\n  args:\n    tensor-parallel-size: 8\n")
    res = _plan("--config-files", "configs/amd-master.yaml", "--config-keys", SEED_KEY, "--recipes", str(tmp_path))
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line]
    assert lines and all(line.startswith(f"{tmp_path / 'bad.yaml'}:6:") and ": error: " in line for line in lines)
    assert any("sets --tensor-parallel-size 8 but point" in line and "has tp=4" in line for line in lines)
    assert "Traceback" not in res.output


def test_plan_reports_missing_recipe(tmp_path: Path) -> None:
    res = _plan("--config-files", "configs/amd-master.yaml", "--config-keys", SEED_KEY, "--recipes", str(tmp_path))
    assert res.exit_code == 2 and "no recipe matches point" in res.output
