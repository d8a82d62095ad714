"""CLI for the engines stage: ``infx plan`` and ``infx engine build-tiny-model|up|down``."""

from __future__ import annotations

from pathlib import Path

import typer

from infx.diagnostics import exit_on_error

engine_app = typer.Typer(
    name="engine",
    help="The embedded engine: real vLLM on CPU serving a tiny model built offline.",
    no_args_is_help=True,
)

_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


@engine_app.command("build-tiny-model")
@exit_on_error
def build_tiny_model_cmd(
    dir: Path = typer.Argument(..., help="Directory to write the model into (replaced if present)."),
) -> None:
    """Build the tiny Llama model (tokenizer, config, weights) offline; byte-identical on rerun."""
    from infx.engines.tiny_model import build_tiny_model

    typer.echo(str(build_tiny_model(dir)))


@engine_app.command("up")
@exit_on_error
def up_cmd(
    port: int | None = typer.Option(None, "--port", help="Port on 127.0.0.1 (default: a free one)."),
    model_dir: Path | None = typer.Option(None, "--model-dir", help="Model directory (default: "
                                             "<workspace>/.infx/cache/tinyllama, built if missing)."),
    timeout: float = typer.Option(240.0, "--timeout", help="Seconds to wait for /health and one streamed completion."),
    state_dir: Path | None = typer.Option(None, "--state-dir", help="Where the state file and log go (default: "
                                             "<workspace>/.infx/engine).", hidden=True),
) -> None:
    """Start vLLM on CPU serving the tiny model; print its URL once a completion streams."""
    from infx.engines import embedded
    from infx.engines.server import EngineFailure

    try:
        if port is not None:
            from infx.engines.server import port_is_free

            if not port_is_free(port):
                typer.echo(f"error: port {port} on 127.0.0.1 is already in use; choose another --port or omit it",
                           err=True)
                raise typer.Exit(1)
        state = embedded.up(port=port, model_dir=model_dir, timeout=timeout, sdir=state_dir)
    except EngineFailure as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    for r in state.port_retries:  # never hidden: a launch that lost its port and was relaunched
        typer.echo(f"note: launch {r.attempt} lost port {r.port} ({r.message}); relaunched on {r.new_port}", err=True)
    typer.echo(f"{state.base_url}  model={state.model}  pid={state.pid}  log={state.log_path}", err=True)
    typer.echo(state.base_url)


@engine_app.command("down")
def down_cmd(
    grace: float = typer.Option(15.0, "--grace", help="Seconds between SIGTERM and SIGKILL."),
    state_dir: Path | None = typer.Option(None, "--state-dir", hidden=True),
) -> None:
    """Stop the engine started by `infx engine up` (its whole process group), and any engine a killed infx
    process of this workspace left running."""
    from infx.engines import embedded, reaper

    orphans = reaper.reap_orphans(grace=grace)
    reaper.announce(orphans)
    state = embedded.down(grace=grace, sdir=state_dir)
    if state is None:
        if not orphans:
            typer.echo("no engine running", err=True)
    else:
        typer.echo(f"stopped engine pid={state.pid} at {state.base_url}", err=True)


def plan(ctx: typer.Context) -> None:
    """Render each point's engine launch (argv, env, fingerprint): --config-files ... --config-keys K [--json]."""
    from infx.engines.plan import run

    raise typer.Exit(run(list(ctx.args)))


def register(app: typer.Typer) -> None:
    app.add_typer(engine_app, name="engine")
    app.command("plan", context_settings=_PASSTHROUGH, add_help_option=False)(plan)
