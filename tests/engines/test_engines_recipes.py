"""Recipe loading and validation: schema, expressions, diagnostics with FILE:LINE:COL."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.engines.recipes import load_recipes, workspace_recipes

from .helpers import seed_point

GOOD = """\
match: {model-prefix: m, framework: vllm}
engine: vllm
base:
  args: {max-num-batched-tokens: 8192}
"""


def write(d: Path, name: str, text: str) -> Path:
    p = d / name
    p.write_text(textwrap.dedent(text))
    return p


def errors(d: Path) -> list[str]:
    with pytest.raises(InfxError) as exc:
        load_recipes(d)
    return [str(x) for x in exc.value.diagnostics]


def test_workspace_recipes_overlay_the_builtin_ones() -> None:
    rs = workspace_recipes()
    names = {r.name for r in rs}
    assert {"tinyllama-cpu-vllm", "dsv41flash-fp4-mi355x-vllm-agentic"} <= names


def test_name_defaults_to_file_stem(tmp_path: Path) -> None:
    write(tmp_path, "my-recipe.yaml", GOOD)
    assert [r.name for r in load_recipes(tmp_path)] == ["my-recipe"]


def test_unknown_name_in_expression_has_file_line_col(tmp_path: Path) -> None:
    f = write(tmp_path, "r.yaml", """\
        match: {model-prefix: m, framework: vllm}
        engine: vllm
        base:
          args:
            max-num-seqs: "= 2 * concurrency"
        """)
    errs = errors(tmp_path)
    assert len(errs) == 1
    assert errs[0].startswith(f"{f}:5:19: error: unknown name 'concurrency' in expression '2 * concurrency'")
    assert errs[0].endswith("(at base.args.max-num-seqs)")


def test_forbidden_expression_is_reported(tmp_path: Path) -> None:
    f = write(tmp_path, "r.yaml", """\
        match: {model-prefix: m, framework: vllm}
        engine: vllm
        rules:
          - when: {tp: 2}
            env: {X: "= conc.__class__"}
        """)
    errs = errors(tmp_path)
    assert errs[0].startswith(f"{f}:5:14: error: attribute access is not allowed")


def test_schema_errors(tmp_path: Path) -> None:
    f = write(tmp_path, "r.yaml", """\
        match: {model-prefix: m, framework: vllm}
        engine: vllm2
        ignore: [tp, not-a-field]
        vendor:
          intel: {}
        base:
          argz: {}
        rules:
          - when: {tensor-parallel: 2}
        """)
    errs = "\n".join(errors(tmp_path))
    assert f"{f}:2:9: error: Input should be 'vllm', 'sglang' or 'trt'" in errs
    assert "'ignore' names unknown point field 'not-a-field'" in errs
    assert f"{f}:7:3: error: unknown key 'argz'" in errs
    assert "'when' names unknown point field 'tensor-parallel'" in errs
    assert "(at vendor.intel)" in errs


def test_expression_spec_tokens_needs_recipe_value(tmp_path: Path) -> None:
    write(tmp_path, "r.yaml", """\
        match: {model-prefix: m, framework: vllm}
        engine: vllm
        base: {args: {x: "= 1 + spec_tokens"}}
        """)
    assert "uses 'spec_tokens' but the recipe sets no 'spec-tokens'" in errors(tmp_path)[0]


def test_yaml_errors_and_duplicates(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", GOOD)
    write(tmp_path, "b.yaml", "name: a\n" + GOOD)
    write(tmp_path, "c.yaml", "match: {model-prefix: m\n")
    write(tmp_path, "d.yaml", "engine: vllm\nengine: sglang\n")
    errs = "\n".join(errors(tmp_path))
    assert "recipe 'a' is also defined in" in errs
    assert f"{tmp_path / 'c.yaml'}:" in errs and "YAML syntax error" in errs
    assert "duplicate key 'engine'" in errs


def test_flag_and_env_names_are_checked(tmp_path: Path) -> None:
    write(tmp_path, "r.yaml", """\
        match: {model-prefix: m, framework: vllm}
        engine: vllm
        base:
          args: {"--tp=4": 1}
          env: {"BAD NAME": 1}
        """)
    errs = "\n".join(errors(tmp_path))
    assert "is not a flag name" in errs
    assert "is not an environment variable name" in errs


def test_match_picks_most_specific_and_reports_ties(tmp_path: Path) -> None:
    write(tmp_path, "generic.yaml",
          "match: {model-prefix: dsv41flash, framework: vllm}\nengine: vllm\nspec-tokens: 1\n")
    write(tmp_path, "specific.yaml",
          "match: {model-prefix: dsv41flash, framework: vllm, hardware: mi355x}\nengine: vllm\nspec-tokens: 1\n")
    rs = load_recipes(tmp_path)
    assert rs.match(seed_point(), "mi355x").name == "specific"
    assert rs.match(seed_point(), "b200").name == "generic"
    write(tmp_path, "specific2.yaml",
          "match: {model-prefix: 'dsv41*', framework: vllm, hardware: [mi355x, mi325x]}\nengine: vllm\n")
    rs = load_recipes(tmp_path)
    with pytest.raises(InfxError, match="matches several recipes equally well"):
        rs.match(seed_point(), "mi355x")
    with pytest.raises(InfxError, match="no recipe matches point"):
        rs.match(seed_point(framework="sglang"), "mi355x")
