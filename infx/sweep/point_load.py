"""One point's load against a running engine: the point (concurrency, lengths) plus the sweep's
:class:`~infx.sweep.profile.LoadProfile` (how many requests, warmup) become the load generator's
``BenchConfig``; warmup then measurement; the raw records land in the point directory.

Agentic points are handed to the agentic stage's ``run_agentic_point``: they replay ``--agentic-traces``, or,
when none is given, synthetic traces generated once into ``RUN/traces/`` (sized to the launch's context).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.sweep.interfaces import LiveStats, PointInterrupted, ProgressFn, RunningEngine
from infx.sweep.profile import LoadProfile

if TYPE_CHECKING:
    from infx.loadgen.config import BenchConfig


def bench_config(point: Point, engine: RunningEngine, profile: LoadProfile) -> BenchConfig:
    from infx.loadgen.config import BenchConfig

    conc = min(point.concs)
    isl = point.isl or 1024
    osl = point.osl or 128
    if profile.max_isl:
        isl = min(isl, profile.max_isl)
    if profile.max_osl:
        osl = min(osl, profile.max_osl)
    model_path = engine.launch.model_path
    tokenizer = model_path if model_path and Path(model_path).is_dir() else None
    return BenchConfig(
        base_url=engine.base_url,
        model=engine.served_model_name,
        tokenizer=tokenizer,
        endpoint="completions",
        concurrency=conc,
        num_prompts=profile.num_prompts(conc),
        warmup_requests=conc * profile.warmup_per_conc,
        trials=(n := profile.trials_for(point.point_id)),
        max_trials=max(profile.max_trials, n) if profile.max_trials else None,
        ci_target=profile.ci_target,
        seed=profile.seed,
        input_len=isl,
        output_len=osl,
        ignore_eos=True,
        temperature=profile.temperature,
        gpus=point.gpus_per_server or None,
        point=point.to_row(),
        progress=False,
        stop_on_stall=True,  # an engine that stops answering ends the point (the sweep then stops the engine)
        stall_timeout_s=profile.stall_timeout_s or BenchConfig.model_fields["stall_timeout_s"].default,
    )


def run_point_load(point: Point, engine: RunningEngine, point_dir: Path, profile: LoadProfile,
                   progress: ProgressFn | None = None) -> BenchResult:
    if point.is_agentic:
        from infx.agentic.measure import run_agentic_point

        max_context = max_model_len(engine)
        traces = profile.agentic_traces or str(synthetic_traces(point_dir.parents[1] / "traces", profile.seed,
                                                                max_context or 2048))
        return run_agentic_point(point, engine.base_url, engine.served_model_name,
                                 tokenizer_dir=engine.launch.model_path, trace_file=traces,
                                 out_dir=point_dir, duration_s=profile.agentic_duration_s,
                                 metrics_url=engine.launch.metrics_url,
                                 warmup_requests_per_lane=profile.warmup_per_conc, max_context=max_context)

    from infx.loadgen.runner import execute
    from infx.records import RECORDS_FILE, write_records

    run = execute(bench_config(point, engine, profile))
    write_records(point_dir / RECORDS_FILE, run.records)
    if not run.result.complete:
        # the load generator stopped early (Ctrl-C, SIGTERM): its records are kept, the point is not measured
        raise PointInterrupted(run.result)
    if progress is not None:
        t = run.result.metrics.throughput
        progress(LiveStats(done=run.result.metrics.issued, total=run.result.metrics.issued,
                           req_per_s=t.request_per_s, tok_per_s=t.output_tok_per_s,
                           errors=run.result.metrics.failed))
    return run.result


def max_model_len(engine: RunningEngine) -> int | None:
    """The context the launch serves, as its engine adapter reads it back from the argv (None: the argv does
    not say, or no adapter renders this engine, e.g. a deployment's router)."""
    from infx.engines.render import ADAPTERS

    launch = engine.launch
    adapter = ADAPTERS.get(launch.engine)
    return adapter.settings(launch.argv, launch.env, launch.files).max_model_len if adapter else None


SYNTH_FILE = "synthetic.jsonl"


def synthetic_traces(directory: Path, seed: int, max_context: int) -> Path:
    """Agentic traces for runs given none (``--agentic-traces``): synthesized once per run and context
    (deterministic for the seed), so every agentic point of a run replays the same sessions."""
    from infx.agentic.synth import SynthConfig, synth_traces
    from infx.agentic.trace import write_traces

    out = directory / (SYNTH_FILE if max_context == 2048 else f"synthetic-ctx{max_context}.jsonl")
    if out.is_file():
        return out
    directory.mkdir(parents=True, exist_ok=True)
    cfg = SynthConfig(sessions=16, seed=seed, max_context=max_context, out_min=8,
                      out_max=min(48, max_context // 2 - 1))
    write_traces(out, synth_traces(cfg))  # atomic: concurrent groups (Slurm) never read half a file
    return out
