"""``infx bench``: drive an OpenAI-compatible endpoint and write result.json + raw records."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from infx.cli_options import ModelDefault, build_request
from infx.diagnostics import Diagnostic, InfxError, exit_on_error

if TYPE_CHECKING:
    from pydantic import BaseModel

    from infx.loadgen.config import BenchConfig
    from infx.loadgen.search import Probe
    from infx.metrics.result import BenchResult

# BenchConfig fields whose option is not spelled --field-name
BENCH_OPTIONS = {"duration_s": "--duration", "warmup_requests": "--warmup", "warmup_s": "--warmup",
                 "stall_timeout_s": "--stall-timeout", "total_timeout_s": "--timeout", "out_dir": "--out"}


def _config() -> type[BaseModel]:
    from infx.loadgen.config import BenchConfig

    return BenchConfig


def _fmt(v: float | None, nd: int = 2) -> str:
    return "-" if v is None else f"{v:,.{nd}f}"


def render_summary(result: BenchResult) -> None:
    """A summary table on stdout (rich)."""
    from rich.console import Console
    from rich.table import Table

    m = result.metrics
    t = m.throughput
    console = Console()
    head = Table(title="infx bench" + ("" if result.complete else " (INCOMPLETE: interrupted)"), show_header=False)
    head.add_column("what")
    head.add_column("value", justify="right")
    rows = [
        ("requests issued / completed / failed", f"{m.issued} / {m.completed} / {m.failed}"),
        ("success rate", f"{m.success_rate:.2%}"),
        ("warmup requests (excluded)", str(m.warmup_requests)),
        ("measured window (s)", _fmt(t.duration_s, 3)),
        ("input / output tokens", f"{m.total_input_tokens:,} / {m.total_output_tokens:,}"),
        ("request throughput (req/s)", _fmt(t.request_per_s)),
        ("output throughput (tok/s)", _fmt(t.output_tok_per_s)),
        ("total throughput (tok/s)", _fmt(t.total_tok_per_s)),
    ]
    if t.goodput_req_per_s is not None:
        rows.append(("goodput (req/s)", f"{_fmt(t.goodput_req_per_s)} ({_fmt((m.good_fraction or 0) * 100, 1)}% good)"))
    if t.output_tok_per_s_per_gpu is not None:
        rows.append((f"output tok/s per GPU ({t.gpus_per_server} GPUs)", _fmt(t.output_tok_per_s_per_gpu)))
        rows.append(("total tok/s per GPU", _fmt(t.total_tok_per_s_per_gpu)))
    rows.append(("interactivity at median / P90 TPOT (tok/s/user)",
                 f"{_fmt(m.interactivity_median, 1)} / {_fmt(m.interactivity_p90, 1)}"))
    if m.error_classes:
        rows.append(("errors", ", ".join(f"{k}={v}" for k, v in m.error_classes.items())))
    for k, v in rows:
        head.add_row(k, v)
    console.print(head)

    lat = Table(title="latency (ms)")
    for col in ("metric", "mean", "median", "std", "p90", "p99", "p99.9", "n"):
        lat.add_column(col, justify="right" if col != "metric" else "left")
    for name, s in (("TTFT", m.ttft_ms), ("TPOT", m.tpot_ms), ("ITL", m.itl_ms), ("E2EL", m.e2el_ms),
                    ("queue delay", m.queue_delay_ms)):
        lat.add_row(name, _fmt(s.mean), _fmt(s.median), _fmt(s.std), _fmt(s.p90), _fmt(s.p99), _fmt(s.p999),
                    str(s.count))
    console.print(lat)

    if result.stats:
        unc = Table(title=_uncertainty_title(result))
        for col in ("figure", "mean", "95% CI", "n", "samples"):
            unc.add_column(col, justify="right" if col != "figure" else "left")
        for key, e in result.stats.items():
            cert = "" if e.certified is None or e.certified else " (uncertified)"
            unc.add_row(key, _fmt(e.mean), f"{_fmt(e.lo)} - {_fmt(e.hi)}", str(e.n),
                        ("-" if e.samples is None else str(e.samples)) + cert)
        console.print(unc)

    chk = Table(title="integrity checks")
    chk.add_column("check")
    chk.add_column("status")
    chk.add_column("detail")
    colors = {"ok": "green", "warn": "yellow", "fail": "red"}
    for c in result.checks:
        chk.add_row(c.name, f"[{colors[c.status]}]{c.status}[/]", c.detail)
    console.print(chk)


def _run_search(config: BenchConfig, tier: dict[str, float], limit: int, out: Path | None) -> int:
    """``--search max-concurrency``: probes printed as they finish, the result and its probe count."""
    from infx import atomic
    from infx.loadgen.search import bench_probe, search_max_concurrency

    start = config.concurrency or 1

    def show(p: Probe) -> None:
        typer.echo(f"probe conc={p.conc}: {'meets' if p.met else 'misses'} "
                   f"({p.text})")

    quiet = config.model_copy(update={"progress": False})
    name = ",".join(f"{k}:{v:g}" for k, v in tier.items())
    res = search_max_concurrency(bench_probe(quiet, tier, on_probe=show), tier=name, slo=tier, start=start,
                                 limit=max(limit, start))
    typer.echo(res.text)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        atomic.write_json(out / "search.json", res.model_dump(mode="json"))
        typer.echo(f"wrote {out / 'search.json'}")
    return 0 if res.max_conc is not None else 1


def _uncertainty_title(result: BenchResult) -> str:
    n = len(result.trials) or 1
    method = next(iter(result.stats.values())).method
    title = f"uncertainty: {n} trial(s), " + ("Student-t across trials" if method == "trials"
                                             else "within-run bootstrap (underestimates run-to-run spread)")
    return title + (f"; {result.stop_reason}" if result.stop_reason else "")


@exit_on_error
def bench_cmd(
    ctx: typer.Context,
    base_url: str = typer.Option(..., "--base-url", help="Server root, e.g. http://127.0.0.1:8000"),
    model: str = typer.Option(..., "--model", help="Served model name (sent as 'model')."),
    tokenizer: Path | None = typer.Option(None, "--tokenizer", help="Local dir (or file) with tokenizer.json; "
                                             "default: --model if it is a dir."),
    endpoint: str = typer.Option(..., "--endpoint", default_factory=ModelDefault(_config, "endpoint"),
                                 help="completions | chat"),
    concurrency: int | None = typer.Option(None, "--concurrency", "-c", help="Closed loop with C lanes; with "
                                              "--request-rate: a cap."),
    request_rate: float | None = typer.Option(None, "--request-rate", help="Open loop: arrivals per second."),
    arrival: str = typer.Option(..., "--arrival", default_factory=ModelDefault(_config, "arrival"),
                                help="poisson | gamma | constant (open loop)."),
    burstiness: float | None = typer.Option(None, "--burstiness", help="Gamma shape (1 = Poisson; < 1 burstier). "
                                               "Implies --arrival gamma."),
    num_prompts: int | None = typer.Option(None, "--num-prompts", "-n", help="Measured requests (default 10 x "
                                              "concurrency)."),
    duration: float | None = typer.Option(None, "--duration", help="Measure for S seconds instead of a request "
                                             "count."),
    warmup: str | None = typer.Option(None, "--warmup", help="Warmup requests (N) or seconds (Ns), excluded from "
                                         "metrics."),
    seed: int = typer.Option(..., "--seed", default_factory=ModelDefault(_config, "seed")),
    trials: int = typer.Option(..., "--trials", default_factory=ModelDefault(_config, "trials"),
                               help="Run the measured phase N times (warmup before the first only); figures get a "
                                    "95% Student-t interval across trials."),
    max_trials: int | None = typer.Option(None, "--max-trials", help="Adaptive: keep adding trials (from --trials) "
                                             "until the output tok/s CI half-width is within --ci-target, or M "
                                             "trials."),
    ci_target: float = typer.Option(..., "--ci-target", default_factory=ModelDefault(_config, "ci_target"),
                                    help="Adaptive stop: CI half-width as a fraction of the mean."),
    search: str | None = typer.Option(None, "--search", help="max-concurrency: the largest concurrency meeting "
                                         "--slo (doubling from --concurrency, then bisection)."),
    slo_tier: str | None = typer.Option(None, "--slo", help="SLO tier for --search, e.g. "
                                           "ttft_p95_ms:500,tpot_p95_ms:30 (failed and timed-out requests count as "
                                           "misses)."),
    search_max: int = typer.Option(1024, "--search-max", help="Highest concurrency --search probes."),
    dataset: str = typer.Option(..., "--dataset", default_factory=ModelDefault(_config, "dataset"),
                                help="random | sharegpt"),
    dataset_path: Path | None = typer.Option(None, "--dataset-path", help="Local ShareGPT JSON/JSONL file."),
    input_len: int = typer.Option(..., "--input-len", default_factory=ModelDefault(_config, "input_len"),
                                  help="Random prompts: input tokens (exact under the tokenizer)."),
    output_len: int | None = typer.Option(None, "--output-len", help="max_tokens (random default 128; sharegpt: "
                                             "the reply length)."),
    range_ratio: float = typer.Option(..., "--range-ratio", default_factory=ModelDefault(_config, "range_ratio"),
                                      help="Lengths drawn uniformly in [L*ratio, L]."),
    ignore_eos: bool = typer.Option(False, "--ignore-eos", help="Ask for exactly max_tokens tokens (checked)."),
    goodput: list[str] | None = typer.Option(None, "--goodput", help="SLOs in ms: --goodput ttft:500 tpot:50 "
                                                "e2el:10000"),
    out: Path | None = typer.Option(None, "--out", help="Directory for result.json and records.jsonl.gz."),
    workers: int = typer.Option(..., "--workers", default_factory=ModelDefault(_config, "workers"),
                                help="Processes to shard the lanes over."),
    gpus: int | None = typer.Option(None, "--gpus", help="GPUs behind the endpoint (per-GPU throughput)."),
    nodes: int | None = typer.Option(None, "--nodes", help="Nodes behind the endpoint (per-node throughput)."),
    point: Path | None = typer.Option(None, "--point", help="point.json of a matrix point (topology -> per-GPU "
                                         "figures)."),
    token_ids: bool = typer.Option(False, "--token-ids/--no-token-ids", help="Ask vLLM for per-chunk token ids."),
    continuous_usage: bool = typer.Option(True, "--continuous-usage/--no-continuous-usage", help="Ask for usage on "
                                          "every chunk."),
    stall_timeout: float = typer.Option(..., "--stall-timeout", default_factory=ModelDefault(
        _config, "stall_timeout_s"), help="Fail a request after S seconds without a byte."),
    timeout: float = typer.Option(..., "--timeout", default_factory=ModelDefault(_config, "total_timeout_s"),
                                  help="Fail a request after S seconds in total."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    summary: bool = typer.Option(True, "--summary/--no-summary"),
) -> None:
    """Benchmark an OpenAI-compatible endpoint (closed or open loop) with exact token lengths."""
    from infx.loadgen.config import BenchConfig, parse_warmup
    from infx.loadgen.runner import run_bench
    from infx.metrics.compute import GOODPUT_KEYS, parse_goodput

    diags: list[Diagnostic] = []
    slo_items = list(goodput or [])
    for extra in ctx.args:  # `--goodput ttft:1 tpot:2`: the values after the first
        if extra.partition(":")[0].lower() in GOODPUT_KEYS and slo_items:
            slo_items.append(extra)
        else:
            diags.append(Diagnostic(f"unexpected argument {extra!r}"))
    try:
        slo = parse_goodput(slo_items)
    except ValueError as exc:
        diags.append(Diagnostic(str(exc), path=("--goodput",)))
        slo = {}
    try:
        warm_n, warm_s = parse_warmup(warmup)
    except ValueError:
        diags.append(Diagnostic(f"bad --warmup {warmup!r}: give a request count (16) or seconds (5s)",
                                path=("--warmup",)))
        warm_n, warm_s = 0, 0.0
    point_row = None
    if point is not None:
        from infx import jsonio

        try:
            point_row = jsonio.load(point, what="point file")
        except InfxError as exc:
            diags.extend(exc.diagnostics)
    if gpus is None and point_row is not None:
        try:
            from infx.matrix.point import Point

            gpus = Point.from_row(point_row).gpus_per_server
        except Exception as exc:
            diags.append(Diagnostic(f"not a matrix point: {exc}", file=str(point)))
    if out is not None:  # before measuring, so a measurement is never lost at the write
        from infx.outpaths import check_output_dir

        try:
            check_output_dir(out, "--out")
        except InfxError as exc:
            diags.extend(exc.diagnostics)
    tier: dict[str, float] = {}
    if search is not None:
        from infx.metrics.slo import parse_tier_text

        if search != "max-concurrency":
            diags.append(Diagnostic(f"--search must be max-concurrency, not {search!r}", path=("--search",)))
        if not slo_tier:
            diags.append(Diagnostic("--search max-concurrency needs --slo KEY:MS[,KEY:MS]", path=("--slo",)))
        else:
            try:
                tier = parse_tier_text(slo_tier)
            except ValueError as exc:
                diags.append(Diagnostic(str(exc), path=("--slo",)))
        if concurrency is None:
            concurrency = 1
    elif slo_tier:
        diags.append(Diagnostic("--slo is for --search max-concurrency", path=("--slo",)))
    if diags:
        raise InfxError(diags)
    config = build_request(BenchConfig, {
        "base_url": base_url, "model": model, "tokenizer": str(tokenizer) if tokenizer else None,
        "endpoint": endpoint, "concurrency": concurrency, "request_rate": request_rate,
        "arrival": "gamma" if burstiness is not None and arrival == "poisson" else arrival,
        "burstiness": burstiness if burstiness is not None else 1.0, "num_prompts": num_prompts,
        "duration_s": duration, "warmup_requests": warm_n, "warmup_s": warm_s, "seed": seed, "trials": trials,
        "max_trials": max_trials, "ci_target": ci_target, "dataset": dataset,
        "dataset_path": str(dataset_path) if dataset_path else None, "input_len": input_len,
        "output_len": output_len, "range_ratio": range_ratio, "ignore_eos": ignore_eos, "goodput": slo,
        "out_dir": str(out) if out else None, "workers": workers, "gpus": gpus, "nodes": nodes, "point": point_row,
        "token_ids": token_ids, "continuous_usage": continuous_usage, "stall_timeout_s": stall_timeout,
        "total_timeout_s": timeout, "progress": progress,
    }, BENCH_OPTIONS)
    if search is not None:
        raise typer.Exit(_run_search(config, tier, search_max, out))
    result = run_bench(config)
    if summary:
        render_summary(result)
    if out:
        typer.echo(f"wrote {out / 'result.json'} and {out / 'records.jsonl.gz'}")
    if not result.complete:
        raise typer.Exit(130)
    if any(c.status == "fail" for c in result.checks):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("bench", context_settings={"allow_extra_args": True, "ignore_unknown_options": False})(bench_cmd)
