"""Bad deployment topologies are FILE:LINE errors (exit 2, no traceback) before anything is launched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

ENTRY = """\
# a comment line so the entry starts on line 2
pd-bad:
  image: local
  model: infx/tinyllama
  model-prefix: tinyllama
  runner: local
  precision: bf16
  framework: vllm
  multinode: true
  disagg: true
  kv-p2p-transfer: example-connector
  scenarios:
    fixed-seq-len:
    - isl: 512
      osl: 32
      search-space:
      - prefill: {{ num-worker: {pn}, tp: {ptp}, ep: 1, dp-attn: false }}
        decode: {{ num-worker: {dn}, tp: 1, ep: 1, dp-attn: false }}
        conc-list: [2]
"""


def _validate(tmp_path: Path, **kw: int) -> subprocess.CompletedProcess[str]:
    f = tmp_path / "bad-master.yaml"
    f.write_text(ENTRY.format(**{"pn": 1, "ptp": 1, "dn": 1, **kw}))
    return subprocess.run([sys.executable, "-m", "infx", "validate", "--config-files", str(f), "--runner-config",
                           str(REPO / "configs/runners.yaml")], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_good_topology_validates(tmp_path: Path) -> None:
    r = _validate(tmp_path)
    assert r.returncode == 0, r.stderr


def test_no_workers_is_a_file_line_error(tmp_path: Path) -> None:
    r = _validate(tmp_path, pn=0, dn=0)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{tmp_path / 'bad-master.yaml'}:18:" in r.stderr  # the decode line of the search-space entry
    assert "decode workers = 0 and prefill workers = 0" in r.stderr


def test_gpus_per_node_exceeded_is_a_file_line_error(tmp_path: Path) -> None:
    r = _validate(tmp_path, ptp=2)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{tmp_path / 'bad-master.yaml'}:2:" in r.stderr  # the entry
    assert "GPUs per node exceeded: a prefill worker needs 2 GPU(s)" in r.stderr
    assert "runner 'local' has 1 node(s) x 1 GPU(s)" in r.stderr


def test_decode_zero_on_the_cpu_connector_deployment_is_rejected_at_render(tmp_path: Path) -> None:
    f = tmp_path / "bad-master.yaml"
    f.write_text(ENTRY.format(pn=1, ptp=1, dn=0))
    r = subprocess.run([sys.executable, "-m", "infx", "plan", "--config-files", str(f), "--runner-config",
                        str(REPO / "configs/runners.yaml"), "--config-keys", "pd-bad"], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "decode workers = 0: a KV connector deployment needs a decode worker" in r.stderr


def test_fleet_capacity_comes_from_the_nodes_fact_not_runner_names(tmp_path: Path) -> None:
    """A fleet label listing one runner name is not a one-node fleet: without 'nodes' nothing is judged at
    validate time; with 'nodes' a worker larger than the whole fleet is a FILE:LINE error."""
    f = tmp_path / "m.yaml"
    f.write_text(ENTRY.format(pn=1, ptp=16, dn=1).replace("runner: local", "runner: fleet"))
    runners = tmp_path / "runners.yaml"
    base = "labels:\n  fleet: [login_0]\nhardware:\n  fleet:\n    available-cpu-dram-mib: 1000\n    gpus-per-node: 8\n"

    def validate(text: str) -> subprocess.CompletedProcess[str]:
        runners.write_text(text)
        return subprocess.run([sys.executable, "-m", "infx", "validate", "--config-files", str(f), "--runner-config",
                               str(runners)], cwd=REPO, capture_output=True, text=True, timeout=120)

    r = validate(base)
    assert "GPUs per node exceeded" not in r.stderr
    r = validate(base + "    nodes: 1\n")
    assert r.returncode == 2 and "GPUs per node exceeded: a prefill worker needs 16 GPU(s)" in r.stderr
    assert "runner 'fleet' has 1 node(s) x 8 GPU(s)" in r.stderr
    assert validate(base + "    nodes: 2\n").stderr.count("GPUs per node exceeded") == 0
