"""The recipe reader (spec 8.4 R2-R4), argv normalisation (R5), reading at a git commit, the workspace's
``[recipes]`` section, and bad input on the command line (one line naming file:line, exit 2)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.recipes.argv import equivalent, normalise
from infx.recipes.render import RecipeSelection, render
from infx.recipes.source import EXACT_GPU_AT_RECIPE_LEVEL, RecipeRepo
from infx.workspace import at
from tests.recipes.helpers import CORPUS, REPO, git, needs_corpus

pytestmark = needs_corpus


def _copy(tmp: Path) -> Path:
    root = tmp / "recipes"
    root.mkdir(parents=True)
    shutil.copy(CORPUS / "taxonomy.yaml", root / "taxonomy.yaml")
    for name in ("strategies", "kv_store", "models"):
        shutil.copytree(CORPUS / name, root / name)
    return root


def test_r2_corpus_reads_with_only_the_known_warnings() -> None:
    repo = RecipeRepo(CORPUS)
    recipes = repo.all_recipes()
    assert len(recipes) == 16
    assert len(repo.strategies) == 11  # 9 strategies + 2 kv stores
    warnings = {(Path(w.file or "").name, w.line, w.message) for r in recipes for w in r.warnings}
    assert all(w.severity == "warning" for r in recipes for w in r.warnings)
    m3 = [w for w in warnings if w[0] == "MiniMax-M3.yaml" and "not an image reference" in w[2]]
    assert [w[1] for w in m3] == [153]
    unknown = [w for w in warnings if w[0] == "DeepSeek-V4.1-Flash.yaml" and "unknown hardware id 'mi350x'" in w[2]]
    assert len(unknown) == 1


def test_r3_duplicate_key_is_one_error_at_its_line(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    f = root / "models" / "openai" / "gpt-oss-120b.yaml"
    lines = f.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("  model_id:"))
    lines.insert(i + 1, '  model_id: "openai/other"')
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(InfxError) as exc:
        RecipeRepo(root).recipe("models/openai/gpt-oss-120b.yaml")
    d = exc.value.diagnostics
    assert len(d) == 1 and d[0].line == i + 2 and "duplicate key 'model_id'" in d[0].message
    r = subprocess.run([sys.executable, "-m", "infx", "recipes", "render", "openai/gpt-oss-120b", "--hardware", "h200",
                        "--recipes-repo", str(root)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{f}:{i + 2}:") and "duplicate key" in err[0]


def test_r4_exact_gpu_at_recipe_level_warns_and_is_ignored(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    f = root / "models" / "meta-llama" / "Llama-3.3-70B-Instruct.yaml"
    text = f.read_text()
    assert "\nhardware_overrides:\n" in text
    f.write_text(text.replace("\nhardware_overrides:\n", "\nhardware_overrides:\n  mi355x:\n    extra_args:\n"
                                                         '      - "--max-num-seqs"\n      - "7"\n', 1))
    repo = RecipeRepo(root)
    lr = repo.recipe("models/meta-llama/Llama-3.3-70B-Instruct.yaml")
    w = [d for d in lr.warnings if EXACT_GPU_AT_RECIPE_LEVEL in d.message]
    assert len(w) == 1 and w[0].line == f.read_text().splitlines().index("  mi355x:") + 1
    r = render(repo, RecipeSelection(recipe_path=lr.rel, strategy="single_node_tp", hardware="mi355x"))
    assert r.argv == ["vllm", "serve", "meta-llama/Llama-3.3-70B-Instruct", "--tensor-parallel-size", "1"]


def test_r5_normalisation() -> None:
    assert equivalent(["--block-size=64"], ["--block_size", "64"])
    assert equivalent(["-cc.cudagraph_mode=NONE"], ["--compilation-config", '{"cudagraph_mode":"NONE"}'])
    assert equivalent(["--attention_config.use_fp4_indexer_cache", "True"],
                      ["--attention-config", '{"use_fp4_indexer_cache":true}'])
    assert not equivalent(["--block-size=64"], ["--block-size", "128"])
    n = normalise(["vllm", "serve", "m/M", "-tp", "4", "--no-enable-prefix-caching", "-O3", "--x", "1", "--x=2",
                   "-cc.a.b=1", "-cc.c+", "5"])
    assert n.model == "m/M" and n.get("tensor-parallel-size") == 4 and n.get("enable-prefix-caching") is False
    assert n.get("O") == 3 and n.get("x") == 2 and n.get("compilation-config") == {"a": {"b": 1}, "c": [5]}
    assert normalise(["vllm", "serve", "--model", "a/B", "--port", "1"]).model == "a/B"


def test_reads_a_git_commit_from_objects(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    first = git(root, "rev-parse", "HEAD")
    f = root / "models" / "meta-llama" / "Llama-3.3-70B-Instruct.yaml"
    f.write_text(f.read_text().replace("xeon6: 8", "xeon6: 4"))
    git(root, "commit", "-qam", "two")
    f.write_text("not: [yaml")  # the working tree is never read for a commit
    sel = RecipeSelection(recipe_path="models/meta-llama/Llama-3.3-70B-Instruct.yaml", strategy="single_node_tp",
                          hardware="xeon6")
    assert render(RecipeRepo(root, first), sel).argv[-1] == "8"
    r = render(RecipeRepo(root, "HEAD"), sel)
    assert r.argv[-1] == "4" and r.selection.recipe_commit == git(root, "rev-parse", "HEAD")
    with pytest.raises(InfxError, match="not a commit"):
        RecipeRepo(root, "nope")


def _infx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", *args], capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_workspace_recipes_section_and_render_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "configs").mkdir(parents=True)
    (ws / "infx.toml").write_text(f'[recipes]\npath = "{CORPUS}"\n')
    assert at(ws).upstream_recipes == CORPUS
    r = _infx("recipes", "render", "meta-llama/Llama-3.3-70B-Instruct", "--hardware", "xeon6", cwd=ws)
    assert r.returncode == 0, r.stderr
    assert "vllm serve meta-llama/Llama-3.3-70B-Instruct --tensor-parallel-size 8" in r.stdout
    assert "vllm/vllm-openai-cpu:latest-x86_64" in r.stdout
    assert "--tensor-parallel-size 8    models/meta-llama/Llama-3.3-70B-Instruct.yaml:" in r.stdout
    r = _infx("recipes", "show", "deepseek-ai/DeepSeek-V4-Pro", cwd=ws)
    assert r.returncode == 0 and "mi300x unsupported" in r.stdout and "fp8: deepseek-ai/DeepSeek-V4-Pro" in r.stdout


@pytest.mark.parametrize(("args", "where", "message"), [
    (["--strategy", "single_node_nope"], "compatible_strategies", "unknown strategy 'single_node_nope'"),
    (["--variant", "nope"], "variants", "unknown variant 'nope'"),
    (["--features", "encoder_parallel"], "features.encoder_parallel.strategies",
     "feature 'encoder_parallel' is not offered with single_node_tp"),
    (["--features", "spec_decoding", "--mode", "spec_decoding:dspark", "--variant", "fp8"],
     "features.spec_decoding.modes.dspark", "mode 'dspark' of feature 'spec_decoding' is excluded for variant 'fp8'"),
    (["--features", "spec_decoding", "--variant", "fp8", "--hardware", "rtx_pro_6000_8x"],
     "features.spec_decoding.modes", "feature 'spec_decoding' has no mode for variant 'fp8' on rtx_pro_6000_8x"),
])
def test_bad_selection_is_one_line_exit_2(tmp_path: Path, args: list[str], where: str, message: str) -> None:
    root = _copy(tmp_path)
    f = root / "models" / "deepseek-ai" / "DeepSeek-V4-Flash.yaml"
    if "encoder_parallel" in args:  # a feature that excludes the strategy (upstream: features.<f>.strategies)
        f.write_text(f.read_text().replace("\nopt_in_features:\n", "\n  encoder_parallel:\n    description: x\n"
                                                                     "    args: [\"--mm-encoder-tp-mode\", \"data\"]\n"
                                                                     "    strategies: [single_node_dep]\n"
                                                                     "\nopt_in_features:\n", 1))
    r = _infx("recipes", "render", "deepseek-ai/DeepSeek-V4-Flash", "--hardware", "mi355x", "--strategy",
              "single_node_tp", *args, "--recipes-repo", str(root), cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{f}:") and lines[0].split(":")[1].isdigit()
    assert message in lines[0] and f"(at {where})" in lines[0]


def test_recipe_that_is_not_yaml_is_one_line_exit_2(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    f = root / "models" / "openai" / "gpt-oss-120b.yaml"
    f.write_text("meta:\n  title: [unclosed\nmodel: {\n")
    r = _infx("recipes", "show", "openai/gpt-oss-120b", "--recipes-repo", str(root), cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{f}:") and "error" in lines[0]


def test_r3_js_yaml_rejects_the_same_duplicate(tmp_path: Path) -> None:
    """Upstream's loader (js-yaml, run under node) refuses the file infx refuses."""
    from tests.recipes.helpers import run_oracle

    root = _copy(tmp_path)
    f = root / "models" / "openai" / "gpt-oss-120b.yaml"
    lines = f.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("  model_id:"))
    lines.insert(i + 1, '  model_id: "openai/other"')
    f.write_text("\n".join(lines) + "\n")
    out, _ = run_oracle(root, [{"recipe": "models/openai/gpt-oss-120b.yaml", "variant": "default",
                                "strategy": "single_node_tp", "hardware": "h200", "features": [], "modes": {}}])
    assert "duplicated mapping key" in out[0].get("error", ""), out
    assert f"({i + 2}:" in out[0]["error"]  # js-yaml names the same line
