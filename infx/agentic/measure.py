"""Agentic measurement: the load generator's metrics plus session figures, as a ``BenchResult``.

``result.metrics`` is computed by the load generator's :func:`infx.metrics.compute.compute_metrics`
over the profiled (non-warmup) records. ``result.extra.agentic`` adds what only a session replay
knows: the in-flight high-water mark (the preflight headroom check sizes ``max-num-seqs`` from it),
sessions started/completed, per-session distributions, agentic interactivity, prompt-length
fidelity, and (when a ``/metrics`` URL is given) the server's prefix-cache hit rate over the run.

**Agentic interactivity** (tok/s/session): for each session tree, the output tokens it received
divided by the wall time during which at least one of its requests was in flight (idle/tool gaps
excluded, parallel subagents counted once). It is what an agent user perceives as "the agent's
speed"; fan-out raises it, queueing lowers it. Reported at the median and at the slow tail
(``p90`` = the 10th percentile of the per-session rates, matching the fixed-scenario convention that
the P90 interactivity is the slow one).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

import numpy as np

from infx import atomic
from infx.agentic.replay import ReplayConfig, ReplayOutcome, SessionRecord, replay
from infx.engine_metrics import EngineStateSample, scrape_once
from infx.metrics.result import BenchResult, Check, Metrics
from infx.metrics.run_config import AgenticRunConfig, ReplaySettings
from infx.metrics.sections import AgenticFigures, Clock, Dist, ResultExtra, ServerPrefixCache
from infx.pointfiles import RECORDS_FILE, RESULT_FILE
from infx.records import RequestRecord, write_records

SESSIONS_FILE = "sessions.jsonl.gz"

def scrape_prefix_cache(metrics_url: str, timeout_s: float = 10.0) -> tuple[float, float] | None:
    """(hits, queries) prefix-cache token counters from the engine's ``/metrics`` page, None when the
    page is unreachable or lacks either counter."""
    return prefix_cache(scrape_once(metrics_url, timeout_s))


def prefix_cache(sample: EngineStateSample | None) -> tuple[float, float] | None:
    if sample is None or sample.prefix_hits is None or sample.prefix_queries is None:
        return None
    return sample.prefix_hits, sample.prefix_queries


def _metrics(records: list[RequestRecord], gpus_per_server: int | None) -> Metrics:
    from infx.metrics.compute import compute_metrics

    return compute_metrics(records, gpus=gpus_per_server)


def build_result(
    outcome: ReplayOutcome,
    cfg: ReplayConfig,
    *,
    trace_file: str | None = None,
    point_row: dict[str, Any] | None = None,
    gpus_per_server: int | None = None,
    server_cache: tuple[tuple[float, float], tuple[float, float]] | None = None,
) -> BenchResult:
    profiled = [r for r in outcome.records if not r.warmup]
    metrics = _metrics(profiled, gpus_per_server)
    errors = [r for r in profiled if not r.ok and r.error_class != "cancelled"]
    finished = [r for r in profiled if r.error_class != "cancelled"]
    err_rate = len(errors) / len(finished) if finished else 0.0
    checks = []
    if not finished:
        checks.append(Check(name="error_rate", status="fail", detail="no request was measured"))
    else:
        status: Literal["ok", "fail"] = "fail" if err_rate > cfg.error_rate_threshold or outcome.abort_reason else "ok"
        detail = f"{len(errors)}/{len(finished)} failed ({err_rate:.1%}, threshold {cfg.error_rate_threshold:.0%})"
        if outcome.abort_reason:
            detail += f"; replay stopped early: {outcome.abort_reason}"
        checks.append(Check(name="error_rate", status=status, detail=detail))
    from infx.loadgen import checks as lg

    checks += [lg.check_accounting(profiled, metrics, outcome.issued_measured), lg.check_output_lengths(profiled),
               lg.check_first_token(profiled), lg.check_single_finish(profiled), lg.check_input_lengths(profiled)]
    if outcome.skipped_requests:
        checks.append(Check(name="max_context", status="warn",
                            detail=f"{outcome.skipped_requests} requests over --max-context were skipped"))
    cache = None
    if server_cache is not None:
        (h0, q0), (h1, q1) = server_cache
        dq = q1 - q0
        cache = ServerPrefixCache(hits=h1 - h0, queries=dq, hit_rate=(h1 - h0) / dq if dq > 0 else None)
    sessions = outcome.sessions
    measured = [s for s in sessions if not s.warmup_only and s.ok > 0]
    rates = [s.output_tokens / (s.busy_ns / 1e9) for s in measured if s.busy_ns > 0]
    figures = AgenticFigures(
        in_flight_high_water=outcome.in_flight_high_water,
        in_flight_high_water_profiled=outcome.in_flight_high_water_profiled,
        concurrency=cfg.concurrency,
        records_total=len(outcome.records),
        records_warmup=len(outcome.records) - len(profiled),
        records_cancelled=sum(r.error_class == "cancelled" for r in outcome.records),
        error_rate=err_rate,
        chat_overhead_tokens=outcome.chat_overhead_tokens,
        prompt_token_mismatches=outcome.prompt_token_mismatches,
        skipped_requests=outcome.skipped_requests,
        cache_salt=outcome.cache_salt,
        stopped_by=outcome.stopped_by,
        abort_reason=outcome.abort_reason,
        mean_in_flight=_mean_in_flight(profiled),
        trace_file=trace_file,
        sessions_started=len(sessions),
        sessions_completed=sum(s.completed for s in sessions),
        sessions_measured=len(measured),
        session_requests=Dist.of([s.requests for s in measured]),
        session_subagent_requests=Dist.of([s.subagent_requests for s in measured]),
        session_duration_s=Dist.of([(s.end_ns - s.start_ns) / 1e9 for s in measured]),
        session_busy_s=Dist.of([s.busy_ns / 1e9 for s in measured]),
        session_max_in_flight=Dist.of([s.max_in_flight for s in measured]),
        agentic_interactivity=Dist.of(rates),
        agentic_interactivity_median=float(np.percentile(rates, 50)) if rates else None,
        agentic_interactivity_p90=float(np.percentile(rates, 10)) if rates else None,  # the slow tail
        server_prefix_cache=cache,
    )
    return BenchResult(
        complete=outcome.stopped_by != "error_rate",
        started_at=outcome.wall_started,
        ended_at=outcome.wall_ended,
        config=AgenticRunConfig(replay=ReplaySettings.model_validate(cfg.model_dump()), trace_file=trace_file),
        metrics=metrics,
        checks=checks,
        versions=_versions(),
        point=point_row,
        extra=ResultExtra(agentic=figures, clock=_clock(outcome, profiled)),
    )


def _clock(outcome: ReplayOutcome, profiled: list[RequestRecord]) -> Clock:
    """The replay's monotonic/unix anchor and its measured window (first send to last end), as the load
    generator records it: telemetry aligns its wall-clock samples to this window."""
    from infx.metrics.compute import measurement_window

    return Clock(monotonic_ns=outcome.started_ns, unix_ns=int(outcome.wall_started * 1e9),
                 window_ns=measurement_window(profiled))


def _mean_in_flight(records: list[RequestRecord]) -> float | None:
    """Time-averaged requests in flight over the measured window."""
    if not records:
        return None
    t0 = min(r.send_ns for r in records)
    t1 = max(r.end_ns for r in records)
    if t1 <= t0:
        return None
    return sum(r.end_ns - r.send_ns for r in records) / (t1 - t0)


def _versions() -> dict[str, str]:
    import platform

    from infx import __version__

    return {"infx": __version__, "python": platform.python_version()}


def write_sessions(path: str | Path, sessions: list[SessionRecord]) -> None:
    atomic.write_jsonl_gz(path, (s.model_dump() for s in sessions))


def read_sessions(path: str | Path) -> list[SessionRecord]:
    from infx import jsonio

    return list(jsonio.iter_models(path, SessionRecord, what="sessions file"))


def run_replay_to_dir(
    trace_file: str | Path,
    *,
    base_url: str,
    model: str,
    tokenizer_dir: str | Path,
    out_dir: str | Path,
    config: ReplayConfig,
    metrics_url: str | None = None,
    point_row: dict[str, Any] | None = None,
    gpus_per_server: int | None = None,
) -> BenchResult:
    """Load + validate traces, replay, write ``result.json``, ``records.jsonl.gz`` and
    ``sessions.jsonl.gz`` into ``out_dir``; return the result."""
    from infx.agentic.prompts import BlockTokenizer
    from infx.agentic.trace import load_traces
    from infx.loadgen.http import Target

    traces = load_traces(trace_file)
    blocks = BlockTokenizer(tokenizer_dir, block_size=traces[0].block_size)
    target = Target(base_url=base_url, model=model, stall_timeout_s=config.stall_timeout_s,
                    total_timeout_s=config.total_timeout_s)
    metrics_url = metrics_url or base_url.rstrip("/") + "/metrics"
    before = scrape_prefix_cache(metrics_url)
    outcome = replay(traces, blocks, target, config)
    time.sleep(0.2)  # let the server's metrics catch up with the last request
    after = scrape_prefix_cache(metrics_url)
    cache = (before, after) if before is not None and after is not None else None
    result = build_result(outcome, config, trace_file=str(trace_file), point_row=point_row,
                          gpus_per_server=gpus_per_server, server_cache=cache)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_records(out / RECORDS_FILE, outcome.records)
    write_sessions(out / SESSIONS_FILE, outcome.sessions)
    atomic.write_text(out / RESULT_FILE, result.model_dump_json(indent=2) + "\n")
    return result


def run_agentic_point(
    point: Any,
    base_url: str,
    model: str,
    tokenizer_dir: str | Path,
    trace_file: str | Path,
    out_dir: str | Path,
    *,
    duration_s: float | None = None,
    metrics_url: str | None = None,
    **overrides: Any,
) -> BenchResult:
    """Run one agentic matrix point (``infx.matrix.point.Point``) for the sweeps stage.

    Concurrency is the point's conc (lanes), duration the point's ``duration`` unless
    ``duration_s`` is given; any other :class:`ReplayConfig` field may be overridden by keyword
    (e.g. ``warmup_requests_per_lane=1, max_context=2048``)."""
    from infx.diagnostics import Diagnostic, InfxError

    if not point.is_agentic:
        raise InfxError(Diagnostic(f"point {point.point_id} is {point.scenario_type}, not agentic-coding"))
    conc = point.concs[0]
    dur = duration_s if duration_s is not None else float(point.duration or 3600)
    cfg = ReplayConfig(concurrency=conc, duration_s=dur, **overrides)
    return run_replay_to_dir(
        trace_file, base_url=base_url, model=model, tokenizer_dir=tokenizer_dir, out_dir=out_dir, config=cfg,
        metrics_url=metrics_url, point_row=point.to_row(), gpus_per_server=point.gpus_per_server,
    )
