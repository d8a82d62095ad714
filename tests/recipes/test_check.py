"""``infx recipes check``: catalog launches against their upstream recipes (spec 8.3 L4, L5, L8, L9) and
the whole InferenceX catalog."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from infx.recipes.check import CheckRequest, PointCheck, PointLaunchArgs, catalog_checks
from infx.workspace import at
from tests.recipes.helpers import CORPUS, IX, REPO, needs_corpus, needs_ix, seed_recipe_text, seed_recipes_repo

pytestmark = needs_corpus


def _by(c: PointCheck, verdict: str) -> set[str]:
    return {r.key for r in c.rows if r.verdict == verdict}


@pytest.fixture(scope="module")
def seed_checks(tmp_path_factory: pytest.TempPathFactory) -> dict[int, PointCheck]:
    """head-fixed: infx's own seed catalog entry and recipe, against the seed recipe at commit M."""
    t = tmp_path_factory.mktemp("seed")
    root, commit = seed_recipes_repo(t / "recipes")
    ws = t / "ws"
    (ws / "configs").mkdir(parents=True)
    for f in ("amd-master.yaml", "runners.yaml"):
        shutil.copy(REPO / "configs" / f, ws / "configs" / f)
    shutil.copytree(REPO / "recipes", ws / "recipes")
    (ws / "infx.toml").write_text('[recipes]\npath = "../recipes"\n')
    checks = catalog_checks(CheckRequest(recipes_repo=root, recipes_commit=commit,
                                         config_keys=["dsv41flash-fp4-mi355x-vllm-agentic-dspark"]), at(ws))
    out: dict[int, PointCheck] = {}
    for c in checks:
        assert c.matched, c.reason
        assert c.rendering is not None and c.rendering.selection.recipe_commit == commit
        out.setdefault(c.point.tp or 0, c)
    assert set(out) == {2, 4}
    return out


SEED = "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml"


def test_l4_tp2_arm(seed_checks: dict[int, PointCheck]) -> None:
    c = seed_checks[2]
    sel = c.selection
    assert sel is not None and (sel.variant, sel.strategy, sel.hardware) == ("default", "single_node_tp", "mi355x")
    assert "encoder_parallel" in sel.features and "spec_decoding" in sel.features
    passed = _by(c, "pass")
    assert {"model", "tensor-parallel-size", "moe-backend", "engram-config", "env:VLLM_ROCM_USE_AITER"} <= passed
    assert "enable-expert-parallel" not in {r.key for r in c.rows}  # no EP on either side
    assert _by(c, "error") == {"speculative-config.method", "kv-cache-dtype"}
    assert _by(c, "warning") == {"env:VLLM_ROCM_USE_AITER_MOE", "swa-bounded-replay", "mm-encoder-tp-mode",
                                 "enable-prefix-caching", "env:VLLM_USE_BREAKABLE_CUDAGRAPH"}
    notes = _by(c, "note")
    assert {"max-model-len", "max-num-batched-tokens", "compilation-config",
            "speculative-config.num_speculative_tokens",
            "tokenizer-mode", "tool-call-parser", "reasoning-parser"} <= notes
    rows = {r.key: r for r in c.rows}
    assert (rows["speculative-config.method"].point, rows["speculative-config.method"].recipe) == ("mtp", "dspark")
    assert (rows["speculative-config.num_speculative_tokens"].point,
            rows["speculative-config.num_speculative_tokens"].recipe) == (7, 5)
    assert rows["kv-cache-dtype"].recipe is None and rows["kv-cache-dtype"].point == "fp8"
    # recipe file:line provenance on every recipe-side value
    swa = rows["swa-bounded-replay"]
    assert swa.display == "--no-swa-bounded-replay" and swa.recipe_at is not None and swa.recipe_at.file == SEED
    seed = seed_recipe_text().splitlines()
    assert swa.recipe_at.line is not None
    assert seed[swa.recipe_at.line - 1].strip() == '- "--no-swa-bounded-replay"'
    sev = {(f.rule, f.severity) for f in c.findings}
    assert ("recipe-hardware", "pass") in sev
    errors = [f for f in c.findings if f.severity == "error"]
    assert len(errors) == 2 and all(f.rule == "recipe-args" for f in errors)
    method = next(f for f in errors if f.evidence["key"] == "speculative-config.method")
    assert method.file == SEED and method.line == rows["speculative-config.method"].recipe_at.line


def test_l5_tp4_arm(seed_checks: dict[int, PointCheck]) -> None:
    c = seed_checks[4]
    assert _by(c, "error") == {"speculative-config.method", "kv-cache-dtype", "tensor-parallel-size", "engram-config"}
    assert _by(c, "warning") == _by(seed_checks[2], "warning")
    rows = {r.key: r for r in c.rows}
    assert (rows["tensor-parallel-size"].point, rows["tensor-parallel-size"].recipe) == (4, 2)
    engram = rows["engram-config"]
    assert (engram.point, engram.recipe) == ({"cpu_offload": False}, {"cpu_offload": True})
    tp = next(f for f in c.findings if f.evidence.get("key") == "tensor-parallel-size")
    assert "the recipe renders 2 for single_node_tp on mi355x: strategy_overrides.single_node_tp.tp" in tp.message
    assert tp.file == SEED
    assert tp.line == rows["tensor-parallel-size"].recipe_at.line  # type: ignore[union-attr]
    assert tp.line is not None and seed_recipe_text().splitlines()[tp.line - 1].strip() == "mi355x: 2"


@pytest.fixture(scope="module")
def ix_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace made from the InferenceX corpus: catalogs, runners, the real bench scripts."""
    if not (IX / "amd-master.yaml").is_file():
        pytest.skip(f"InferenceX corpus absent at {IX}")
    root = tmp_path_factory.mktemp("ix") / "ws"
    (root / "configs").mkdir(parents=True)
    for f in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
        shutil.copy(IX / f, root / "configs" / f)
    (root / "benchmarks").symlink_to(IX / "benchmarks")
    (root / "infx.toml").write_text(f'[recipes]\npath = "{CORPUS}"\n')
    return root


@needs_ix
def test_l8_real_dsv4_mi355x_agentic_mtp(ix_ws: Path) -> None:
    checks = catalog_checks(CheckRequest(recipes_repo=CORPUS, config_keys=["dsv4-fp4-mi355x-vllm-agentic-mtp"]),
                            at(ix_ws))
    c = next(c for c in checks if c.point.tp == 8)
    assert c.matched and c.launch_source == "benchmarks/single_node/agentic/dsv4_fp4_mi355x_vllm_mtp.sh"
    sel = c.selection
    assert sel is not None
    assert (sel.recipe_path, sel.variant, sel.strategy, sel.hardware) == (
        "models/deepseek-ai/DeepSeek-V4-Pro.yaml", "fp8", "single_node_tp", "mi355x")
    assert sel.modes == {"spec_decoding": "mtp"}
    assert _by(c, "error") == {"moe-backend", "env:VLLM_ROCM_USE_AITER_MOE"}
    assert {"model", "tensor-parallel-size", "data-parallel-size", "kv-cache-dtype", "speculative-config.method",
            "env:VLLM_ROCM_USE_AITER"} <= _by(c, "pass")
    assert {"enable-prefix-caching", "disable-hybrid-kv-cache-manager", "block-size",
            "env:VLLM_ROCM_QUICK_REDUCE_QUANTIZATION",
            "env:VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS"} <= _by(c, "warning")
    assert {"speculative-config.num_speculative_tokens", "speculative-config.rejection_sample_method",
            "compilation-config", "max-num-seqs", "gpu-memory-utilization"} <= _by(c, "note")
    rows = {r.key: r for r in c.rows}
    moe = rows["moe-backend"]
    assert moe.point == "aiter" and moe.recipe is None
    assert moe.point_at is not None and moe.point_at.line == 424  # the script's --moe-backend line
    assert rows["env:VLLM_ROCM_USE_AITER_MOE"].point_at.line == 405  # type: ignore[union-attr]
    block = rows["block-size"].recipe_at
    assert block is not None and block.file.endswith("DeepSeek-V4-Pro.yaml")


@needs_ix
def test_l9_real_dsv4_mi300x_unsupported(ix_ws: Path) -> None:
    checks = catalog_checks(CheckRequest(recipes_repo=CORPUS, config_keys=["dsv4-fp8-mi300x-vllm"]), at(ix_ws))
    assert checks
    for c in checks:
        hw = [f for f in c.findings if f.rule == "recipe-hardware"]
        assert len(hw) == 1 and hw[0].severity == "warning"
        assert hw[0].message == "upstream recipe marks mi300x unsupported"
        assert hw[0].file == "models/deepseek-ai/DeepSeek-V4-Pro.yaml"
        lines = (CORPUS / hw[0].file).read_text().splitlines()
        assert lines[hw[0].line - 1].strip() == "mi300x: unsupported"  # type: ignore[operator]


@needs_ix
def test_whole_inferencex_catalog(ix_ws: Path) -> None:
    """Every single-node vLLM row of the InferenceX corpus is matched to a recipe (section 4.6)."""
    from infx.recipes.commands import format_checks, summarise

    checks = catalog_checks(CheckRequest(recipes_repo=CORPUS), at(ix_ws))
    s = summarise(checks)
    assert s.entries == 24 and s.points == 253
    assert s.matched == s.points, [(c.point.config_key, c.reason) for c in checks if not c.matched][:3]
    by_key: dict[str, set[tuple[str, str]]] = {}
    for c in checks:
        assert c.selection is not None
        by_key.setdefault(c.point.config_key, set()).add((c.selection.recipe_path, c.selection.variant))
    assert by_key["dsv4-fp4-b200-vllm"] == {("models/deepseek-ai/DeepSeek-V4-Pro.yaml", "fp8")}
    assert by_key["kimik3-fp4-mi355x-vllm-agentic-mtp"] == {("models/moonshotai/Kimi-K3.yaml", "default")}
    assert by_key["minimaxm3-fp8-h100-vllm-agentic-mtp"] == {("models/MiniMaxAI/MiniMax-M3.yaml", "mxfp8")}
    assert by_key["minimaxm3-fp4-mi355x-vllm-agentic-mtp"] == {("models/MiniMaxAI/MiniMax-M3.yaml", "mxfp4")}
    assert by_key["minimaxm3-fp4-b300-vllm-agentic-mtp"] == {("models/MiniMaxAI/MiniMax-M3.yaml", "nvfp4")}
    unsupported = {c.point.config_key for c in checks
                   if any(f.rule == "recipe-hardware" and f.severity == "warning" for f in c.findings)}
    assert unsupported == {"dsv4-fp8-mi300x-vllm", "dsv4-fp8-mi300x-vllm-mtp", "dsv4-fp8-mi325x-vllm",
                           "dsv4-fp8-mi325x-vllm-mtp"}
    text = format_checks(checks, brief=True)
    assert "summary" in text and f"  {s.entries}" in text


def test_review_rule_functions_and_links(seed_checks: dict[int, PointCheck], tmp_path: Path) -> None:
    """The library functions a review gate calls: links recognised, the linked file resolved at the merge
    commit, recipe-args and recipe-hardware findings for a point (L2/L6/L7's recipe half)."""
    from infx.recipes.rules import parse_links, recipe_args, recipe_hardware, resolve_link
    from infx.recipes.source import RecipeRepo

    text = ("see vllm-project/recipes#1006 and https://recipes.vllm.ai/deepseek-ai/DeepSeek-V4.1-Flash?hardware=mi355x"
            "&features=tool_calling,spec_decoding&fmode=spec_decoding:dspark and "
            "https://github.com/vllm-project/recipes/commit/01b04887fd36 and https://cookbook.sglang.io/x")
    links = parse_links(text)
    assert [x.kind for x in links] == ["vllm-recipes-pr", "vllm-recipes-page", "vllm-recipes-commit", "sglang-page"]
    assert links[0].pr == 1006
    page = links[1]
    assert page.recipe_path == "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml" and page.pin.hardware == "mi355x"
    assert page.pin.features == ["tool_calling", "spec_decoding"] and page.pin.modes == {"spec_decoding": "dspark"}

    root, commit = seed_recipes_repo(tmp_path / "r")
    t = resolve_link(str(root), links[0], commit, model="deepseek-ai/DeepSeek-V4.1-Flash")
    assert t.ok and t.commit == commit and t.recipe_path == "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml"
    bare = resolve_link(str(root), links[2])
    assert not bare.ok and "bare commit does not satisfy the rule" in bare.findings[0].message
    gone = resolve_link(str(root), parse_links("https://recipes.vllm.ai/x-org/Nope")[0], commit)
    assert not gone.ok and "does not exist" in gone.findings[0].message

    c2 = seed_checks[2]
    repo = RecipeRepo(root, commit)
    launch = PointLaunchArgs(argv=_launch_argv(c2), env=_launch_env(c2),
                             source="recipes/dsv41flash-fp4-mi355x-vllm-agentic.yaml", kind="typed",
                             text=(REPO / "recipes" / "dsv41flash-fp4-mi355x-vllm-agentic.yaml").read_text())
    f = recipe_args(repo, c2.point, launch, pin=t.pin)
    assert {x.evidence["key"] for x in f if x.severity == "error"} == {"speculative-config.method", "kv-cache-dtype"}
    assert all(x.rule == "recipe-args" and x.file and (x.line or x.severity == "note") for x in f)
    hw = recipe_hardware(repo, c2.point)
    assert [(x.rule, x.severity, x.file) for x in hw] == [("recipe-hardware", "pass", t.recipe_path)]


def _launch_argv(c: PointCheck) -> list[str]:
    from infx.engines.recipes import workspace_recipes
    from infx.engines.render import render_launch
    from infx.matrix.select import keyed_points

    kp = keyed_points([REPO / "configs" / "amd-master.yaml"], REPO / "configs" / "runners.yaml",
                      [c.point.config_key])
    p = next(p for _, p in kp if p.point_id == c.point.point_id)
    return render_launch(p, workspace_recipes(REPO / "recipes"), runtime="local").argv


def _launch_env(c: PointCheck) -> dict[str, str]:
    return {r.key[4:]: r.point for r in c.rows if r.kind == "env" and r.point_has}


def test_a_workspace_table_extends_the_classification(seed_checks: dict[int, PointCheck], tmp_path: Path) -> None:
    """The table is data: a workspace recipe-args.yaml entry turns an unclassified warning into a note,
    and a bad entry is one error at its line."""
    from infx.diagnostics import InfxError
    from infx.recipes.check import arg_table, compare

    c = seed_checks[2]
    assert c.rendering is not None
    extra = tmp_path / "recipe-args.yaml"
    extra.write_text("flags:\n  - class: harness\n    keys: [enable-prefix-caching]\n"
                     "    source: \"(workspace policy) prefix caching is a per-lane choice\"\n")
    launch = PointLaunchArgs(argv=_launch_argv(c), env=_launch_env(c), source="x", kind="typed")
    rows = {r.key: r for r in compare(launch, c.point.model, c.rendering, arg_table(extra))}
    epc = rows["enable-prefix-caching"]
    assert epc.verdict == "note" and "workspace policy" in epc.source
    assert rows["kv-cache-dtype"].verdict == "error"  # built-in entries still apply
    extra.write_text("flags:\n  - class: maybe\n    keys: [x]\n    source: s\n")
    with pytest.raises(InfxError) as exc:
        arg_table(extra)
    assert exc.value.diagnostics[0].line == 2
