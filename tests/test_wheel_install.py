"""A non-editable install works: build infx's wheel, install it into a fresh virtual environment, and drive a
workspace that lives elsewhere (``pip install infx`` + ``infx init``, the documented path)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infx.results.store.schema import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[1]
SEED = "dsv41flash-fp4-mi355x-vllm-agentic-dspark"

pytestmark = pytest.mark.slow


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("INFX_WORKSPACE", "PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``bin/`` of a fresh venv holding the built wheel (not the checkout)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"  # build from a clean copy of the tracked files, not the working tree's build dirs
    files = _run(["git", "ls-files", "-z"], REPO).stdout.split("\0")
    for f in filter(None, files):
        if (REPO / f).is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / f, src / f)
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root / "dist"), str(src)], root)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next((root / "dist").glob("infx-*.whl"))
    venv = root / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], root).returncode == 0
    inst = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                 str(wheel)], root, timeout=900)
    assert inst.returncode == 0, inst.stderr[-3000:]
    return venv / "bin"


def test_the_installed_package_is_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    r = _run([str(installed / "python"), "-c", "import infx, infx.workspace as w; print(infx.__file__); "
              "print(w.BUILTIN_RECIPES_DIR)"], tmp_path)
    assert r.returncode == 0, r.stderr
    pkg, builtin = r.stdout.split()
    assert "site-packages" in pkg and not pkg.startswith(str(REPO))
    assert (Path(builtin) / "tinyllama-cpu-vllm.yaml").is_file()


def test_init_then_validate_plan_preflight_dry_run(installed: Path, tmp_path: Path) -> None:
    infx = str(installed / "infx")
    assert _run([infx, "init", "bench"], tmp_path).returncode == 0
    ws = tmp_path / "bench"
    assert (ws / ".github" / "workflows" / "infx-review.yml").is_file()  # the review workflows ship in the wheel
    assert _run([infx, "validate"], ws).returncode == 0
    plan = _run([infx, "plan", "--config-keys", "tinyllama-bf16-cpu-vllm", "--json"], ws)
    assert plan.returncode == 0, plan.stderr
    points = json.loads(plan.stdout)["points"]
    assert [p["conc"] for p in points] == [1, 2, 4, 8, 16, 1, 4, 16]  # the plain arm, then the n-gram arm
    argv = points[0]["launch"]["argv"]
    assert argv[argv.index("--model") + 1] == str(ws.resolve() / ".infx" / "cache" / "tinyllama")
    pf = _run([infx, "preflight", "--brief"], ws)
    assert pf.returncode == 0, pf.stdout + pf.stderr
    dry = _run([infx, "run", "--config-keys", "tinyllama-bf16-cpu-vllm", "--dry-run"], ws)
    assert dry.returncode == 0, dry.stderr
    assert (ws / "results" / "tinyllama-bf16-cpu-vllm" / "plan.json").is_file()
    cost = _run([infx, "cost", "show", "--json"], ws)  # the scaffold's cost table over the packaged one
    assert cost.returncode == 0, cost.stderr
    table = json.loads(cost.stdout)  # JSON, not the rich table: its cells wrap at the terminal's width
    assert table["extends"].startswith("cost table inferencex-2026-07")
    assert table["files"][-1] == str(ws.resolve() / "cost-model.yaml")
    cpu = table["skus"]["cpu"]
    assert cpu["all_in_kw"]["file"] == table["files"][-1] and "illustrative" in cpu["all_in_kw"]["source"]


def test_a_catalog_repository_elsewhere(installed: Path, tmp_path: Path) -> None:
    """The repository's own catalog, copied out and changed: the installed infx reads the copy's recipe."""
    ws = tmp_path / "catalogs"
    for name in ("configs", "recipes"):
        shutil.copytree(REPO / name, ws / name)
    shutil.copy(REPO / "perf-changelog.yaml", ws / "perf-changelog.yaml")  # no marker: configs/ + recipes/
    recipe = ws / "recipes" / "dsv41flash-fp4-mi355x-vllm-agentic.yaml"
    recipe.write_text(recipe.read_text().replace("{cpu_offload: true}", "{cpu_offload: false}"))
    infx = str(installed / "infx")
    ws_json = json.loads(_run([infx, "workspace", "--json"], ws / "recipes").stdout)
    assert ws_json["root"]["path"] == str(ws.resolve()) and "configs/ + recipes/" in ws_json["root"]["note"]
    assert _run([infx, "validate"], ws).returncode == 0
    pf = _run([infx, "preflight", "--config-keys", SEED, "--json"], ws)
    assert pf.returncode == 1
    assert sorted({v["status"] for v in json.loads(pf.stdout) if "_tp2_" in v["exp_name"]}) == ["fail"]
    dry = _run([infx, "run", "--config-keys", SEED, "--dry-run"], ws)
    assert dry.returncode == 0 and dry.stderr.count("preflight:memory") == 8, dry.stderr


def test_the_store_migrations_ship_in_the_wheel(installed: Path, tmp_path: Path) -> None:
    """The Alembic revisions are package files: the installed infx upgrades a store written before them."""
    r = _run([str(installed / "python"), "-c", "from infx.results.store import migrate; print(migrate.MIGRATIONS_DIR)"],
             tmp_path)
    assert r.returncode == 0, r.stderr
    versions = Path(r.stdout.strip()) / "versions"
    assert "site-packages" in str(versions) and (versions / "v0001_runs_points_results.py").is_file()
    old = tmp_path / "infx.db"
    shutil.copyfile(REPO / "tests" / "fixtures" / "store" / "schema7.db", old)
    up = _run([str(installed / "infx"), "store", "migrate", "--store", str(old)], tmp_path)
    assert up.returncode == 0, up.stderr
    assert f"revision 0007 -> revision {SCHEMA_VERSION:04d}" in up.stdout
