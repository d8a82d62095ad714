"""Hand-built matrix rows shaped like the generator's (reference-system.md 3.4)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from infx.matrix.point import Point

SEED_IMAGE = "vllm/vllm-openai-rocm:nightly-rocm100-3df4ae153eb385e27b52f26c81f8edb9e20b9984"


def seed_row(tp: int = 4, conc: int = 1, **over: Any) -> dict[str, Any]:
    row = {
        "image": SEED_IMAGE,
        "model": "deepseek-ai/DeepSeek-V4.1-Flash",
        "model-prefix": "dsv41flash",
        "precision": "fp4",
        "framework": "vllm",
        "runner": "cluster:mi355x-amds",
        "tp": tp,
        "pp": 1,
        "dcp-size": 1,
        "pcp-size": 1,
        "ep": 1,
        "dp-attn": False,
        "spec-decoding": "mtp",
        "conc": conc,
        "kv-offloading": "none",
        "total-cpu-dram-gb": 0,
        "duration": 3600,
        "exp-name": f"dsv41flash_tp{tp}_conc{conc}_kvnone_spec-mtp",
        "scenario-type": "agentic-coding",
        "run-eval": False,
        "point-id": f"seed-tp{tp}-c{conc}",
    }
    row.update(over)
    return row


def seed_point(tp: int = 4, conc: int = 1, **over: Any) -> Point:
    return Point.from_row(seed_row(tp, conc, **over))


def tiny_row(**over: Any) -> dict[str, Any]:
    row = {
        "image": "local",
        "model": "infx/tinyllama",
        "model-prefix": "tinyllama",
        "precision": "bf16",
        "framework": "vllm",
        "runner": "local",
        "isl": 256,
        "osl": 64,
        "tp": 1,
        "conc": 4,
        "max-model-len": 576,
        "spec-decoding": "none",
        "exp-name": "tinyllama_256_64",
        "scenario-type": "fixed-seq-len",
        "point-id": "tiny-c4",
    }
    row.update(over)
    return row


def flag_value(argv: list[str], flag: str) -> str:
    i = argv.index(flag)
    return argv[i + 1]


def pid_alive(pid: int) -> bool:
    """The process exists and is not a zombie (a test's view: a vanished /proc entry means gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False
