"""The real executors on this host: engines stage's :class:`EngineProcess` for launches, the load
generator's ``run_bench`` for measurements, the evals stage's lm-eval run for accuracy evals."""

from __future__ import annotations

import contextlib
import functools
import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from infx.engines.disagg.model import Deployment
from infx.engines.launch import Launch
from infx.engines.logfile import log_excerpt, log_size
from infx.evals.protocol import EvalStatus
from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.results.layout import StartupSummary
from infx.sweep.grouping import LaunchGroup
from infx.sweep.interfaces import LaunchFailed, LiveStats, ProgressFn, RunningEngine
from infx.sweep.profile import LoadProfile
from infx.sweep.rendering import RenderAtPort

if TYPE_CHECKING:
    from infx.catalog.runners import RunnerConfig
    from infx.engine_metrics import EngineStateSample
    from infx.engines.server import EngineFailure, EngineProcess
    from infx.loadgen.search import SearchResult
    from infx.telemetry.session import Telemetry, TelemetryOptions

Scalar = float | int | str | bool | None
# (group's first point, launch, start-up facts) -> flat scalars merged into ``StartupSummary.other``
Calibrate = Callable[[Point, Launch, StartupSummary], dict[str, Scalar]]


def kv_calibrator(runner_config: str | None) -> Calibrate:
    """Predicted vs logged KV-cache capacity for every launch (preflight stage's
    ``compare_kv_capacity``), as ``kv_tokens_predicted``/``kv_tokens_logged``/``kv_prediction_ratio``/
    ``kv_prediction``. Never fails a launch: a problem is recorded as ``kv_prediction: "error: ..."``."""
    runners: list[RunnerConfig | None] = []  # loaded once, lazily

    def calibrate(point: Point, launch: Launch, facts: StartupSummary) -> dict[str, Scalar]:
        try:
            from infx.preflight.calibration import compare_kv_capacity

            if not runners:
                runners.append(_load_runners(runner_config))
            return compare_kv_capacity(point, launch, facts.kv_cache_tokens, runners=runners[0]).summary()
        except Exception as exc:  # calibration is a record, never a reason to lose the launch
            return {"kv_tokens_logged": facts.kv_cache_tokens, "kv_prediction": f"error: {type(exc).__name__}: {exc}"}

    return calibrate


def _load_runners(runner_config: str | None) -> RunnerConfig | None:
    if not runner_config or not Path(runner_config).is_file():
        return None
    from infx.catalog import load_runners

    return load_runners(runner_config)


def _tail_lines(text: str, lines: int) -> str:
    return "".join(text.splitlines(True)[-lines:])


def engine_version(base_url: str, timeout: float = 3.0) -> str | None:
    """The server's own version (``GET /version``, vLLM and SGLang answer it)."""
    try:
        with urllib.request.urlopen(base_url + "/version", timeout=timeout) as resp:
            data = json.loads(resp.read().decode() or "{}")
    except (OSError, ValueError):
        return None
    if isinstance(data, dict):
        v = data.get("version") or data.get("server_version")
        return str(v) if v else None
    return None


class LocalEngine:
    """:class:`infx.sweep.interfaces.RunningEngine` over the engines stage's ``RetryingEngine``: the port is
    picked right before the start, and a launch that loses it is relaunched on a new one (each retry kept
    in the start-up facts, ``status.json``)."""

    def __init__(self, render: Callable[[int], Launch], log_path: Path, ready_timeout_cap: float | None = None,
                 point: Point | None = None, calibrate: Calibrate | None = None):
        from infx.engines.server import RetryingEngine

        self.ready_timeout_cap = ready_timeout_cap
        self.point = point
        self.calibrate = calibrate
        self.log_path = log_path
        self.engine = RetryingEngine(render, log_path)
        self.t0 = time.monotonic()

    @property
    def proc(self) -> EngineProcess:  # the current launch's
        return self.engine.proc

    @property
    def launch(self) -> Launch:
        assert self.engine.launch is not None, "start() first"
        return self.engine.launch

    @property
    def base_url(self) -> str:
        return str(self.launch.base_url)

    @property
    def served_model_name(self) -> str:
        return str(self.launch.served_model_name)

    @property
    def model_path(self) -> str:
        return str(self.launch.model_path)

    def _failed(self, exc: EngineFailure) -> LaunchFailed:
        return LaunchFailed(exc.kind.value, exc.message, exc.log_tail, port_retries=self.engine.retries)

    def start(self) -> None:
        from infx.engines.server import EngineFailure

        try:
            self.engine.start()
        except EngineFailure as exc:
            raise self._failed(exc) from None

    def wait_ready(self, timeout: float) -> StartupSummary:
        from infx.engines.server import EngineFailure

        if self.ready_timeout_cap is not None:
            timeout = min(timeout, self.ready_timeout_cap)
        try:
            facts = self.engine.wait_ready(timeout)
        except EngineFailure as exc:
            raise self._failed(exc) from None
        secs = time.monotonic() - self.t0
        summary = StartupSummary.from_facts(facts) or StartupSummary()
        summary = summary.model_copy(update={"startup_s": secs, "engine_version": engine_version(self.base_url),
                                             "port_retries": list(self.engine.retries)})
        if self.calibrate is not None and self.point is not None:
            summary.other.update(self.calibrate(self.point, self.launch, summary))
        return summary

    def failure(self) -> LaunchFailed | None:
        if self.proc.alive():
            return None
        from infx.engines.logparse import classify_failure

        rc = self.proc.proc.poll() if self.proc.proc else None
        text = self.proc.log_text()
        found = classify_failure(self.launch.engine, text)
        kind = found.kind.value if found else ("killed" if rc is not None and rc < 0 else "crashed")
        detail = found.message if found else f"engine exited with code {rc}"
        return LaunchFailed(kind, detail, _tail_lines(text, 40))

    def log_size(self) -> int:
        return log_size(self.log_path)

    def log_excerpt(self, start: int, end: int | None = None) -> str:
        return log_excerpt(self.log_path, start, end)

    def log_tail(self, lines: int = 40) -> str:
        return _tail_lines(self.proc.log_text(), lines)

    def stop(self) -> None:
        self.proc.stop()


class LocalStarter:
    """Renders the group's launch and starts it as a local process on a port picked right before the start."""

    def __init__(self, render_at_port: RenderAtPort, ready_timeout_for: Callable[[LaunchGroup], float | None]
                 | None = None, calibrate: Calibrate | None = None):
        self.render_at_port = render_at_port
        self.ready_timeout_for = ready_timeout_for  # a per-group cap on the readiness wait
        self.calibrate = calibrate  # e.g. kv_calibrator(runner_config): stored in the start-up facts

    def _launch_at(self, point: Point, port: int) -> Launch:
        launch = self.render_at_port(point, port)
        assert isinstance(launch, Launch), "a single engine's point"
        return launch

    def start(self, group: LaunchGroup, log_path: Path) -> RunningEngine:
        from infx.engines.ports import kernel_port

        if group.points[0].multinode:  # several roles: infx.sweep.deployment
            from infx.sweep.deployment import start_deployment

            cap = self.ready_timeout_for(group) if self.ready_timeout_for else None
            return start_deployment(self.render_at_port, group, log_path, cap)
        point = group.points[0]
        launch = self.render_at_port(point, kernel_port())  # to check the plan; the start picks its own port
        if not isinstance(launch, Launch):
            raise LaunchFailed("launch-error", f"point {point.point_id} renders to a deployment, not one engine")
        if launch.fingerprint != group.fingerprint:
            raise LaunchFailed("fingerprint-drift", "the launch rendered now differs from the planned one "
                               "(recipes changed since the run was planned?)")
        if launch.model_builder == "tiny-model":
            from infx.engines.tiny_model import ensure_tiny_model

            ensure_tiny_model(launch.model_path)
        cap = self.ready_timeout_for(group) if self.ready_timeout_for else None
        engine = LocalEngine(functools.partial(self._launch_at, point), log_path, cap, point=point,
                             calibrate=self.calibrate)
        engine.start()
        return engine


class LocalMeasurer:
    """Warmup then measurement through the load generator's ``run_bench``; records go in the point dir.
    While a point runs, the engine's Prometheus counters give the live req/s and tok/s, and the telemetry
    stage samples power, CPU energy and engine state (raw samples beside the records, figures in
    ``result.json`` ``extra.telemetry``). The same code runs inside Slurm jobs (``infx run-group``)."""

    def __init__(self, load: LoadProfile | None = None, poll_s: float = 1.0, telemetry: TelemetryOptions | None = None):
        from infx.telemetry.session import TelemetryOptions

        self.load: LoadProfile = load or LoadProfile()
        self.poll_s = poll_s
        self.telemetry: TelemetryOptions = telemetry or TelemetryOptions()
        self._warned: set[str] = set()

    def search(self, point: Point, engine: RunningEngine) -> SearchResult | None:
        """``--search max-concurrency``: the largest concurrency meeting the point's SLO tier on this
        running engine (doubling from the point's concurrency, then bisection); None without a tier."""
        from infx.loadgen.search import bench_probe, search_max_concurrency
        from infx.sweep.point_load import bench_config

        tier = self.load.slo_by_point.get(point.point_id)
        if not tier:
            return None
        base = bench_config(point, engine, self.load).model_copy(update={"trials": 1, "max_trials": None})
        start = base.concurrency or 1
        probe = bench_probe(base, tier, prompts_per_conc=self.load.prompts_per_conc, min_prompts=self.load.min_prompts)
        return search_max_concurrency(probe, tier=self.load.slo_tier or "tier", slo=tier, start=start,
                                      limit=max(self.load.search_max, start))

    def measure(self, point: Point, engine: RunningEngine, point_dir: Path, progress: ProgressFn | None = None
                ) -> BenchResult:
        from infx.sweep.point_load import run_point_load

        url = engine.launch.metrics_url
        tel = self._telemetry(point, engine, url, point_dir)
        poller = None
        if url and progress:
            from infx.engine_metrics import scrape_once

            sample = tel.engine.latest if (tel and tel.engine) else functools.partial(scrape_once, url, 2.0)
            poller = MetricsPoller(sample, progress, self.poll_s)
        with contextlib.ExitStack() as running:  # stopped however the point ends (SIGTERM may come mid-start)
            if tel:
                running.callback(tel.stop)
                tel.start()
            if poller:
                poller.start()
                running.callback(poller.stop)
            result = run_point_load(point, engine, point_dir, self.load, progress)
        if tel:
            from infx.telemetry.session import attach

            summary = tel.finalize(result, theoretical_prefix_hit_rate=theoretical_reuse(result))
            self._warn(summary.warnings)
            result = attach(result, summary)
        from infx.engines.synthetic import label_of_launch

        spec = label_of_launch(point, engine.launch)
        if spec is not None:
            result = result.model_copy(update={"extra": result.extra.model_copy(update={"spec_decode": spec})})
        return result

    def _warn(self, warnings: list[str]) -> None:
        """A missing tool is a warning, printed once per run (it is in every point's telemetry too)."""
        from infx.diagnostics import warn

        for w in warnings:
            if w not in self._warned:
                self._warned.add(w)
                warn(f"telemetry: {w}")

    def _telemetry(self, point: Point, engine: RunningEngine, metrics_url: str | None,
                   point_dir: Path) -> Telemetry | None:
        if not self.telemetry.enabled:
            return None
        from infx.telemetry.session import Telemetry, visible_devices

        gpus = point.gpus_per_server or None  # TP x PP x PCP; every role's GPUs for a deployment
        return Telemetry(point_dir, self.telemetry, metrics_url=metrics_url, expected_gpus=gpus,
                         devices=visible_devices(engine.launch.env, gpus),
                         node_devices=deployment_node_devices(engine),
                         metrics_role="decode" if isinstance(engine.launch, Deployment) else "server")


class LocalEvaluator:
    """The sweep's evaluator: the evals stage's lm-eval run against the running engine, with the point's
    protocol (:func:`infx.evals.point.protocol_for`), graded against the card's threshold."""

    def __init__(self, limit: int | None = None, cards_dir: str | None = None, timeout_s: float | None = None,
                 max_retries: int | None = None):
        self.limit = limit
        self.cards_dir = cards_dir
        self.timeout_s = timeout_s
        self.max_retries = max_retries  # None: the protocol's (InferenceX's 5, with lm-eval's 1-10 s backoff)

    def evaluate(self, point: Point, engine: RunningEngine, point_dir: Path,
                 fingerprint: str | None = None) -> EvalStatus:
        from infx.diagnostics import InfxError
        from infx.evals.point import meta_env, protocol_for
        from infx.evals.runner import EvalFailed, run_eval
        from infx.evals.thresholds import judge, threshold_for
        from infx.sweep.point_load import max_model_len

        protocol = protocol_for(point, max_model_len(engine), self.limit, self.cards_dir)
        if self.max_retries is not None:
            protocol = protocol.model_copy(update={"max_retries": self.max_retries})
        started = time.time()
        try:
            result = run_eval(protocol, engine.base_url, engine.served_model_name, point_dir,
                              meta=meta_env(point), timeout_s=self.timeout_s)
        except EvalFailed as exc:
            return EvalStatus(state="failed", reason=exc.message, failure_class=f"eval-{exc.kind}",
                              protocol=protocol, launch_fingerprint=fingerprint, log_tail=exc.log_tail[-8000:],
                              started_at=started, ended_at=time.time())
        except InfxError as exc:
            return EvalStatus(state="failed", reason=str(exc), failure_class="eval-error", protocol=protocol,
                              launch_fingerprint=fingerprint, started_at=started, ended_at=time.time())
        mark, source = threshold_for(protocol.task, point.model_prefix, self.cards_dir)
        verdict = judge(result, mark, source)
        scores = ", ".join(f"{f.name} {f.score:.4f}" for f in result.filters)
        return EvalStatus(state="pass" if verdict.passed else "accuracy-fail",
                          reason="" if verdict.passed else f"{scores} below {mark:g} ({source})",
                          verdict=verdict, protocol=protocol, launch_fingerprint=fingerprint,
                          started_at=started, ended_at=time.time())


def deployment_node_devices(engine: RunningEngine) -> list[list[str] | None] | None:
    """A multi-role deployment with GPUs, started inside its Slurm job: the devices its roles use on each
    node of the job, from the placement its roles were started with (one power sampler task per node);
    None otherwise (the local sampler on this node)."""
    from infx.sweep.deployment import LocalDeployment

    if not isinstance(engine, LocalDeployment):
        return None
    proc = engine.proc
    placed = proc.placed
    if not placed or not proc.deployment.gpus():
        return None
    from infx.engines.disagg.placement import gpus_on_nodes
    from infx.engines.disagg.process import job_layout
    from infx.telemetry.nodes import node_devices

    gpn, _ = job_layout()
    if not gpn:
        return None
    return [*node_devices(gpus_on_nodes(proc.deployment, placed, gpn))]


def theoretical_reuse(result: BenchResult) -> float | None:
    """Agentic points: the replayed trace's ideal prefix-cache hit rate (infinite cache), to set beside
    the engine's measured rate."""
    trace = result.config.trace_file
    if not trace or not Path(trace).is_file():
        return None
    st = Path(trace).stat()
    return _trace_reuse(str(Path(trace).resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _trace_reuse(path: str, size: int, mtime_ns: int) -> float | None:
    """Every agentic point of a sweep replays the same trace file: parse it once (keyed by size and mtime, so
    a rewritten file is read again)."""
    from infx.agentic.stats import trace_stats
    from infx.agentic.trace import load_traces

    return trace_stats(load_traces(path)).theoretical_cache_hit_rate


class MetricsPoller:
    """A daemon thread turning the engine's counters into live rates for the progress display. ``sample``
    gives the newest engine-state sample: the telemetry scraper's latest line while telemetry samples the
    engine (``/metrics`` is read once a second, not twice), else one scrape of its own."""

    def __init__(self, sample: Callable[[], EngineStateSample | None], progress: ProgressFn, every: float = 1.0):
        import threading

        self.sample, self.progress, self.every = sample, progress, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="infx-metrics-poller", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        prev = self.sample()
        while not self._stop.wait(self.every):
            cur = self.sample()
            if cur is None or (prev is not None and cur.t <= prev.t):  # no new sample since the last tick
                continue
            if prev is not None:
                self.progress(live_rates(prev, cur))
            prev = cur


def live_rates(prev: EngineStateSample, cur: EngineStateSample) -> LiveStats:
    """Finished requests and generated tokens per second between two samples (a counter reset reads 0)."""
    dt = cur.t - prev.t

    def rate(a: float | None, b: float | None) -> float:
        return max(0.0, b - a) / dt if (a is not None and b is not None and dt > 0) else 0.0

    return LiveStats(req_per_s=rate(prev.requests_finished, cur.requests_finished),
                     tok_per_s=rate(prev.generation_tokens, cur.generation_tokens))
