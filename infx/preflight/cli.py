"""``infx preflight``: check every selected point before any GPU time is spent. Exit 1 when a
point fails, 2 on bad input."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from infx.diagnostics import EXIT_BAD_INPUT, Diagnostic, InfxError

if TYPE_CHECKING:
    from infx.catalog import RunnerConfig
    from infx.matrix.point import Point
    from infx.preflight.images import ImagesLock

# argparse parses the arguments (nargs="+" lists, as the matrix CLI); typer only forwards them.
_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def build_parser(prog: str = "infx preflight") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=prog,
        description="Prove every point can run before it costs GPU time: memory against the engine budget "
                    "(read from the rendered launch), image pins, placeholders, concurrency headroom, "
                    "CUDA-graph ceiling, eval coverage. Exit 1 when a point fails, 2 on bad input.",
    )
    ap.add_argument("--config-files", nargs="+", default=None, type=Path,
                    help="master config files (default: the workspace's configs/*-master.yaml)")
    ap.add_argument("--runner-config", default=None, type=Path, help="runners.yaml (default: the workspace's)")
    ap.add_argument("--config-keys", nargs="+", default=None, help="catalog keys or globs (default: every entry)")
    ap.add_argument("--recipes", type=Path, default=None,
                    help="recipe directory (default: the workspace's recipes/ over the built-in recipes)")
    ap.add_argument("--evals", choices=("none", "default", "evals-only", "all"), default="none",
                    help="the eval selection the run will use (checks every arm keeps an eval point)")
    ap.add_argument("--json", dest="as_json", action="store_true", help="print the verdicts as JSON")
    ap.add_argument("--verify-images", action="store_true", help="resolve each image tag to its registry digest")
    ap.add_argument("--images-lock", type=Path, default=None,
                    help="recorded digests (default: the workspace's configs/images.lock, if present)")
    ap.add_argument("--registry-mirror", action="append", default=[], metavar="REGISTRY=URL",
                    help="resolve REGISTRY's images at URL (e.g. docker.io=http://127.0.0.1:5000); repeatable")
    ap.add_argument("--fanout", type=float, default=None,
                    help="agentic fan-out: requests in flight per agentic user (default 2)")
    ap.add_argument("--fanout-from-traces", type=Path, default=None, metavar="TRACES",
                    help="measure the fan-out from agentic traces (widest parallel subagent run)")
    ap.add_argument("--cards", dest="cards_dir", type=Path, default=None,
                    help="cards directory over the built-in cards (default: the workspace's cards/)")
    ap.add_argument("--changelog", type=Path, default=None,
                    help="perf-changelog.yaml to scan for placeholders (default: the workspace's)")
    ap.add_argument("--brief", action="store_true", help="only the summary table")
    return ap


def run(argv: list[str], prog: str = "infx preflight") -> int:
    """Run ``infx preflight`` with ``argv``; returns the exit status."""
    args = build_parser(prog).parse_args(argv)
    try:
        return _run(args)
    except InfxError as exc:
        for d in exc.diagnostics:
            print(str(d), file=sys.stderr)
        return EXIT_BAD_INPUT


def _run(args: argparse.Namespace) -> int:
    from infx.engines.recipes import recipe_files as resolve_recipe_files
    from infx.engines.recipes import workspace_recipes
    from infx.preflight.cards import load_cards
    from infx.preflight.checks import PlaceholderScan
    from infx.preflight.gate import PreflightOptions, preflight_points
    from infx.workspace import BUILTIN_CARDS_DIR, current

    ws = current()
    config_files = args.config_files or ws.require_config_files()
    points, key_of, runners = _select(config_files, args.runner_config or ws.runner_config, args.config_keys,
                                      args.evals)
    recipe_set = workspace_recipes(args.recipes, ws)
    recipe_files = [str(p) for p in resolve_recipe_files(args.recipes, ws)]
    changelog = args.changelog or ws.changelog
    opts = PreflightOptions(
        evals=args.evals, fanout=_fanout(args), verify_images=args.verify_images,
        images_lock=_images_lock(args.images_lock, ws.images_lock), registry_mirrors=_mirrors(args.registry_mirror),
    )
    cards = load_cards([BUILTIN_CARDS_DIR, args.cards_dir] if args.cards_dir else ws.card_dirs())
    verdicts = preflight_points(
        points, recipes=recipe_set, runners=runners, cards=cards, options=opts, config_keys=key_of,
        placeholders=PlaceholderScan.build(config_files, recipe_files, changelog if changelog.is_file() else None),
        recipe_files=_recipe_file_map(recipe_files),
    )
    if args.as_json:
        print(json.dumps([dict(v.model_dump(mode="json"), reason=v.reason) for v in verdicts], indent=2))
    else:
        from infx.preflight.report import print_report

        print_report(verdicts, details=not args.brief)
    return 1 if any(v.status == "fail" for v in verdicts) else 0


def _select(config_files: list[Path], runner_config: Path, config_keys: list[str] | None,
            evals: str) -> tuple[list[Point], dict[str, str], RunnerConfig]:
    """Points of the selected entries, with the catalog key of each (for placeholder scanning)."""
    from infx.catalog import load_runners
    from infx.matrix.select import keyed_points

    keyed = keyed_points(config_files, runner_config, config_keys, evals)
    return [p for _, p in keyed], {p.point_id: k for k, p in keyed}, load_runners(runner_config)


def _fanout(args: argparse.Namespace) -> float:
    if args.fanout_from_traces is not None:
        if args.fanout is not None:
            raise InfxError(Diagnostic("give --fanout or --fanout-from-traces, not both"))
        from infx.preflight.checks import fanout_from_traces

        return fanout_from_traces(args.fanout_from_traces)
    if args.fanout is not None and not (math.isfinite(args.fanout) and 1 <= args.fanout <= 1_000_000):
        raise InfxError(Diagnostic(f"--fanout must be a number of requests in flight per user (>= 1), not "
                                   f"{args.fanout}"))
    return 2.0 if args.fanout is None else args.fanout


def _images_lock(explicit: Path | None, default: Path) -> ImagesLock | None:
    from infx.preflight.images import load_images_lock

    if explicit is not None:
        return load_images_lock(explicit)
    return load_images_lock(default) if default.is_file() else None


def _mirrors(values: list[str]) -> dict[str, str]:
    from infx.preflight.images import RegistryError, checked_url

    out = {}
    for m in values:
        host, sep, url = m.partition("=")
        if not sep or not host or not url:
            raise InfxError(Diagnostic(f"--registry-mirror expects REGISTRY=URL, got '{m}'"))
        try:
            checked_url(url)
        except RegistryError as exc:
            raise InfxError(Diagnostic(f"--registry-mirror {host}: {exc}")) from None
        out[host] = url
    return out


def _recipe_file_map(files: list[str]) -> dict[str, str]:
    """Recipe name -> file, for recipes whose Launch does not carry ``recipe_file``."""
    out = {}
    for f in files:
        out[Path(f).stem] = f
        out[f] = f
    return out


def derive(model_dir: Path, prefix: str | None, model: str | None, out: Path | None, stdout: bool) -> int:
    """``infx cards derive``: write a model card from MODEL_DIR's config.json (+ safetensors index)."""
    from infx.preflight.derive import card_yaml, derive_card, write_card
    from infx.workspace import current

    try:
        card = derive_card(model_dir, prefix=prefix, model=model)
        if stdout:
            sys.stdout.write(card_yaml(card))
            return 0
        target = out or current().cards_dir / "models" / f"{card.model_prefix}.yaml"
        write_card(card, target)
    except InfxError as exc:
        for d in exc.diagnostics:
            print(str(d), file=sys.stderr)
        return EXIT_BAD_INPUT
    est = " (some values estimated: see their notes)" if card.estimated else ""
    print(f"wrote {target}: model card '{card.model_prefix}' for {card.model}{est}")
    return 0


def derive_from_recipe(recipe: str, model_dir: Path | None, recipes_repo: Path | None, recipes_commit: str | None,
                       prefix: str | None, out: Path | None, stdout: bool) -> int:
    """``infx cards derive --recipe MODEL [MODEL_DIR]``: a card seeded from the upstream recipe."""
    from infx.preflight.derive import card_yaml, write_card
    from infx.preflight.recipe_card import RECIPE_CARD_HEAD, card_from_recipe
    from infx.recipes.commands import RepoOptions, open_repo
    from infx.workspace import current

    try:
        repo = open_repo(RepoOptions(recipes_repo=recipes_repo, recipes_commit=recipes_commit))
        card = card_from_recipe(repo, recipe, prefix=prefix, model_dir=model_dir)
        head = None if model_dir is not None else RECIPE_CARD_HEAD
        if stdout:
            sys.stdout.write(card_yaml(card, head))
            return 0
        target = out or current().cards_dir / "models" / f"{card.model_prefix}.yaml"
        write_card(card, target, head)
    except InfxError as exc:
        for d in exc.diagnostics:
            print(str(d), file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"wrote {target}: model card '{card.model_prefix}' for {card.model} (seeded from its upstream recipe)")
    return 0


def preflight(ctx: typer.Context) -> None:
    """Prove every point can run before it costs GPU time: --config-files ... --runner-config R [--config-keys K] \
[--json] [--verify-images]."""
    raise typer.Exit(run(list(ctx.args)))


cards_app = typer.Typer(help="Model and hardware cards: the memory facts the preflight gate reasons with.",
                        no_args_is_help=True)


@cards_app.command("derive")
def cards_derive(
    model_dir: Path | None = typer.Argument(None, help="a local checkpoint directory holding config.json"),
    recipe: str | None = typer.Option(None, "--recipe", help="seed the card from this model's upstream vLLM recipe "
                                         "(with MODEL_DIR: the checkpoint decides, the recipe fills gaps)"),
    recipes_repo: Path | None = typer.Option(None, "--recipes-repo", help="the recipes checkout (default: [recipes] "
                                                "path of infx.toml)"),
    recipes_commit: str | None = typer.Option(None, "--recipes-commit", help="read the checkout at this commit"),
    prefix: str | None = typer.Option(None, "--prefix", help="the card's model-prefix (default: the directory "
                                         "name)"),
    model: str | None = typer.Option(None, "--model", help="the checkpoint's repository id (default: config.json "
                                        "_name_or_path, else the directory name)"),
    out: Path | None = typer.Option(None, "--out", help="file to write (default: the workspace's "
                                       "cards/models/PREFIX.yaml)"),
    stdout: bool = typer.Option(False, "--stdout", help="print the card instead of writing it"),
) -> None:
    """Write a model card from MODEL_DIR's config.json (+ model.safetensors.index.json or the shards' headers for \
checkpoint bytes), or seed one from an upstream recipe (--recipe)."""
    if recipe is not None:
        raise typer.Exit(derive_from_recipe(recipe, model_dir, recipes_repo, recipes_commit, prefix, out, stdout))
    if model_dir is None:
        print("error: give MODEL_DIR or --recipe MODEL", file=sys.stderr)
        raise typer.Exit(EXIT_BAD_INPUT)
    raise typer.Exit(derive(model_dir, prefix, model, out, stdout))


def register(app: typer.Typer) -> None:
    app.command("preflight", context_settings=_PASSTHROUGH, add_help_option=False)(preflight)
    app.add_typer(cards_app, name="cards")
