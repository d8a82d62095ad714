"""Shared pieces of the recipe tests: the corpora, the constructed seed recipe, the oracle runner."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("INFX_SHARED", REPO / ".." / "shared")).resolve()
CORPUS = SHARED / "compat" / "vllm-recipes"
IX = SHARED / "compat" / "inferencex"
ORACLE = CORPUS / "oracle" / "command-synthesis.js"
HARNESS = Path(__file__).resolve().parent / "oracle_render.mjs"

needs_corpus = pytest.mark.skipif(not (CORPUS / "taxonomy.yaml").is_file(),
                                  reason=f"vLLM recipes corpus absent at {CORPUS} (set INFX_SHARED)")
needs_ix = pytest.mark.skipif(not (IX / "amd-master.yaml").is_file(),
                              reason=f"InferenceX corpus absent at {IX} (set INFX_SHARED)")

SEED_HEADER = ("# CONSTRUCTED FIXTURE (infx tests): models/deepseek-ai/DeepSeek-V4.1-Flash.yaml at recipes commit\n"
               "# 01b04887fd36aba27e4347c2e3b64b8e2e347c7d with the edits vllm-project/recipes#1006 describes\n"
               "# (spec section 2.4): single_node_tp tp {mi355x: 2, default: 4}, an mi355x --engram-config block,\n"
               "# --no-swa-bounded-replay in the amd block, meta.hardware.mi355x verified. Not an upstream file.\n")


def seed_recipe_text() -> str:
    """DeepSeek-V4.1-Flash.seed.yaml, built from the corpus file with the four edits of spec section 2.4."""
    text = (CORPUS / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.yaml").read_text()

    def once(old: str, new: str) -> None:
        nonlocal text
        assert text.count(old) == 1, old
        text = text.replace(old, new)

    once("    mi350x: verified\n", "    mi350x: verified\n    mi355x: verified\n")
    once('      - "aiter"\n    extra_env:\n', '      - "aiter"\n      - "--no-swa-bounded-replay"\n    extra_env:\n')
    once("  single_node_tp:\n    # TP4 baseline (one GB200 NVL4 tray; 4 GPUs on MI350X or MI355X).\n    tp: 4\n"
         "    hardware_overrides:\n",
         "  single_node_tp:\n    # TP4 baseline (one GB200 NVL4 tray; 4 GPUs on MI350X or MI355X).\n    tp:\n"
         "      mi355x: 2\n      default: 4\n    hardware_overrides:\n"
         "      mi355x:\n        extra_args:\n          - \"--engram-config\"\n"
         "          - '{\"cpu_offload\":true}'\n")
    return SEED_HEADER + text


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def seed_recipes_repo(dest: Path) -> tuple[Path, str]:
    """A git recipes repository: the corpus's vocabulary and recipes, the seed recipe in place of
    DeepSeek-V4.1-Flash.yaml, committed (commit ``M``); returns the repo and M."""
    dest.mkdir(parents=True)
    for name in ("taxonomy.yaml", "strategies", "kv_store", "models"):
        src = CORPUS / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dest / name)
    (dest / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.yaml").write_text(seed_recipe_text())
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "corpus + seed recipe")
    return dest, git(dest, "rev-parse", "HEAD")


def js_yaml_dir() -> Path:
    """A cache directory holding js-yaml from npm (installed on first use); skips when node/npm are absent."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("node and npm are needed to run the upstream renderer (Debian packages nodejs, npm)")
    base = Path(os.environ.get("INFX_NODE_CACHE", Path.home() / ".cache" / "infx" / "node-js-yaml"))
    if not (base / "node_modules" / "js-yaml" / "package.json").is_file():
        base.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(base), "js-yaml@4.1.0"],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            pytest.fail(f"npm install js-yaml failed: {r.stderr[-2000:]}")
    return base


def run_oracle(recipes_dir: Path, jobs: list[dict]) -> tuple[list[dict], float]:
    """Render ``jobs`` with the upstream renderer; returns the results and its in-process time (ms)."""
    yd = js_yaml_dir()
    r = subprocess.run(["node", str(HARNESS), str(ORACLE), str(yd), str(recipes_dir)], input=json.dumps(jobs),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    return out["results"], out["ms"]
