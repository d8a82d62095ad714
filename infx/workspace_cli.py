"""``infx workspace`` (what was resolved, and from where) and ``infx init DIR``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from infx.diagnostics import exit_on_error


@exit_on_error
def workspace_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Print the workspace every command uses here: its root, how it was found, and each path."""
    from infx.results.store.url import resolve as resolve_store
    from infx.workspace import BUILTIN_CARDS_DIR, BUILTIN_RECIPES_DIR, current

    ws = current()
    store = resolve_store(None, ws.results_dir)  # its password masked: a URL is never printed whole
    rows = [
        ("root", ws.root, f"found by {ws.found_by}"),
        ("marker", ws.marker or "-", "infx.toml" if ws.marker else "none (defaults)"),
        ("catalog", ws.configs_dir, f"{len(ws.config_files())} *-master.yaml"),
        ("runners", ws.runner_config, _exists(ws.runner_config)),
        ("recipes", ws.recipes_dir, _exists(ws.recipes_dir) + f", over built-in {BUILTIN_RECIPES_DIR}"),
        ("cards", ws.cards_dir, _exists(ws.cards_dir) + f", over built-in {BUILTIN_CARDS_DIR}"),
        ("images lock", ws.images_lock, _exists(ws.images_lock)),
        ("perf-changelog", ws.changelog, _exists(ws.changelog)),
        ("results", ws.results_dir, _exists(ws.results_dir)),
        ("cache", ws.cache_dir, _exists(ws.cache_dir)),
        ("store", store.display, f"{store.kind}, from {store.found_by}"),
    ]
    if as_json:
        typer.echo(json.dumps({k: {"path": str(p), "note": n} for k, p, n in rows}
                              | {"config_files": [str(f) for f in ws.config_files()]}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title="infx workspace", show_edge=False)
    for col in ("what", "path", "note"):
        t.add_column(col)
    for k, p, n in rows:
        t.add_row(k, str(p), n)
    Console().print(t)


@exit_on_error
def init_cmd(
    directory: Annotated[Path, typer.Argument(help="Directory of the new workspace (created if missing).")],
) -> None:
    """Scaffold a workspace: marker, an example catalog entry for the embedded engine, runners, its recipe
    and cards, an empty perf-changelog. It passes validate, preflight and run --dry-run as it is."""
    from infx.scaffold import init_workspace

    for f in init_workspace(directory):
        typer.echo(f"wrote {f}")
    typer.echo("pull requests: .github/workflows/infx-review.yml runs `infx review` (read-only) and "
               "infx-review-comment.yml posts its comment; delete them if the workspace is not on GitHub")
    typer.echo(f"next: cd {directory} && infx validate && infx preflight && infx run --config-keys "
               "tinyllama-bf16-cpu-vllm --dry-run")


def register(app: typer.Typer) -> None:
    app.command("workspace")(workspace_cmd)
    app.command("init")(init_cmd)


def _exists(p: Path) -> str:
    return "present" if p.exists() else "missing"
