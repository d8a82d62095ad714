"""One workspace for every command: resolution, ``infx.toml``, ``infx init``, and the copy-with-a-changed-
recipe case where ``plan``, ``preflight`` and ``run`` must all see the same recipe."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.workspace import BUILTIN_RECIPES_DIR, ENV_VAR, resolve, set_override

REPO = Path(__file__).resolve().parents[1]
SEED = "dsv41flash-fp4-mi355x-vllm-agentic-dspark"
SEED_RECIPE = "recipes/dsv41flash-fp4-mi355x-vllm-agentic.yaml"


def infx(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != ENV_VAR} | (env or {})
    return subprocess.run([sys.executable, "-m", "infx", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=full_env)


@pytest.fixture(autouse=True)
def _no_override(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    set_override(None)
    yield
    set_override(None)


# ---- resolution -----------------------------------------------------------------------------------

def test_marker_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    (tmp_path / "infx.toml").write_text("")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    ws = resolve(sub)
    assert ws.root == tmp_path.resolve() and ws.found_by == "infx.toml"
    assert ws.recipes_dir == tmp_path.resolve() / "recipes" and ws.results_dir == tmp_path.resolve() / "results"


def test_configs_and_recipes_mark_a_workspace_without_a_marker(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "recipes").mkdir()
    (tmp_path / "x").mkdir()
    ws = resolve(tmp_path / "x")
    assert ws.root == tmp_path.resolve() and ws.found_by == "configs/ + recipes/"


def test_nearest_marker_beats_an_outer_layout(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "recipes").mkdir()
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "infx.toml").write_text("")
    assert resolve(inner).root == inner.resolve()


def test_explicit_workspace_beats_environment_beats_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
        (d / "infx.toml").write_text("")
    assert resolve(c).root == c.resolve()
    monkeypatch.setenv(ENV_VAR, str(b))
    assert resolve(c).root == b.resolve() and resolve(c).found_by == "INFX_WORKSPACE"
    set_override(a)
    assert resolve(c).root == a.resolve() and resolve(c).found_by == "--workspace"


def test_nothing_found_is_the_working_directory(tmp_path: Path) -> None:
    ws = resolve(tmp_path)
    assert ws.root == tmp_path.resolve() and ws.found_by == "working directory"
    with pytest.raises(InfxError, match="no catalog: no \\*-master.yaml"):
        ws.require_config_files()


def test_paths_table_moves_locations(tmp_path: Path) -> None:
    (tmp_path / "infx.toml").write_text(
        '[paths]\nconfigs = "catalog"\nresults = "out/runs"\nimages-lock = "pins.lock"\n')
    ws = resolve(tmp_path)
    assert ws.configs_dir == tmp_path.resolve() / "catalog"
    assert ws.results_dir == tmp_path.resolve() / "out" / "runs"
    assert ws.images_lock == tmp_path.resolve() / "pins.lock"
    assert ws.runner_config == tmp_path.resolve() / "configs" / "runners.yaml"  # untouched default


def test_bad_marker_is_a_one_line_error_with_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "infx.toml").write_text('[paths]\nconfigs = "c"\nrecipez = "r"\n')
    r = infx("workspace", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"{tmp_path.resolve() / 'infx.toml'}:3:1: error: Extra inputs are not permitted (at paths.recipez)"]
    (tmp_path / "infx.toml").write_text('[paths\n')
    r = infx("workspace", cwd=tmp_path)
    assert r.returncode == 2 and "infx.toml:1:1: error: not valid TOML" in r.stderr and "Traceback" not in r.stderr


def test_missing_workspace_directory_is_an_error(tmp_path: Path) -> None:
    r = infx("--workspace", str(tmp_path / "nope"), "workspace", cwd=tmp_path)
    assert r.returncode == 2 and "workspace directory" in r.stderr and "does not exist" in r.stderr


def test_workspace_command_reports_what_was_resolved(tmp_path: Path) -> None:
    r = infx("--workspace", str(REPO), "workspace", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["root"] == {"path": str(REPO), "note": "found by --workspace"}
    assert data["recipes"]["path"] == str(REPO / "recipes") and str(BUILTIN_RECIPES_DIR) in data["recipes"]["note"]
    assert str(REPO / "configs" / "amd-master.yaml") in data["config_files"]


# ---- infx init ------------------------------------------------------------------------------------

def test_init_scaffolds_a_workspace_that_validates_preflights_and_dry_runs(tmp_path: Path) -> None:
    ws = tmp_path / "bench"
    r = infx("init", str(ws), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (ws / "infx.toml").is_file() and (ws / "recipes" / "tinyllama-cpu-vllm.yaml").is_file()
    for wf in ("infx-review.yml", "infx-review-comment.yml"):  # the review workflows are offered, as shipped
        assert (ws / ".github" / "workflows" / wf).read_bytes() == (REPO / ".github" / "workflows" / wf).read_bytes()
    assert "infx-review.yml runs `infx review`" in r.stdout
    assert infx("validate", cwd=ws).returncode == 0
    pf = infx("preflight", "--json", cwd=ws)
    assert pf.returncode == 0, pf.stderr
    verdicts = json.loads(pf.stdout)
    assert len(verdicts) == 8 and {v["status"] for v in verdicts} == {"ok"}  # plain arm 5, n-gram arm 3
    dry = infx("run", "--config-keys", "tinyllama-bf16-cpu-vllm", "--dry-run", cwd=ws)
    assert dry.returncode == 0, dry.stderr
    assert "8 point(s), 2 launch group(s), 0 rejected" in dry.stderr
    assert (ws / "results" / "tinyllama-bf16-cpu-vllm" / "plan.json").is_file()  # results land in the workspace


def test_init_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "runners.yaml").write_text("mine\n")
    r = infx("init", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 2 and "configs/runners.yaml" in r.stderr and "nothing written" in r.stderr
    assert (tmp_path / "configs" / "runners.yaml").read_text() == "mine\n"
    assert not (tmp_path / "infx.toml").exists()


def test_workspace_card_overrides_the_builtin_one(tmp_path: Path) -> None:
    infx("init", str(tmp_path), cwd=tmp_path)
    card = tmp_path / "cards" / "models" / "tinyllama.yaml"
    text = card.read_text()
    assert "parameters: 1705216" in text
    # the workspace's copy now says 20 T parameters: the same points no longer fit the host
    card.write_text(text.replace("parameters: 1705216", "parameters: 20000000000000"))
    pf = infx("preflight", "--json", cwd=tmp_path)
    assert pf.returncode == 1, pf.stdout + pf.stderr
    assert {v["status"] for v in json.loads(pf.stdout)} == {"fail"}


# ---- the copy with one recipe changed -------------------------------------------------------------

@pytest.fixture(scope="module")
def changed_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this repository's workspace whose TP=2 rule keeps the Engram tables on the GPU."""
    root = tmp_path_factory.mktemp("copy")
    for name in ("configs", "recipes"):
        shutil.copytree(REPO / name, root / name)
    for name in ("infx.toml", "perf-changelog.yaml"):
        shutil.copy(REPO / name, root / name)
    recipe = root / SEED_RECIPE
    text = recipe.read_text()
    assert text.count("engram-config: {cpu_offload: true}") == 1
    recipe.write_text(text.replace("engram-config: {cpu_offload: true}", "engram-config: {cpu_offload: false}"))
    return root


def test_plan_sees_the_changed_recipe(changed_copy: Path) -> None:
    r = infx("plan", "--config-keys", SEED, "--json", cwd=changed_copy)
    assert r.returncode == 0, r.stderr
    points = json.loads(r.stdout)["points"]
    tp2 = [p for p in points if p["tp"] == 2]
    assert len(tp2) == 8
    for p in tp2:
        argv = p["launch"]["argv"]
        assert argv[argv.index("--engram-config") + 1] == '{"cpu_offload":false}'
        assert p["config_key"] == SEED and p["conc"] in (1, 2, 4, 8, 16, 32, 64, 128)
        assert p["isl"] is None and p["spec_decoding"] == "mtp" and p["dp_attn"] is False and p["ep"] >= 1


def test_preflight_fails_the_gpu_resident_tp2_points(changed_copy: Path) -> None:
    r = infx("preflight", "--config-keys", SEED, "--json", cwd=changed_copy)
    assert r.returncode == 1, r.stderr
    verdicts = json.loads(r.stdout)
    by_status = {v["status"] for v in verdicts if "_tp2_" in v["exp_name"]}
    assert by_status == {"fail"} and len([v for v in verdicts if "_tp2_" in v["exp_name"]]) == 8
    assert {v["status"] for v in verdicts if "_tp4_" in v["exp_name"]} == {"ok"}
    assert all("290.9 GB per GPU" in v["reason"] for v in verdicts if "_tp2_" in v["exp_name"])


def test_run_gates_the_same_points(changed_copy: Path) -> None:
    r = infx("run", "--config-keys", SEED, "--dry-run", cwd=changed_copy)
    assert r.returncode == 0, r.stderr
    rejected = [line for line in r.stderr.splitlines() if line.startswith("rejected ")]
    assert len(rejected) == 8 and all("preflight:memory" in line for line in rejected)


def test_the_unchanged_repository_passes_the_tp2_points() -> None:
    r = infx("preflight", "--config-keys", SEED, "--json", cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert {v["status"] for v in json.loads(r.stdout)} == {"ok"}
