"""``infx traces synth|stats|replay``: agentic traces (weka format) and their replay."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from infx.cli_options import ModelDefault, build_request
from infx.diagnostics import Diagnostic, InfxError, exit_on_error

if TYPE_CHECKING:
    from pydantic import BaseModel

traces_app = typer.Typer(
    name="traces",
    help="Agentic traces (weka JSONL): synthesize, describe, replay against a server.",
    no_args_is_help=True,
    add_completion=False,
)


def _synth() -> type[BaseModel]:
    from infx.agentic.synth import SynthConfig

    return SynthConfig


def _replay() -> type[BaseModel]:
    from infx.agentic.replay import ReplayConfig

    return ReplayConfig


# ReplayConfig fields whose option is not spelled --field-name
REPLAY_OPTIONS = {"duration_s": "--duration", "trajectory_start_min": "--trajectory-start",
                  "trajectory_start_max": "--trajectory-start", "warmup_requests_per_lane": "--warmup-per-lane",
                  "idle_gap_cap_s": "--idle-gap-cap", "error_rate_threshold": "--error-threshold",
                  "subagents": "--sequential-subagents"}


@traces_app.command("synth")
@exit_on_error
def synth_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="traces.jsonl to write"),
    sessions: int = typer.Option(default_factory=ModelDefault(_synth, "sessions"),
        help="number of sessions (one trace each)"),
    seed: int = typer.Option(default_factory=ModelDefault(_synth, "seed"), help="RNG seed: same seed, same file"),
    max_context: int = typer.Option(default_factory=ModelDefault(_synth, "max_context"),
        help="input + output of any request stays within this (the tiny model: 2048)"),
    turns_min: int = typer.Option(default_factory=ModelDefault(_synth, "turns_min"),
        help="main-agent turns per session, low end"),
    turns_max: int = typer.Option(default_factory=ModelDefault(_synth, "turns_max"),
        help="main-agent turns per session, high end"),
    initial_context: float = typer.Option(default_factory=ModelDefault(_synth, "initial_context"),
        help="first turn's input as a fraction of --max-context"),
    growth: float = typer.Option(default_factory=ModelDefault(_synth, "growth"),
        help="mean context growth per turn, fraction of --max-context"),
    system_prefix: float = typer.Option(default_factory=ModelDefault(_synth, "system_prefix"),
        help="shared system prompt, fraction of --max-context"),
    out_min: int = typer.Option(default_factory=ModelDefault(_synth, "out_min"),
        help="output tokens per request, low end"),
    out_max: int = typer.Option(default_factory=ModelDefault(_synth, "out_max"),
        help="output tokens per request, high end"),
    fanout_prob: float = typer.Option(default_factory=ModelDefault(_synth, "fanout_prob"),
        help="probability that a main turn starts a subagent stretch"),
    fanout_width_min: int = typer.Option(default_factory=ModelDefault(_synth, "fanout_width_min"),
        help="parallel subagents per stretch, low end"),
    fanout_width_max: int = typer.Option(default_factory=ModelDefault(_synth, "fanout_width_max"),
        help="parallel subagents per stretch, high end"),
    subagent_turns_min: int = typer.Option(default_factory=ModelDefault(_synth, "subagent_turns_min"),
        help="turns per subagent, low end"),
    subagent_turns_max: int = typer.Option(default_factory=ModelDefault(_synth, "subagent_turns_max"),
        help="turns per subagent, high end"),
    reuse: float = typer.Option(default_factory=ModelDefault(_synth, "reuse"),
        help="share of the previous context kept as prefix (1 append-only, 0 no reuse)"),
    think_time: float = typer.Option(default_factory=ModelDefault(_synth, "think_time"),
        help="mean idle gap between turns, seconds"),
) -> None:
    """Write synthetic agentic traces in the weka format (deterministic for a seed)."""
    from infx.agentic.stats import trace_stats
    from infx.agentic.synth import SynthConfig, synth_traces
    from infx.agentic.trace import write_traces

    cfg = build_request(SynthConfig, {
        "sessions": sessions, "seed": seed, "max_context": max_context, "turns_min": turns_min,
        "turns_max": turns_max, "initial_context": initial_context, "growth": growth, "system_prefix": system_prefix,
        "out_min": out_min, "out_max": out_max, "fanout_prob": fanout_prob, "fanout_width_min": fanout_width_min,
        "fanout_width_max": fanout_width_max, "subagent_turns_min": subagent_turns_min,
        "subagent_turns_max": subagent_turns_max, "reuse": reuse, "think_time": think_time,
    })
    from infx.outpaths import check_output_file

    check_output_file(out, "--out")
    traces = synth_traces(cfg)
    write_traces(out, traces)
    st = trace_stats(traces)
    typer.echo(
        f"wrote {out}: {st.sessions} sessions, {st.requests} requests ({st.subagent_requests} in subagents), "
        f"theoretical prefix-cache hit {st.theoretical_cache_hit_rate:.1%}"
    )


@traces_app.command("stats")
@exit_on_error
def stats_cmd(
    file: Path = typer.Argument(..., help="traces.jsonl (weka format)"),
    json_out: bool = typer.Option(False, "--json", help="print the figures as JSON instead of a table"),
) -> None:
    """Turns, context length, fan-out and reuse distributions of a trace file."""
    from infx.agentic.stats import render_stats, trace_stats
    from infx.agentic.trace import load_traces

    st = trace_stats(load_traces(file))
    if json_out:
        typer.echo(st.model_dump_json(indent=2))
        return
    from rich.console import Console

    Console().print(render_stats(st, title=str(file)))


@traces_app.command("replay")
@exit_on_error
def replay_cmd(
    file: Path = typer.Argument(..., help="traces.jsonl (weka format)"),
    url: str = typer.Option(..., help="server base URL, e.g. http://127.0.0.1:8000"),
    model: str = typer.Option(..., help="served model name"),
    tokenizer: Path = typer.Option(..., help="the served model's directory or tokenizer.json"),
    out: Path = typer.Option(..., "--out", "-o", help="directory for result.json, records.jsonl.gz, sessions.jsonl.gz"),
    concurrency: int = typer.Option(4, "--concurrency", "-c", help="lanes (concurrent session trees)"),
    duration: float | None = typer.Option(600.0, help="seconds before new requests stop"),
    max_sessions: int | None = typer.Option(None, help="stop after this many sessions"),
    trajectory_start: str = typer.Option("0.25:0.75", help="first session's start, as a MIN:MAX ratio of its steps"),
    warmup_per_lane: int = typer.Option(default_factory=ModelDefault(_replay, "warmup_requests_per_lane"),
        help="warmup requests per lane (excluded from metrics)"),
    idle_gap_cap: float = typer.Option(default_factory=ModelDefault(_replay, "idle_gap_cap_s"),
        help="longest idle gap replayed, seconds"),
    time_scale: float = typer.Option(default_factory=ModelDefault(_replay, "time_scale"),
        help="multiply idle gaps (0: back to back)"),
    max_context: int | None = typer.Option(None, help="skip requests whose input + output exceed this"),
    error_threshold: float = typer.Option(default_factory=ModelDefault(_replay, "error_rate_threshold"),
        help="fail the run above this error rate"),
    seed: int = typer.Option(default_factory=ModelDefault(_replay, "seed"), help="session order and start offsets"),
    cache_salt: str | None = typer.Option(None, help="prompt salt (default: random, so runs never share cache)"),
    sequential_subagents: bool = typer.Option(False, help="run subagents one after another (no fan-out)"),
) -> None:
    """Replay agentic traces against an OpenAI-compatible chat endpoint and write a BenchResult."""
    from infx.agentic.measure import run_replay_to_dir
    from infx.agentic.replay import ReplayConfig

    try:
        lo_s, hi_s = trajectory_start.split(":")
        lo, hi = float(lo_s), float(hi_s)
    except ValueError:
        raise InfxError(Diagnostic(f"--trajectory-start must be MIN:MAX ratios, got {trajectory_start!r}")) from None
    cfg = build_request(ReplayConfig, {
        "concurrency": concurrency, "duration_s": duration, "max_sessions": max_sessions, "trajectory_start_min": lo,
        "trajectory_start_max": hi, "warmup_requests_per_lane": warmup_per_lane, "idle_gap_cap_s": idle_gap_cap,
        "time_scale": time_scale, "max_context": max_context, "error_rate_threshold": error_threshold, "seed": seed,
        "cache_salt": cache_salt, "subagents": "sequential" if sequential_subagents else "parallel",
    }, REPLAY_OPTIONS)
    from infx.agentic.replay import ReplayError
    from infx.outpaths import check_output_dir

    check_output_dir(out, "--out")  # before replaying, so the measurement is never lost at the write
    try:
        result = run_replay_to_dir(file, base_url=url, model=model, tokenizer_dir=tokenizer, out_dir=out, config=cfg)
    except ReplayError as exc:
        typer.echo(f"error: replay could not run: {exc}", err=True)
        raise typer.Exit(1) from None
    m = result.metrics
    ex = result.extra.agentic
    assert ex is not None  # the replay's result always carries its figures
    typer.echo(
        f"{m.completed}/{m.issued} ok, {m.throughput.output_tok_per_s:.1f} output tok/s, "
        f"in-flight high-water {ex.in_flight_high_water} (C={concurrency}), "
        f"sessions {ex.sessions_started} started / {ex.sessions_completed} completed -> {out}"
    )
    for c in result.checks:
        if c.status != "ok":
            typer.echo(f"{c.status}: {c.name}: {c.detail}", err=True)
    if any(c.status == "fail" for c in result.checks):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(traces_app, name="traces")
