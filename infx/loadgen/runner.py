"""``run_bench(config) -> BenchResult``: dataset -> schedule -> warmup -> measured phase ->
records -> metrics -> checks -> ``result.json`` + ``records.jsonl.gz``.

One process runs one uvloop event loop with one aiohttp session. ``workers > 1`` forks that many
processes, each driving a shard of the lanes (closed loop: concurrency split; open loop: every
N-th arrival of the one global schedule), started together through a barrier.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import itertools
import json
import multiprocessing as mp
import os
import platform
import signal
import threading
import time
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infx import atomic, preemption
from infx.loadgen.checks import run_checks
from infx.loadgen.config import BenchConfig
from infx.loadgen.datasets import Prompt, load_tokenizer, random_prompts, sharegpt_prompts
from infx.loadgen.drive import Counters, drive
from infx.loadgen.http import Target, make_session
from infx.loadgen.progress import Progress
from infx.loadgen.source import RequestSource, ScheduledSource, arrival_offsets_s, sleep_until
from infx.metrics.compute import compute_metrics
from infx.metrics.result import BenchResult
from infx.metrics.run_config import Arrival, BenchSettings
from infx.metrics.sections import ClientCost, Clock, ResultExtra
from infx.pointfiles import RESULT_FILE
from infx.records import RECORDS_FILE, Endpoint, RequestRecord, RequestSpec, write_records

_now = time.monotonic_ns


# --------------------------------------------------------------------------- plan (picklable)
@dataclass
class ShardPlan:
    """What one process drives."""

    worker: int
    workers: int
    target: Target
    endpoint: Endpoint
    ignore_eos: bool
    main_prompts: list[Prompt]
    warm_prompts: list[Prompt]
    cycle: bool  # duration mode: reuse prompts until the deadline
    num_main: int | None
    concurrency: int | None  # this shard's cap
    request_rate: float | None  # global rate (the shard takes every workers-th arrival)
    arrival: Arrival
    burstiness: float
    seed: int
    duration_s: float | None
    warmup_requests: int
    warmup_s: float
    temperature: float | None = None


@dataclass
class ShardOutput:
    worker: int
    records: list[RequestRecord]
    main_start_ns: int
    main_end_ns: int
    cpu_ns: int  # process CPU during the measured phase
    wall_ns: int
    interrupted: bool
    issued: int = 0  # measured requests the driver sent (the accounting check's reference)


@dataclass
class BenchRun:
    result: BenchResult
    records: list[RequestRecord] = field(default_factory=list)


def _specs(plan: ShardPlan, prompts: list[Prompt], prefix: str, *, warmup: bool, limit: int | None,
           cycle: bool) -> Iterator[RequestSpec]:
    """Request specs for one shard: global index g = worker + k * workers, ids ``prefix-g``."""
    if not prompts:
        return
    for idx in itertools.count(plan.worker, plan.workers):
        if limit is not None and idx >= limit:
            return
        if not cycle and idx >= len(prompts) and limit is None:
            return
        p = prompts[idx % len(prompts)]
        yield RequestSpec(
            request_id=f"{prefix}-{idx}",
            endpoint=plan.endpoint,
            prompt=p.text,
            max_tokens=p.output_tokens,
            ignore_eos=plan.ignore_eos,
            warmup=warmup,
            expected_input_tokens=p.input_tokens,
            extra_body={} if plan.temperature is None else {"temperature": plan.temperature},
        )


def _offsets(plan: ShardPlan, n: int | None, seed: int) -> Iterator[float] | None:
    if plan.request_rate is None:
        return None
    gen = arrival_offsets_s(n, plan.request_rate, arrival=plan.arrival, burstiness=plan.burstiness, seed=seed)
    return itertools.islice(gen, plan.worker, None, plan.workers)


def _source(plan: ShardPlan, *, warmup: bool, start_ns: int) -> RequestSource:
    if warmup:
        if plan.warmup_s > 0:
            deadline = start_ns + int(plan.warmup_s * 1e9)
            specs = _specs(plan, plan.warm_prompts, "w", warmup=True, limit=None, cycle=True)
            return ScheduledSource(specs, offsets_s=_offsets(plan, None, plan.seed + 1), start_ns=start_ns,
                                   deadline_ns=deadline)
        specs = _specs(plan, plan.warm_prompts, "w", warmup=True, limit=plan.warmup_requests, cycle=True)
        return ScheduledSource(specs, offsets_s=_offsets(plan, plan.warmup_requests, plan.seed + 1), start_ns=start_ns)
    if plan.duration_s is not None:
        deadline = start_ns + int(plan.duration_s * 1e9)
        specs = _specs(plan, plan.main_prompts, "r", warmup=False, limit=None, cycle=True)
        return ScheduledSource(specs, offsets_s=_offsets(plan, None, plan.seed), start_ns=start_ns,
                               deadline_ns=deadline)
    specs = _specs(plan, plan.main_prompts, "r", warmup=False, limit=plan.num_main, cycle=False)
    return ScheduledSource(specs, offsets_s=_offsets(plan, plan.num_main, plan.seed), start_ns=start_ns)


# --------------------------------------------------------------------------- one process
class _MeasuredPhase:
    """Ctrl-C and the progress ticker around the requests one process drives (the same for a shard of the
    dataset's schedule and for a custom source). Use inside the event loop, as a context manager:

    * Ctrl-C (SIGINT) sets ``interrupted``, releases the other workers (``abort_sync``) and cancels the
      requests :meth:`run` is awaiting (they come back as ``cancelled`` records); so does SIGTERM where the
      process takes it as a pause (:mod:`infx.preemption`);
    * ``on_tick(counters)`` runs every 0.25 s while the phase is open, and once more when it closes.
    """

    TICK_S = 0.25

    def __init__(self, counters: Counters, on_tick: Callable[[Counters], None] | None = None,
                 abort_sync: Callable[[], None] | None = None) -> None:
        self.counters = counters
        self.on_tick = on_tick
        self.abort_sync = abort_sync
        self.interrupted = False
        self._task: asyncio.Task[Any] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._old_term: Any = None

    def __enter__(self) -> _MeasuredPhase:
        self._loop = asyncio.get_running_loop()
        with contextlib.suppress(RuntimeError, ValueError, NotImplementedError):  # not the main thread
            self._loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        if preemption.armed():  # SIGTERM is a pause here: stop like Ctrl-C, keep the records
            self._old_term = signal.getsignal(signal.SIGTERM)
            with contextlib.suppress(RuntimeError, ValueError, NotImplementedError):
                self._loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)
        if self.on_tick is not None:
            self._ticker = asyncio.create_task(self._tick(self.on_tick))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ticker is not None and self.on_tick is not None:
            self._ticker.cancel()
            self.on_tick(self.counters)
        if self._loop is not None:
            with contextlib.suppress(RuntimeError, ValueError, NotImplementedError):
                self._loop.remove_signal_handler(signal.SIGINT)
            if self._old_term is not None:  # removing the loop's handler leaves SIG_DFL: put the pause back
                with contextlib.suppress(RuntimeError, ValueError, NotImplementedError):
                    self._loop.remove_signal_handler(signal.SIGTERM)
                    signal.signal(signal.SIGTERM, self._old_term)

    async def _tick(self, on_tick: Callable[[Counters], None]) -> None:
        while True:
            on_tick(self.counters)
            await asyncio.sleep(self.TICK_S)

    def _on_sigterm(self) -> None:
        preemption.note()
        self._on_sigint()

    def _on_sigint(self) -> None:
        self.interrupted = True
        if self.abort_sync is not None:
            with contextlib.suppress(Exception):
                self.abort_sync()
        if self._task is not None:
            self._task.cancel()

    async def run(self, requests: Coroutine[Any, Any, Any]) -> None:
        """Await ``requests`` (a :func:`drive`) as the task Ctrl-C cancels; a cancel marks the phase
        interrupted instead of raising."""
        self._task = asyncio.create_task(requests)
        try:
            await self._task
        except asyncio.CancelledError:
            self.interrupted = True


async def _run_shard(
    plan: ShardPlan,
    counters: Counters,
    *,
    sync: Callable[[], int] | None = None,
    abort_sync: Callable[[], None] | None = None,
    on_tick: Callable[[Counters], None] | None = None,
) -> ShardOutput:
    """Warmup, then (after ``sync``, which returns the common start time) the measured phase.
    ``abort_sync`` releases every process blocked in ``sync`` (raising ``BrokenBarrierError``
    there); it is called on Ctrl-C so that no worker waits for one that already stopped."""
    loop = asyncio.get_running_loop()
    records: list[RequestRecord] = []
    cap = plan.concurrency
    main_start = main_end = _now()
    cpu0 = time.process_time_ns()
    with _MeasuredPhase(counters, on_tick, abort_sync) as phase:
        async with make_session(connections=cap or 0) as session:
            if plan.warmup_requests or plan.warmup_s:
                await phase.run(drive(_source(plan, warmup=True, start_ns=_now()), session, plan.target,
                                      max_concurrency=cap, worker=plan.worker, records=records))
            if not phase.interrupted and sync is not None:
                try:
                    main_start = await loop.run_in_executor(None, sync)
                except threading.BrokenBarrierError:  # another worker was interrupted
                    phase.interrupted = True
            elif not phase.interrupted:
                main_start = _now()
            if not phase.interrupted:
                # the common start may lie ahead (workers): send no measured request before it,
                # so the throughput window holds every measured request
                await sleep_until(main_start)
            if not phase.interrupted:  # Ctrl-C may have come during that wait
                cpu0 = time.process_time_ns()
                await phase.run(drive(_source(plan, warmup=False, start_ns=main_start), session, plan.target,
                                      max_concurrency=cap, worker=plan.worker, counters=counters,
                                      records=records))
            main_end = _now()
            main_start = min(main_start, main_end)  # interrupted while waiting for the common start
        cpu = time.process_time_ns() - cpu0
    return ShardOutput(
        worker=plan.worker,
        records=records,
        main_start_ns=main_start,
        main_end_ns=main_end,
        cpu_ns=cpu,
        wall_ns=max(main_end - main_start, 1),
        interrupted=phase.interrupted,
        issued=counters.issued_measured,
    )


async def _run_source(source: RequestSource, target: Target, concurrency: int | None, counters: Counters,
                      on_tick: Callable[[Counters], None] | None) -> ShardOutput:
    """A custom request source (the agentic replay) driven in this process: no warmup, no workers."""
    records: list[RequestRecord] = []
    with _MeasuredPhase(counters, on_tick) as phase:
        start = _now()
        cpu0 = time.process_time_ns()
        async with make_session(connections=concurrency or 0) as session:
            await phase.run(drive(source, session, target, max_concurrency=concurrency, counters=counters,
                                  records=records))
        end = _now()
    return ShardOutput(0, records, start, end, time.process_time_ns() - cpu0, max(end - start, 1), phase.interrupted,
                       counters.issued_measured)


def _event_loop_run(coro: Any) -> Any:
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.run(coro)


# --------------------------------------------------------------------------- workers
def _worker_main(plan: ShardPlan, barrier: Any, start_value: Any, shared: Any, out_q: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the loop's handler takes over once it runs
    if preemption.armed():  # the parent takes SIGTERM and stops this worker with SIGINT
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        preemption.disarm()

    def sync() -> int:
        barrier.wait()
        return int(start_value.value)

    def on_tick(c: Counters) -> None:
        base = plan.worker * 4
        shared[base], shared[base + 1] = c.issued, c.completed
        shared[base + 2], shared[base + 3] = c.failed, c.output_tokens

    counters = Counters()
    try:
        out = _event_loop_run(_run_shard(plan, counters, sync=sync, abort_sync=barrier.abort, on_tick=on_tick))
        out_q.put(("ok", plan.worker, out))
    except BaseException as exc:
        with contextlib.suppress(Exception):
            barrier.abort()
        # its records are lost: say how many measured requests it had sent (accounting check)
        out_q.put(("error", plan.worker, (f"{type(exc).__name__}: {exc}", counters.issued_measured)))


def _run_workers(plans: list[ShardPlan], progress: Progress | None) -> list[ShardOutput]:
    ctx = mp.get_context("fork")
    n = len(plans)
    start_value = ctx.Value("q", 0, lock=False)

    def set_start() -> None:
        start_value.value = _now() + 20_000_000  # 20 ms from now: every worker is awake by then

    barrier = ctx.Barrier(n, action=set_start)
    shared = ctx.Array("q", 4 * n, lock=False)
    out_q = ctx.Queue()
    procs = [ctx.Process(target=_worker_main, args=(p, barrier, start_value, shared, out_q), daemon=True)
             for p in plans]
    interrupted = False

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal interrupted
        interrupted = True
        for p in procs:
            if p.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGINT)

    def on_sigterm(signum: int, frame: Any) -> None:
        preemption.note()
        on_sigint(signum, frame)

    old = signal.signal(signal.SIGINT, on_sigint)
    old_term = signal.signal(signal.SIGTERM, on_sigterm) if preemption.armed() else None
    outputs: list[ShardOutput] = []
    errors: list[str] = []
    lost: dict[int, int] = {}  # failed worker -> measured requests it had issued
    try:
        for p in procs:
            p.start()
        pending = n
        t0 = _now()
        import queue as _queue

        def show() -> None:
            if progress is not None:
                c = Counters(
                    issued=sum(shared[i * 4] for i in range(n)),
                    completed=sum(shared[i * 4 + 1] for i in range(n)),
                    failed=sum(shared[i * 4 + 2] for i in range(n)),
                    output_tokens=sum(shared[i * 4 + 3] for i in range(n)),
                )
                progress.update(c, (_now() - t0) / 1e9)

        while pending:
            try:
                kind, worker, payload = out_q.get(timeout=0.25)
            except _queue.Empty:
                show()
                if all(not p.is_alive() for p in procs) and out_q.empty():
                    errors.append("a worker exited without a result")
                    break
                continue
            pending -= 1
            if kind == "ok":
                outputs.append(payload)
            else:
                message, issued = payload
                errors.append(f"worker {worker}: {message}")
                lost[worker] = issued
        show()
        for p in procs:
            p.join(5)
    finally:
        signal.signal(signal.SIGINT, old)
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(1)
    if errors and not outputs:
        raise RuntimeError("; ".join(errors))
    if interrupted:
        for o in outputs:
            o.interrupted = True
    if lost:  # keep the failed workers' issued counts, so the accounting check sees the loss
        end = _now()
        for w, issued in lost.items():
            outputs.append(ShardOutput(w, [], end, end, 0, 1, interrupted, issued))
    return sorted(outputs, key=lambda o: o.worker)


# --------------------------------------------------------------------------- run_bench
def _server_version(base_url: str) -> str | None:
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/version", timeout=2) as resp:
            data = json.loads(resp.read().decode())
            return str(data.get("version")) if isinstance(data, dict) else None
    except Exception:
        return None


def _versions(base_url: str) -> dict[str, str]:
    import aiohttp

    from infx import __version__

    out = {"infx": __version__, "python": platform.python_version(), "aiohttp": aiohttp.__version__}
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):  # uvloop is a dependency on Linux
        out["uvloop"] = importlib.metadata.version("uvloop")
    server = _server_version(base_url)
    if server:
        out["server"] = server
    return out


def build_prompts(config: BenchConfig) -> tuple[list[Prompt], list[Prompt]]:
    """(main prompts, warmup prompts) for ``config``."""
    tok_path = config.tokenizer or (config.model if Path(config.model).is_dir() else None)
    if tok_path is None:
        from infx.diagnostics import InfxError

        raise InfxError("no tokenizer: give --tokenizer DIR (a local directory with tokenizer.json)")
    tok = load_tokenizer(tok_path)
    n_main = config.effective_num_prompts
    pool = n_main if n_main is not None else max(256, 10 * (config.concurrency or 10))
    n_warm = (config.warmup_requests if config.warmup_requests
              else (max(16, config.concurrency or 16) if config.warmup_s else 0))
    if config.dataset == "sharegpt":
        assert config.dataset_path is not None
        both = sharegpt_prompts(config.dataset_path, tok, pool + n_warm, output_len=config.output_len, seed=config.seed)
        return both[n_warm:] or both, both[:n_warm]
    out_len = config.output_len or 128
    main = random_prompts(tok, pool, config.input_len, out_len, range_ratio=config.range_ratio, seed=config.seed)
    warm = (
        random_prompts(tok, n_warm, config.input_len, out_len, range_ratio=config.range_ratio,
                       seed=config.seed + 1_000_003)
        if n_warm
        else []
    )
    return main, warm


def _plans(config: BenchConfig, main: list[Prompt], warm: list[Prompt], target: Target) -> list[ShardPlan]:
    n = config.workers
    plans = []
    for w in range(n):
        cap = None
        if config.concurrency is not None:
            cap = config.concurrency // n + (1 if w < config.concurrency % n else 0)
        plans.append(
            ShardPlan(
                worker=w,
                workers=n,
                target=target,
                endpoint=config.endpoint,
                ignore_eos=config.ignore_eos,
                temperature=config.temperature,
                main_prompts=main,
                warm_prompts=warm,
                cycle=config.duration_s is not None,
                num_main=config.effective_num_prompts,
                concurrency=cap,
                request_rate=config.request_rate,
                arrival=config.arrival,
                burstiness=config.burstiness,
                seed=config.seed,
                duration_s=config.duration_s,
                warmup_requests=config.warmup_requests,
                warmup_s=config.warmup_s,
            )
        )
    return plans


def execute(config: BenchConfig, *, source: RequestSource | None = None,
            on_trial: Callable[[int, BenchResult], None] | None = None) -> BenchRun:
    """Run the bench and return the result with its records (written to ``out_dir`` if set).

    ``source``: drive a custom request source (e.g. the agentic replay) instead of the dataset;
    it runs in this process (``workers`` must be 1), with ``concurrency`` as the cap.

    ``config.trials`` > 1 (or ``max_trials``): the measured phase runs once per trial, the warmup
    only before the first; every trial's records (``trial`` = 0..N-1) and metrics are kept, and
    ``result.stats`` has each headline figure's mean and Student-t interval across trials. One
    trial: the intervals are a within-run bootstrap. ``on_trial(k, result)`` follows each trial."""
    from infx.metrics.trialstats import headline_values, within_run

    if source is not None or (config.trials == 1 and not config.max_trials):
        run = _execute_once(config, source=source)
        m = run.result.metrics
        if source is None and m.completed:
            run.result.stats = within_run(run.records, headline_values(m), _window_ns(run.result), seed=config.seed)
        if config.out_dir:
            write_outputs(config.out_dir, run.result, run.records)
        return run
    return _execute_trials(config, on_trial)


def _execute_trials(config: BenchConfig, on_trial: Callable[[int, BenchResult], None] | None) -> BenchRun:
    from infx.metrics.result import Trial
    from infx.metrics.trialstats import headline_values, sample_counts, trial_estimates

    once = config.model_copy(update={"out_dir": None})
    later = once.model_copy(update={"warmup_requests": 0, "warmup_s": 0.0})
    limit = config.max_trials or config.trials
    runs: list[BenchRun] = []
    stop_reason = None
    for k in range(limit):
        run = _execute_once(once if k == 0 else later)
        for r in run.records:
            r.trial = k
        runs.append(run)
        if on_trial is not None:
            on_trial(k, run.result)
        if not run.result.complete:
            stop_reason = f"interrupted in trial {k + 1}"
            break
        if config.max_trials and k + 1 >= max(config.trials, 2):
            est = trial_estimates([headline_values(x.result.metrics) for x in runs],
                                  [sample_counts(x.result.metrics) for x in runs]).get("output_tok_per_s")
            if est is not None and est.half_width_rel <= config.ci_target:
                stop_reason = (f"converged after {k + 1} trials: 95% CI half-width of output tok/s "
                               f"{est.half_width_rel:.1%} <= {config.ci_target:.0%} of the mean")
                break
    else:
        if config.max_trials:
            stop_reason = f"reached --max-trials {limit} before the CI target {config.ci_target:.0%}"
    records = [r for x in runs for r in x.records]
    first, last = runs[0].result, runs[-1].result
    windows = [_window_ns(x.result) for x in runs]
    pooled = compute_metrics(records, goodput=config.goodput or None, gpus=config.gpus, nodes=config.nodes,
                             duration_s=sum(x.result.metrics.throughput.duration_s for x in runs))
    trials = [Trial(trial=k, started_at=x.result.started_at, ended_at=x.result.ended_at, warmup=(k == 0),
                    window_ns=windows[k], metrics=x.result.metrics, checks=x.result.checks)
              for k, x in enumerate(runs)]
    stats = trial_estimates([headline_values(x.result.metrics) for x in runs],
                            [sample_counts(x.result.metrics) for x in runs])
    result = first.model_copy(update={
        "complete": all(x.result.complete for x in runs),
        "ended_at": last.ended_at,
        "metrics": pooled,
        "checks": _worst_checks(runs),
        "extra": first.extra.model_copy(update={"clock": _clock(first).model_copy(
            update={"window_ns": (windows[0][0], windows[-1][1])})}),
        "trials": trials,
        "stats": stats,
        "stop_reason": stop_reason,
    })
    if config.out_dir:
        write_outputs(config.out_dir, result, records)
    return BenchRun(result=result, records=records)


def _clock(result: BenchResult) -> Clock:
    assert result.extra.clock is not None  # the load generator writes one with every result
    return result.extra.clock


def _window_ns(result: BenchResult) -> tuple[int, int]:
    window = _clock(result).window_ns
    assert window is not None  # ... and its window (start of the measured phase to the last end)
    return window


def _steady(records: list[RequestRecord], config: BenchConfig) -> Any:
    """The point's stationary window; when it trims a ramp, the figures over the window too."""
    from infx.metrics.steady import steady_state

    st = steady_state(records)
    if st is None or (st.ramp_up_requests == 0 and st.ramp_down_requests == 0):
        return st
    ok = sorted((r for r in records if not r.warmup and r.ok), key=lambda r: r.send_ns)
    keep = {id(r) for r in ok[st.ramp_up_requests: len(ok) - st.ramp_down_requests]}
    inside = [r for r in records if r.warmup or id(r) in keep
              or (not r.ok and not r.warmup and st.start_ns <= r.send_ns <= st.end_ns)]
    st.metrics = compute_metrics(inside, window_ns=(st.start_ns, st.end_ns), goodput=config.goodput or None,
                                 gpus=config.gpus, nodes=config.nodes)
    return st


def _worst_checks(runs: list[BenchRun]) -> list[Any]:
    """Each check at its worst status over the trials (the detail says which trial)."""
    rank = {"ok": 0, "warn": 1, "fail": 2}
    worst: dict[str, Any] = {}
    for k, x in enumerate(runs):
        for c in x.result.checks:
            have = worst.get(c.name)
            if have is None or rank[c.status] > rank[have.status]:
                detail = c.detail if len(runs) == 1 or c.status == "ok" else f"trial {k + 1}: {c.detail}"
                worst[c.name] = c.model_copy(update={"detail": detail})
    return list(worst.values())


def _execute_once(config: BenchConfig, *, source: RequestSource | None = None) -> BenchRun:
    target = Target(
        base_url=config.base_url,
        model=config.model,
        stall_timeout_s=config.stall_timeout_s,
        stop_on_stall=config.stop_on_stall,
        total_timeout_s=config.total_timeout_s,
        continuous_usage=config.continuous_usage,
        token_ids=config.token_ids,
    )
    versions = _versions(config.base_url)
    anchor_mono, anchor_unix = _now(), time.time_ns()
    started_at = time.time()

    n_main = config.effective_num_prompts
    progress: Progress | None = None
    if config.progress:
        progress = Progress(config.duration_s or 0.0, "s") if n_main is None else Progress(n_main, "req")
    try:
        counters = Counters()
        t0 = _now()
        tick = (lambda c: progress.update(c, (_now() - t0) / 1e9)) if progress is not None else None
        if source is not None:
            if config.workers != 1:
                raise ValueError("a custom request source runs in one process (workers=1)")
            outputs = [_event_loop_run(_run_source(source, target, config.concurrency, counters, tick))]
        else:
            main, warm = build_prompts(config)
            plans = _plans(config, main, warm, target)
            if config.workers == 1:
                outputs = [_event_loop_run(_run_shard(plans[0], counters, on_tick=tick))]
            else:
                outputs = _run_workers(plans, progress)
    finally:
        if progress is not None:
            progress.close()

    records = [r for o in outputs for r in o.records]
    records.sort(key=lambda r: (r.warmup is False, r.send_ns))
    measured = [r for r in records if not r.warmup]
    start = min(o.main_start_ns for o in outputs)
    end = max([r.end_ns for r in measured] or [start])
    metrics = compute_metrics(records, window_ns=(start, end), goodput=config.goodput or None, gpus=config.gpus,
                              nodes=config.nodes)
    cpu_fraction = max(o.cpu_ns / o.wall_ns for o in outputs)
    checks = run_checks(
        records,
        metrics,
        open_loop=config.open_loop,
        capped=config.concurrency is not None,
        client_cpu=cpu_fraction,
        issued=sum(o.issued for o in outputs),
    )
    interrupted = any(o.interrupted for o in outputs)
    steady = _steady(records, config)
    if steady is not None:
        from infx.metrics.result import Check

        checks.append(Check(name="steady_state", status="warn" if steady.trend else "ok", detail=steady.text))
    chunks = sum(len(r.chunk_ns) for r in measured)
    result = BenchResult(
        complete=not interrupted,
        started_at=started_at,
        ended_at=time.time(),
        config=BenchSettings.model_validate(config.model_dump(exclude={"point", "stop_on_stall"})),
        metrics=metrics,
        checks=checks,
        versions=versions,
        point=config.point,
        steady=steady,
        extra=ResultExtra(
            clock=Clock(monotonic_ns=anchor_mono, unix_ns=anchor_unix, window_ns=(start, end)),
            client=ClientCost(
                workers=len(outputs),
                cpu_s=sum(o.cpu_ns for o in outputs) / 1e9,
                cpu_fraction_max=cpu_fraction,
                chunks=chunks,
                cpu_us_per_chunk=(sum(o.cpu_ns for o in outputs) / 1e3 / chunks) if chunks else None,
                cpu_us_per_request=(sum(o.cpu_ns for o in outputs) / 1e3 / len(measured)) if measured else None,
            ),
        ),
    )
    return BenchRun(result=result, records=records)


def write_outputs(out_dir: str | Path, result: BenchResult, records: list[RequestRecord]) -> None:
    out = Path(out_dir)
    write_records(out / RECORDS_FILE, records)
    atomic.write_json(out / RESULT_FILE, result.model_dump(mode="json"))


def run_bench(config: BenchConfig, *, source: RequestSource | None = None) -> BenchResult:
    """Run one bench; writes ``result.json`` and ``records.jsonl.gz`` when ``config.out_dir`` is set."""
    return execute(config, source=source).result

