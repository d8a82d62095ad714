"""One point's load against a running engine: the point (concurrency, lengths) plus the sweep's
:class:`~infx.sweep.driver.LoadProfile` (how many requests, warmup) become the load generator's
``BenchConfig``; warmup then measurement; the raw records land in the point directory.

Agentic points are handed to the agentic stage's ``run_agentic_point`` when it is installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.sweep.driver import LoadProfile
from infx.sweep.executors import LiveStats, ProgressFn


def bench_config(point: Point, engine: Any, profile: LoadProfile) -> Any:
    from infx.loadgen.config import BenchConfig

    conc = min(point.concs)
    isl = point.isl or 1024
    osl = point.osl or 128
    if profile.max_isl:
        isl = min(isl, profile.max_isl)
    if profile.max_osl:
        osl = min(osl, profile.max_osl)
    model_path = getattr(engine, "model_path", None)
    tokenizer = model_path if model_path and Path(model_path).is_dir() else None
    return BenchConfig(
        base_url=engine.base_url,
        model=engine.served_model_name,
        tokenizer=tokenizer,
        endpoint="completions",
        concurrency=conc,
        num_prompts=profile.num_prompts(conc),
        warmup_requests=conc * profile.warmup_per_conc,
        seed=profile.seed,
        input_len=isl,
        output_len=osl,
        ignore_eos=True,
        gpus=point.gpus_per_server or None,
        point=point.to_row(),
        progress=False,
    )


def run_point_load(point: Point, engine: Any, point_dir: Path, profile: LoadProfile,
                   progress: ProgressFn | None = None) -> BenchResult:
    if point.is_agentic:
        from infx.agentic.measure import run_agentic_point

        if not profile.agentic_traces:
            raise ValueError("agentic points need a trace file: --agentic-traces FILE (see `infx traces synth`)")
        return run_agentic_point(point, engine.base_url, engine.served_model_name,
                                 tokenizer_dir=getattr(engine, "model_path", None) or "", trace_file=
                                 profile.agentic_traces, out_dir=point_dir, duration_s=profile.agentic_duration_s)

    from infx.loadgen.records import RECORDS_FILE, write_records
    from infx.loadgen.runner import execute

    run = execute(bench_config(point, engine, profile))
    if not run.result.complete:
        # the load generator stopped early (Ctrl-C): the point is not measured; keep nothing
        raise KeyboardInterrupt
    write_records(point_dir / RECORDS_FILE, run.records)
    if progress is not None:
        t = run.result.metrics.throughput
        progress(LiveStats(done=run.result.metrics.issued, total=run.result.metrics.issued,
                           req_per_s=t.request_per_s, tok_per_s=t.output_tok_per_s,
                           errors=run.result.metrics.failed))
    return run.result
