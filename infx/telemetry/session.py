"""One point's telemetry: start the samplers before the measurement, stop them after, then integrate over
the load generator's measured window and summarise into ``result.json`` ``extra.telemetry``.

The window is the result's own (:meth:`~infx.metrics.result.BenchResult.window`: its clock anchor, a
monotonic and a unix reading taken together, maps the measured window to the wall clock), so samples
(stamped with the wall clock) and the window share one clock. Sampling never touches the load generator's
event loop: the GPU tools are subprocesses, RAPL and ``/metrics`` are daemon threads that sleep between one
small read a second.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from infx.atomic import write_text
from infx.metrics.sections import PowerFigures, ResultExtra, RoleAcceptance, TelemetrySummary
from infx.telemetry import energy, rapl
from infx.telemetry.acceptance import acceptance
from infx.telemetry.engine_state import ENGINE_STATE_FILE, EngineStateScraper, read_samples, summarise
from infx.telemetry.gpu import AmdSmiSampler, NvidiaSmiSampler, detect_tool
from infx.telemetry.models import WindowCheck
from infx.telemetry.nodes import NodeSampler
from infx.telemetry.reasons import Reason

if TYPE_CHECKING:
    from infx.metrics.result import BenchResult, Trial

GPU_FILE = "gpu_metrics.csv"
CPU_FILE = "cpu_energy.csv"
VALIDATION_FILE = "power_validation.json"
SAMPLE_FILES = (GPU_FILE, CPU_FILE, ENGINE_STATE_FILE, VALIDATION_FILE)


class TelemetryOptions(BaseModel):
    """What ``infx run`` samples next to each point (``--telemetry/--no-telemetry``, ``--gpu-telemetry``)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    gpu: Literal["auto", "nvidia", "amd", "none"] = "auto"
    cpu_energy: bool = True
    engine_state: bool = True
    interval_s: float = 1.0
    powercap_root: str = rapl.DEFAULT_ROOT
    amd_settle_s: float | None = None  # None: interval + 2 s (amd-smi stamps whole seconds)


def window_of(result: BenchResult, trial: Trial | None = None) -> WindowCheck:
    """The measured window (of one trial, when given) in unix seconds, checked as InferenceX checks the
    bench JSON against the reported duration and counts."""
    w = result.window(trial)
    m = result.metrics if trial is None else trial.metrics
    return energy.check_window(w.start, w.end, m.throughput.duration_s, m.completed, m.total_input_tokens,
                               m.total_output_tokens)


def visible_devices(env: dict[str, str] | None, count: int | None) -> list[str] | None:
    """The device ids a launch uses: its ``*_VISIBLE_DEVICES``, else the first ``count``."""
    for key in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        value = (env or {}).get(key) or os.environ.get(key)
        if value:
            return [d.strip() for d in value.split(",") if d.strip()]
    return [str(i) for i in range(count)] if count else None


class Telemetry:
    """Context manager around one measurement; ``finalize(result)`` returns the summary."""

    def __init__(self, point_dir: Path, options: TelemetryOptions | None = None, *, metrics_url: str | None = None,
                 expected_gpus: int | None = None, devices: list[str] | None = None,
                 node_devices: list[list[str] | None] | None = None, metrics_role: str = "server"):
        """``node_devices``: a multi-node deployment inside its Slurm job; one sampler task per node
        (:mod:`infx.telemetry.nodes`) keeping these device ids of each node."""
        self.dir = Path(point_dir)
        self.options = options or TelemetryOptions()
        self.metrics_role = metrics_role  # whose /metrics ``metrics_url`` is (a deployment's: its decode role's)
        self.expected_gpus = expected_gpus
        self.warnings: list[str] = []
        self.gpu_tool, warning = detect_tool(self.options.gpu)
        if warning:
            self.warnings.append(warning)
        interval = self.options.interval_s
        self.gpu: NvidiaSmiSampler | AmdSmiSampler | NodeSampler | None = None
        if node_devices and self.gpu_tool in ("nvidia-smi", "amd-smi"):
            self.gpu = NodeSampler(self.gpu_tool, self.dir / GPU_FILE, node_devices, interval,
                                   self.options.amd_settle_s)
        elif self.gpu_tool == "nvidia-smi":
            self.gpu = NvidiaSmiSampler(self.dir / GPU_FILE, devices, interval)
        elif self.gpu_tool == "amd-smi":
            self.gpu = AmdSmiSampler(self.dir / GPU_FILE, devices, interval, self.options.amd_settle_s)
        self.cpu = rapl.RaplSampler(self.dir / CPU_FILE, self.options.powercap_root, interval) \
            if self.options.cpu_energy else None
        if self.cpu is not None and not self.cpu.zones:
            self.warnings.append(f"no RAPL package zones under {self.options.powercap_root}: no CPU energy")
        self.engine = EngineStateScraper(metrics_url, self.dir / ENGINE_STATE_FILE, interval) \
            if (metrics_url and self.options.engine_state) else None

    def __enter__(self) -> Telemetry:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        for name in SAMPLE_FILES:  # a re-measured point never mixes in an earlier attempt's samples
            (self.dir / name).unlink(missing_ok=True)
        for s in (self.gpu, self.cpu, self.engine):
            if s is not None:
                s.start()

    def stop(self) -> None:
        for s in (self.engine, self.cpu, self.gpu):
            if s is not None:
                s.stop()

    def finalize(self, result: BenchResult, *, theoretical_prefix_hit_rate: float | None = None) -> TelemetrySummary:
        try:
            return self._finalize(result, theoretical_prefix_hit_rate)
        except Exception as exc:  # telemetry never costs a measured point its throughput
            return TelemetrySummary(gpu_tool=self.gpu_tool, expected_gpu_count=self.expected_gpus,
                                    power={"power_metric_schema_version": 2, "power_valid": 0},
                                    power_reasons=[Reason.AGGREGATION_INTERNAL_ERROR],
                                    warnings=[*self.warnings, f"telemetry: {type(exc).__name__}: {exc}"])

    def _finalize(self, result: BenchResult, theoretical: float | None) -> TelemetrySummary:
        check = window_of(result)
        validation = energy.validate_power(self.dir / GPU_FILE, check, self.expected_gpus)
        if self.gpu is not None:
            write_text(self.dir / VALIDATION_FILE, validation.model_dump_json(indent=2))
        cpu = None
        if self.cpu is not None:
            cpu = rapl.cpu_energy(self.dir / CPU_FILE, check.window, unreadable=self.cpu.error)
        engine = None
        accepted: list[RoleAcceptance] = []
        if self.engine is not None:
            state_file = self.dir / ENGINE_STATE_FILE
            samples = read_samples(state_file) if state_file.is_file() else []
            engine = summarise(samples, check.window)
            w = check.window
            trial_windows = [(tw.start_time_unix, tw.end_time_unix) for tr in result.trials
                             if (tw := window_of(result, tr).window) is not None]
            accepted.append(acceptance(samples, None if w is None else (w.start_time_unix, w.end_time_unix),
                                       trial_windows if len(trial_windows) == len(result.trials) else [],
                                       role=self.metrics_role))
            if self.engine.errors:
                self.warnings.append(f"{self.engine.errors} /metrics scrapes failed")
        files = [n for n in SAMPLE_FILES if (self.dir / n).is_file()]
        per_trial: list[float | None] = []
        if len(result.trials) >= 2 and (self.dir / GPU_FILE).is_file():
            for tr in result.trials:  # each trial's energy per output token over its own window
                v = energy.validate_power(self.dir / GPU_FILE, window_of(result, tr), self.expected_gpus)
                j = v.raw_metrics.get("joules_per_output_token") if v.power_valid else None
                per_trial.append(float(j) if j is not None else None)
        return TelemetrySummary(trial_joules_per_output_token=per_trial, gpu_tool=self.gpu_tool,
                                expected_gpu_count=self.expected_gpus, power=validation.result_keys(),
                                power_reasons=validation.reasons, cpu=cpu,
                                gpu_energy_j=validation.raw_metrics.get("total_gpu_energy_j"),
                                observed_gpu_count=validation.observed_gpu_count,
                                engine=engine, theoretical_prefix_hit_rate=theoretical, acceptance=accepted,
                                warnings=self.warnings,
                                files=files)


def attach(result: BenchResult, summary: TelemetrySummary) -> BenchResult:
    """The result with ``extra.telemetry`` (everything) and ``extra.power`` (the energy figures the
    InferenceX export reads: validity, whole-deployment joules over the window, observed devices)."""
    power = PowerFigures(power_valid=bool(summary.power.get("power_valid")), total_gpu_energy_j=summary.gpu_energy_j,
                         gpu_count=summary.observed_gpu_count or None)
    extra: ResultExtra = result.extra.model_copy(update={"telemetry": summary, "power": power})
    update: dict[str, Any] = {"extra": extra}
    per_trial = [j for j in summary.trial_joules_per_output_token if j is not None]
    if len(per_trial) >= 2 and len(per_trial) == len(summary.trial_joules_per_output_token):
        from infx.metrics.uncertainty import across_trials

        est = across_trials(per_trial)  # every trial's power valid: mean and Student-t interval
        if est is not None:
            update["stats"] = {**result.stats, "joules_per_output_token": est}
            update["ci"] = None  # packed from the new stats when written (infx.metrics.cipack)
    return result.model_copy(update=update)
