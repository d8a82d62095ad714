"""``infx recipes render|show|check``: upstream vLLM recipes read, rendered and checked against the catalog.

Bad input (a recipe that is not YAML, an unknown strategy, variant or hardware, a feature the selection
excludes) is one ``FILE:LINE:COL: error: ...`` line on stderr and exit 2. ``check`` exits 1 when a point
has a must-match error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infx.diagnostics import exit_on_error

app = typer.Typer(name="recipes", help="Upstream vLLM recipes (vllm-project/recipes): read, render, check.",
                  no_args_is_help=True)

RecipesRepo = Annotated[Path | None, typer.Option(
    "--recipes-repo", help="the recipes checkout (default: [recipes] path of infx.toml)")]
RecipesCommit = Annotated[str | None, typer.Option(
    "--recipes-commit", help="read the checkout at this git commit, from git objects (default: the files on disk, "
                             "or [recipes] commit)")]
AsJson = Annotated[bool, typer.Option("--json", help="print JSON")]


@app.command("render")
@exit_on_error
def render_cmd(
    model: Annotated[str, typer.Argument(help="Hugging Face id (deepseek-ai/DeepSeek-V4-Pro), file or name")],
    hardware: Annotated[str, typer.Option("--hardware", help="a taxonomy hardware id (mi355x, b200, ...)")],
    strategy: Annotated[str | None, typer.Option("--strategy", help="default: the recipe's single-node default, "
                                                                      "else single_node_tp")] = None,
    variant: Annotated[str, typer.Option("--variant")] = "default",
    features: Annotated[list[str] | None, typer.Option(
        "--features", help="features to enable (repeat or comma-separate; default: the site's defaults)")] = None,
    mode: Annotated[list[str] | None, typer.Option("--mode", help="FEATURE:MODE for a modes feature")] = None,
    recipes_repo: RecipesRepo = None, recipes_commit: RecipesCommit = None, as_json: AsJson = False,
) -> None:
    """Print the vllm serve command a recipe renders for a hardware, strategy, variant and features."""
    from infx.cli_options import build_request
    from infx.recipes.commands import RenderRequest, format_rendering, render_request

    feats = [f for item in features for f in item.split(",") if f] if features is not None else None
    req = build_request(RenderRequest, {"model": model, "hardware": hardware, "strategy": strategy,
                                        "variant": variant, "features": feats, "modes": mode or [],
                                        "recipes_repo": recipes_repo, "recipes_commit": recipes_commit,
                                        "as_json": as_json}, {"as_json": "--json", "modes": "--mode"})
    typer.echo(format_rendering(render_request(req), req.as_json))


@app.command("show")
@exit_on_error
def show_cmd(model: Annotated[str, typer.Argument(help="Hugging Face id, file or name")],
             recipes_repo: RecipesRepo = None, recipes_commit: RecipesCommit = None, as_json: AsJson = False) -> None:
    """Print what a recipe declares: model facts, variants, hardware status, strategies, features, warnings."""
    from infx.cli_options import build_request
    from infx.recipes.commands import ShowRequest, show

    req = build_request(ShowRequest, {"model": model, "recipes_repo": recipes_repo, "recipes_commit": recipes_commit,
                                      "as_json": as_json}, {"as_json": "--json"})
    typer.echo(show(req))


@app.command("check")
@exit_on_error
def check_cmd(
    config_keys: Annotated[list[str] | None, typer.Option("--config-keys", help="catalog keys or globs "
                                                          "(default: every single-node vLLM entry)")] = None,
    config_files: Annotated[list[Path] | None, typer.Option("--config-files")] = None,
    runner_config: Annotated[Path | None, typer.Option("--runner-config")] = None,
    table: Annotated[Path | None, typer.Option("--table", help="a recipe-args.yaml extending the built-in "
                                               "classification (default: the workspace's recipe-args.yaml)")] = None,
    recipes_repo: RecipesRepo = None, recipes_commit: RecipesCommit = None, as_json: AsJson = False,
    brief: Annotated[bool, typer.Option("--brief", help="only the summary table")] = False,
    all_rows: Annotated[bool, typer.Option("--all-rows", help="also list the flags that match")] = False,
) -> None:
    """Check every single-node vLLM launch of the catalog against its upstream recipe (exit 1 on a must-match
    error)."""
    from infx.cli_options import build_request
    from infx.recipes.commands import CheckCommand, run_check

    keys = [k for item in config_keys for k in item.split(",") if k] if config_keys is not None else None
    req = build_request(CheckCommand, {"config_keys": keys, "config_files": config_files or [],
                                       "runner_config": runner_config, "table": table, "recipes_repo": recipes_repo,
                                       "recipes_commit": recipes_commit, "as_json": as_json, "brief": brief,
                                       "all_rows": all_rows}, {"as_json": "--json"})
    text, checks = run_check(req)
    typer.echo(text)
    if any(c.errors for c in checks):
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="recipes")
