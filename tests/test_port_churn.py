"""``.ci/port_churn.py``: the background port churn the suite can be run under (issue 25) stops by itself,
bounded in time and in count, and passes a wrapped command's exit code through."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "port_churn.py"


def _stats(stderr: str) -> dict[str, float]:
    m = re.search(r"port churn: (.*)", stderr)
    assert m, stderr
    return {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split(", "))}


def test_churn_is_bounded_in_time() -> None:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, str(SCRIPT), "--duration", "1", "--hold", "8", "--max-hold", "0.2"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    st = _stats(r.stderr)
    assert st["binds"] > 0 and st["distinct_ports"] > 0 and st["seconds"] >= 1
    assert time.monotonic() - t0 < 60  # stopped by itself


def test_churn_is_bounded_in_count() -> None:
    r = subprocess.run([sys.executable, str(SCRIPT), "--duration", "600", "--cycles", "25", "--interval", "0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and _stats(r.stderr)["binds"] == 25


def test_churn_wraps_a_command_and_returns_its_exit_code() -> None:
    r = subprocess.run([sys.executable, str(SCRIPT), "--duration", "600", "--", sys.executable, "-c",
                        "import time; time.sleep(0.5); raise SystemExit(3)"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 3 and _stats(r.stderr)["binds"] > 0
