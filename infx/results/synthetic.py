"""Synthetic results directories, for tests, the analysis benchmark and trying the report without
a GPU. Nothing here is a measurement: the numbers come from a closed-form saturation model
(per-server throughput ``T(c) = Tmax * c / (c + c_half)``, interactivity ``T(c) / c``) with a
little seeded noise, shaped like the seed scenario (TP=2 vs TP=4 of one agentic MI355X entry).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

from infx import __version__
from infx.matrix.point import Point
from infx.metrics.result import BenchResult, Check, Metrics, Stat, Throughput
from infx.metrics.run_config import OtherRunConfig
from infx.metrics.uncertainty import Estimate
from infx.results.layout import (
    HostFacts,
    ImageRef,
    PointStatus,
    PullRequest,
    ResultsDir,
    RunManifest,
    StartupSummary,
    write_point_outcome,
)

IMAGE = "vllm/vllm-openai-rocm:nightly-rocm100-3df4ae153eb385e27b52f26c81f8edb9e20b9984"
DIGEST = "sha256:eccb72b74b8c04ce7406d9212e200b129f58e24be642795a857f755a94fdb3a1"
RUNNER = "cluster:mi355x-amds"
CONCS = [1, 2, 4, 8, 16, 32, 64, 128]


@dataclass(frozen=True)
class Arm:
    """One synthetic topology arm: saturation throughput per server and half-saturation conc."""

    tp: int
    t_max: float  # output tok/s per server at saturation
    c_half: float
    concs: tuple[int, ...] = tuple(CONCS)


SEED_ARMS = (Arm(tp=2, t_max=2000.0, c_half=40.0), Arm(tp=4, t_max=3000.0, c_half=40.0))


def make_point(tp: int, conc: int, *, model_prefix: str = "dsv41flash", runner: str = RUNNER,
               image: str = IMAGE, isl: int | None = None, osl: int | None = None,
               precision: str = "fp4", framework: str = "vllm") -> Point:
    agentic = isl is None
    name = f"{model_prefix}_tp{tp}_conc{conc}" + ("_kvnone_spec-mtp" if agentic else f"_{isl}_{osl}")
    row: dict[str, object] = {
        "image": image, "model": "deepseek-ai/DeepSeek-V4.1-Flash", "model-prefix": model_prefix,
        "precision": precision, "framework": framework, "runner": runner, "tp": tp, "conc": conc,
        "exp-name": name, "point-id": name,
    }
    if agentic:
        row.update({"scenario-type": "agentic-coding", "spec-decoding": "mtp", "kv-offloading": "none",
                    "total-cpu-dram-gb": 0, "duration": 1800})
    else:
        assert isl is not None and osl is not None, "a fixed-length point needs both isl and osl"
        row.update({"isl": isl, "osl": osl, "max-model-len": isl + osl + 256})
    return Point.from_row(row)


def _stat(median: float, spread: float = 0.15) -> Stat:
    return Stat(mean=median * (1 + spread / 3), median=median, std=median * spread,
                p90=median * (1 + spread), p99=median * (1 + 2 * spread),
                p999=median * (1 + 3 * spread), count=100)


def make_result(point: Point, arm: Arm, *, scale: float = 1.0, rng: random.Random | None = None,
                started_at: float = 1_780_000_000.0, duration_s: float = 600.0) -> BenchResult:
    """A BenchResult for ``point`` from the arm's saturation model (``scale`` shifts the curve)."""
    rng = rng or random.Random(0)
    c = point.concs[0]
    noise = 1.0 + rng.uniform(-0.03, 0.03)
    out_tps = arm.t_max * scale * c / (c + arm.c_half) * noise
    interactivity = out_tps / c
    tpot = 1000.0 / interactivity
    in_ratio = 8.0 if point.isl is None else point.isl / max(point.osl or 1, 1)
    in_tps = out_tps * in_ratio
    completed = max(int(out_tps * duration_s / 1000), c)
    gps = point.gpus_per_server
    thr = Throughput(duration_s=duration_s, request_per_s=completed / duration_s,
                     output_tok_per_s=out_tps, input_tok_per_s=in_tps, total_tok_per_s=out_tps + in_tps,
                     gpus_per_server=gps, output_tok_per_s_per_gpu=out_tps / gps,
                     total_tok_per_s_per_gpu=(out_tps + in_tps) / gps)
    ttft = 120.0 * (1 + c / 16) * noise
    metrics = Metrics(
        issued=completed, completed=completed, failed=0, success_rate=1.0,
        total_input_tokens=int(in_tps * duration_s), total_output_tokens=int(out_tps * duration_s),
        ttft_ms=_stat(ttft, 0.4), tpot_ms=_stat(tpot), itl_ms=_stat(tpot * 0.97, 0.25),
        e2el_ms=_stat(ttft + tpot * 1000), queue_delay_ms=_stat(0.5 * c),
        throughput=thr, interactivity_median=interactivity, interactivity_p90=1000.0 / (tpot * 1.15))
    return BenchResult(started_at=started_at, ended_at=started_at + duration_s,
                       config=OtherRunConfig.model_validate({"max_concurrency": c, "synthetic": True}), metrics=metrics,
                       checks=[Check(name="accounting", status="ok")],
                       versions={"infx": __version__, "server": "synthetic"}, point=point.to_row())


def make_records(point: Point, result: BenchResult, rng: random.Random, n: int = 40,
                 tokens: int = 32) -> list[dict[str, object]]:
    """Per-request records in the load generator's RequestRecord shape (monotonic ns), with
    TTFT and inter-token gaps drawn around the result's medians."""
    ttft_med = result.metrics.ttft_ms.median or 100.0
    itl_med = result.metrics.itl_ms.median or 10.0
    out: list[dict[str, object]] = []
    t = 1_000_000_000
    for k in range(n):
        send = t + k * 5_000_000
        first = send + int(ttft_med * rng.lognormvariate(0, 0.35) * 1e6)
        chunks = [first]
        for _ in range(tokens - 1):
            chunks.append(chunks[-1] + int(itl_med * rng.lognormvariate(0, 0.25) * 1e6))
        out.append({"request_id": f"{point.point_id}-{k}", "endpoint": "chat", "max_tokens": tokens,
                    "ignore_eos": True, "send_ns": send, "first_token_ns": first, "last_token_ns": chunks[-1],
                    "end_ns": chunks[-1] + 200_000, "chunk_ns": chunks, "chunk_tokens": [1] * tokens,
                    "completion_tokens": tokens, "client_tokens": tokens, "finish_reason": "length",
                    "finish_count": 1, "http_status": 200})
    return out


def make_manifest(run_id: str, *, official: bool = True, baseline: str | None = None,
                  started_at: float = 1_780_000_000.0) -> RunManifest:
    return RunManifest(
        run_id=run_id, infx_version=__version__, git_commit="0" * 40, catalog_hash="synthetic",
        recipe_hash="synthetic", config_keys=["dsv41flash-fp4-mi355x-vllm-agentic-dspark"],
        images=[ImageRef(image=IMAGE, digest=DIGEST)], engine_version="synthetic",
        host=HostFacts(hostname="synthetic", os="linux", python="3.11", cpu_count=8, accelerators=["MI355X"] * 8),
        gpus_per_node={RUNNER: 8}, started_at=started_at, ended_at=started_at + 3600.0,
        official=official,
        pr=None if official else PullRequest(number=1234, branch="dsv41flash-tp2", sha="f" * 40,
                                             url="https://example.invalid/pull/1234",
                                             title="dsv41flash: add TP=2 arm with host-memory Engram tables"),
        baseline_run=baseline,
        description="synthetic results (closed-form model, not a measurement)")


def write_synthetic_run(root: str | Path, run_id: str, arms: tuple[Arm, ...] = SEED_ARMS, *,
                        official: bool = True, baseline: str | None = None, scale: float = 1.0,
                        seed: int = 0, with_failures: bool = True,
                        started_at: float = 1_780_000_000.0) -> ResultsDir:
    """Write one run with every arm measured over its concs; with ``with_failures`` also a failed
    (start-up OOM) and a skipped point, the way a real sweep leaves them."""
    results = ResultsDir(root)
    rng = random.Random(seed)
    results.write_manifest(make_manifest(run_id, official=official, baseline=baseline, started_at=started_at))
    for arm in arms:
        fingerprint = f"synthetic-tp{arm.tp}"
        startup = StartupSummary(kv_cache_tokens=400_000 * arm.tp, kv_cache_gib=20.0 * arm.tp,
                                 max_concurrency=12.5 * arm.tp, startup_s=240.0)
        for i, c in enumerate(arm.concs):
            point = make_point(arm.tp, c)
            result = make_result(point, arm, scale=scale, rng=rng, started_at=started_at + 700 * i)
            status = PointStatus(state="done", launch_fingerprint=fingerprint, startup=startup,
                                 started_at=result.started_at, ended_at=result.ended_at)
            records = make_records(point, result, rng)
            write_point_outcome(results, run_id, point, status, result, records=records,
                                engine_log=f"INFO synthetic engine TP={arm.tp}\nINFO GPU KV cache size: "
                                           f"{startup.kv_cache_tokens} tokens\n")
    if with_failures:
        oom = make_point(2, 256)
        write_point_outcome(results, run_id, oom, PointStatus(
            state="failed", reason="engine died at start-up: HIP out of memory (tried to allocate 32.00 GiB)",
            failure_class="startup-oom", launch_fingerprint="synthetic-tp2-gpu-tables",
            log_tail="torch.OutOfMemoryError: HIP out of memory. Tried to allocate 32.00 GiB.\n"
                     "GPU 0 has a total capacity of 288.00 GiB of which 12.41 GiB is free."),
            engine_log="ERROR torch.OutOfMemoryError: HIP out of memory\n")
        skipped = make_point(4, 256)
        write_point_outcome(results, run_id, skipped, PointStatus(
            state="skipped", reason="memory gate: KV cache 1.6M tokens < 256 x 8192", failure_class="infeasible"))
    return results


def write_seed_scenario(root: str | Path, *, pr_run: str = "pr-1234", baseline_run: str = "baseline") -> ResultsDir:
    """The motivating scenario as synthetic results: an official TP=4 c1-c32 baseline and an
    unofficial PR run with TP=2 and TP=4 over c1-c128 (plus one OOM and one skipped point)."""
    write_synthetic_run(root, baseline_run, (Arm(tp=4, t_max=3000.0, c_half=40.0, concs=(1, 2, 4, 8, 16, 32)),),
                        official=True, scale=0.95, seed=1, with_failures=False,
                        started_at=time.mktime((2026, 11, 1, 0, 0, 0, 0, 0, 0)))
    return write_synthetic_run(root, pr_run, SEED_ARMS, official=False, baseline=baseline_run, seed=2,
                               started_at=time.mktime((2026, 11, 29, 0, 0, 0, 0, 0, 0)))


#: The cross-hardware shape: one model on several hardware and frameworks (runner, framework, throughput scale).
CROSS_HARDWARE = (("cluster:mi355x-amds", "vllm", 1.0), ("cluster:b200-nv", "vllm", 1.3))


def _two_trial_stats(result: BenchResult, half_width: float) -> dict[str, Estimate]:
    thr = result.metrics.throughput
    out: dict[str, Estimate] = {}
    for key, v in (("output_tok_per_s", thr.output_tok_per_s), ("total_tok_per_s", thr.total_tok_per_s)):
        if v:
            out[key] = Estimate(mean=v, lo=v * (1 - half_width), hi=v * (1 + half_width), n=2, method="trials",
                                values=[v * 0.9, v * 1.1])
    return out


def write_cross_hardware_run(root: str | Path, run_id: str,
                             hardware: tuple[tuple[str, str, float], ...] = CROSS_HARDWARE,
                             arms: tuple[Arm, ...] = SEED_ARMS, *, isl: int = 1024, osl: int = 1024,
                             official: bool = True, seed: int = 0, started_at: float = 1_780_000_000.0,
                             models: tuple[str, ...] = ("dsv41flash",), image: str = IMAGE,
                             ci_half_width: float | None = None) -> ResultsDir:
    """One run measuring ``models`` on every (runner, framework) of ``hardware``, each with every arm over its
    concs (``scale`` shifts that hardware's curves): the main view's cross-hardware chart. ``ci_half_width``:
    each point's throughput carries a two-trial 95 % interval of that relative half-width (above 1, the
    interval's lower end is below zero, as a two-trial Student-t interval of a noisy point can be)."""
    results = ResultsDir(root)
    rng = random.Random(seed)
    manifest = make_manifest(run_id, official=official, started_at=started_at)
    manifest = manifest.model_copy(update={"gpus_per_node": {runner: 8 for runner, _, _ in hardware}})
    results.write_manifest(manifest)
    for model in models:
        for runner, framework, scale in hardware:
            hw = runner.split(":", 1)[-1].split("-", 1)[0]
            for arm in arms:
                startup = StartupSummary(kv_cache_tokens=400_000 * arm.tp, kv_cache_gib=20.0 * arm.tp,
                                         max_concurrency=12.5 * arm.tp, startup_s=240.0)
                for i, c in enumerate(arm.concs):
                    base = make_point(arm.tp, c, model_prefix=model, runner=runner, framework=framework, isl=isl,
                                      osl=osl, image=image)
                    name = f"{model}_{hw}_{framework}_tp{arm.tp}_conc{c}_{isl}_{osl}"
                    point = base.model_copy(update={"point_id": name, "exp_name": name})
                    result = make_result(point, arm, scale=scale, rng=rng, started_at=started_at + 700 * i)
                    if ci_half_width is not None:
                        result = result.model_copy(update={"stats": _two_trial_stats(result, ci_half_width)})
                    status = PointStatus(state="done", launch_fingerprint=f"synthetic-{hw}-tp{arm.tp}",
                                         startup=startup, started_at=result.started_at, ended_at=result.ended_at)
                    write_point_outcome(results, run_id, point, status, result)
    return results
