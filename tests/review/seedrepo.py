"""The ``seed-pr`` fixture: a real git repository built from this repository's files (base, head,
head-fixed), as the spec's fixture describes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEED_KEY = "dsv41flash-fp4-mi355x-vllm-agentic-dspark"
RECIPE = "recipes/dsv41flash-fp4-mi355x-vllm-agentic.yaml"
HEAD_IMAGE = "vllm/vllm-openai-rocm:nightly-rocm100-3df4ae153eb385e27b52f26c81f8edb9e20b9984"
BASE_IMAGE = "vllm/vllm-openai-rocm:nightly-eed1f3d0c6043bd494424a22443ee198dd56f657"
DIGEST = "sha256:eccb72b74b8c04ce7406d9212e200b129f58e24be642795a857f755a94fdb3a1"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false",
                           "-C", str(repo), *args], capture_output=True, check=True, text=True).stdout.strip()


def _drop_rules(text: str) -> str:
    lines = text.splitlines(keepends=True)
    assert lines[38].startswith("rules:"), lines[38]
    return "".join(lines[:38] + lines[47:])


def _base_recipe(text: str) -> str:
    text = _drop_rules(text)
    text = text.replace("    max-model-len: 1048576           # 1M-token context\n",
                        "    max-model-len: 1048576           # 1M-token context\n    max-num-seqs: 128\n", 1)
    return text.replace('max_cudagraph_capture_size: "= max(2 * conc, 128) * (1 + spec_tokens)"',
                        "max_cudagraph_capture_size: 1024", 1)


def base_master() -> str:
    text = (REPO / "configs/amd-master.yaml").read_text()
    lines = text.splitlines(keepends=True)
    assert "tp: 2" in lines[18]
    del lines[18]
    out = "".join(lines).replace("[1, 2, 4, 8, 16, 32, 64, 128]", "[1, 2, 4, 8, 16, 32]")
    return out.replace(HEAD_IMAGE, BASE_IMAGE)


def changelog_lines(n: int) -> str:
    return "".join((REPO / "perf-changelog.yaml").read_text().splitlines(keepends=True)[:n])


def build_seed(root: Path) -> dict[str, str]:
    """base -> head -> head-fixed; returns their commit ids."""
    (root / "configs").mkdir(parents=True)
    (root / "recipes").mkdir()
    shutil.copy(REPO / "configs/runners.yaml", root / "configs/runners.yaml")
    (root / "infx.toml").write_text("")
    recipe = (REPO / RECIPE).read_text()
    # base
    (root / "configs/amd-master.yaml").write_text(base_master())
    (root / "perf-changelog.yaml").write_text(changelog_lines(6))
    (root / RECIPE).write_text(_base_recipe(recipe))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    shas = {"base": git(root, "rev-parse", "HEAD")}
    # head: the seed's change, with the recipe's rules block deleted (no --engram-config at all)
    shutil.copy(REPO / "configs/amd-master.yaml", root / "configs/amd-master.yaml")
    shutil.copy(REPO / "configs/images.lock", root / "configs/images.lock")
    shutil.copy(REPO / "perf-changelog.yaml", root / "perf-changelog.yaml")
    (root / RECIPE).write_text(_drop_rules(recipe))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "head")
    shas["head"] = git(root, "rev-parse", "HEAD")
    git(root, "branch", "head")
    (root / RECIPE).write_text(recipe)
    git(root, "commit", "-q", "-am", "head-fixed")
    shas["head-fixed"] = git(root, "rev-parse", "HEAD")
    git(root, "branch", "head-fixed")
    git(root, "branch", "base", shas["base"])
    return shas
