"""Start-up and teardown time of the CPU disaggregated deployment (issue 15).

Renders ``disagg-tinyllama-bf16-cpu-vllm`` of ``configs/cpu-master.yaml`` (prefill + decode vLLM-CPU with
ExampleConnector, vllm-router in PD mode), starts every role as its own process group, waits until every
role is ready (workers together, then the router), sends one streamed completion through the router,
then tears everything down. Prints per-role ready times, the deployment start-up and the teardown
seconds. Needs ``make router-venv``; hold the engine lock on a shared machine:

    flock /tmp/infx-engine.lock .venv/bin/python benchmarks/deployment_startup.py [--runs 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infx.engines.disagg.process import DeploymentProcess, pd_evidence
from infx.engines.disagg.render import render_deployment
from infx.engines.tiny_model import ensure_tiny_model
from infx.matrix.select import select_points
from infx.sweep.deployment import free_ports

REPO = Path(__file__).resolve().parents[1]


def once() -> dict[str, float]:
    (point,) = select_points([str(REPO / "configs/cpu-master.yaml")], str(REPO / "configs/runners.yaml"),
                             ["disagg-tinyllama-bf16-cpu-vllm"], evals="none", conc=None)
    ports = free_ports(point)
    with tempfile.TemporaryDirectory(prefix="infx-bench-") as tmp:
        kv = Path(tmp) / "kv"
        kv.mkdir()
        dep = render_deployment(point, port=ports["router"], ports=ports, kv_dir=str(kv))
        ensure_tiny_model(dep.model_path)
        proc = DeploymentProcess(dep, Path(tmp), "bench", kv_dir=kv)
        try:
            proc.start_workers()
            startup = proc.wait_ready(600)
            body = json.dumps({"model": dep.served_model_name, "prompt": "hello world " * 60, "max_tokens": 8,
                               "stream": False}).encode()
            req = urllib.request.Request(dep.base_url + "/v1/completions", body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as resp:
                resp.read()
            evidence = pd_evidence(proc)
        finally:
            teardown = proc.stop()
        out = {f"ready_s.{rp.role.name}": rp.ready_s or 0.0 for rp in proc.roles}
        out.update(startup_s=startup, teardown_s=teardown, all_gone=float(proc.all_gone()),
                   external_kv_tokens=evidence.get("decode.external_kv_transfer_tokens", 0.0))
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    for i in range(args.runs):
        r = once()
        roles = ", ".join(f"{k.split('.', 1)[1]} {v:.1f} s" for k, v in r.items() if k.startswith("ready_s."))
        print(f"run {i + 1}: start-up {r['startup_s']:.1f} s ({roles}); teardown {r['teardown_s']:.2f} s; "
              f"all process groups gone: {bool(r['all_gone'])}; decode KV tokens from transfer: "
              f"{r['external_kv_tokens']:.0f}")


if __name__ == "__main__":
    main()
