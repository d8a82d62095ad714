"""Golden renders: container (docker/podman) and Slurm runtimes, SGLang and TRT-LLM adapters.

Only the local runtime can run here, so the others are checked against golden files. To refresh
them after an intended change: ``INFX_UPDATE_GOLDEN=1 pytest tests/engines/test_engines_runtimes.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from infx.engines.recipes import load_recipes
from infx.engines.render import render_launch
from infx.matrix.point import Point
from infx.workspace import BUILTIN_RECIPES_DIR

from .helpers import flag_value, seed_row, tiny_row

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "engines"
GOLDEN = FIX / "golden"


def _recipes():
    return load_recipes([BUILTIN_RECIPES_DIR, REPO / "recipes", FIX / "recipes"])


def _sglang_row(**over):
    row = {"image": "lmsysorg/sglang:v0.5.12-rocm700-mi35x", "model": "amd/DeepSeek-R1-0528-MXFP4-Preview",
           "model-prefix": "dsr1", "precision": "fp4", "framework": "sglang", "runner": "mi355x", "isl": 8192,
           "osl": 1024, "tp": 4, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 32, "max-model-len": 9472, "ep": 1,
           "dp-attn": False, "spec-decoding": "mtp", "exp-name": "dsr1_8k1k", "disagg": False, "run-eval": True,
           "point-id": "dsr1-tp4-c32"}
    row.update(over)
    return row


def _trt_row(**over):
    row = {"image": "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc5", "model": "MiniMaxAI/MiniMax-M3",
           "model-prefix": "minimaxm3", "precision": "fp4", "framework": "trt", "runner": "b300-nv_02", "tp": 4,
           "pp": 1, "dcp-size": 1, "pcp-size": 1, "ep": 4, "dp-attn": True, "spec-decoding": "mtp", "conc": 16,
           "kv-offloading": "dram", "total-cpu-dram-gb": 1199, "duration": 3600,
           "exp-name": "minimaxm3_tp4_conc16_kvdram-trt-host_spec-mtp", "scenario-type": "agentic-coding",
           "kv-offload-backend": {"name": "trt-host"}, "run-eval": False, "point-id": "mm3-tp4-c16"}
    row.update(over)
    return row


CASES = {
    "seed-tp2-c128-docker": (seed_row(2, 128), "docker"),
    "seed-tp4-c64-podman": (seed_row(4, 64), "podman"),
    "seed-tp2-c1-slurm": (seed_row(2, 1), "slurm"),
    "tinyllama-docker": (tiny_row(), "docker"),
    "sglang-dsr1-mi355x-local": (_sglang_row(), "local"),
    "sglang-dsr1-dpattn-docker": (_sglang_row(**{"dp-attn": True, "ep": 4, "conc": 64}), "docker"),
    "trt-minimaxm3-b300-slurm": (_trt_row(), "slurm"),
    "trt-minimaxm3-b300-docker": (_trt_row(**{"spec-decoding": "none", "kv-offloading": "none", "total-cpu-dram-gb": 0,
                                               "kv-offload-backend": None, "dp-attn": False}), "docker"),
}


def _golden_view(launch) -> dict:
    return {
        "runtime": launch.runtime,
        "argv": launch.argv,
        "env": launch.redacted().env,
        "files": launch.files,
        "fingerprint": launch.fingerprint,
        "served_model_name": launch.served_model_name,
        "readiness_path": launch.readiness_path,
        "metrics_path": launch.metrics_path,
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    row, runtime = CASES[case]
    row = {k: v for k, v in row.items() if v is not None}
    launch = render_launch(Point.from_row(row), _recipes(), port=8888, runtime=runtime, base_dir="/srv/infx")
    view = _golden_view(launch)
    path = GOLDEN / f"{case}.json"
    if os.environ.get("INFX_UPDATE_GOLDEN"):
        path.write_text(json.dumps(view, indent=2) + "\n")
    assert path.exists(), f"golden file {path} missing; create it with INFX_UPDATE_GOLDEN=1"
    assert view == json.loads(path.read_text())


def test_container_runtime_details() -> None:
    launch = render_launch(Point.from_row(seed_row(2, 1)), _recipes(), runtime="docker")
    a = launch.argv
    assert a[:3] == ["docker", "run", "--rm"]
    assert a[a.index("--device"):a.index("--device") + 2] == ["--device", "/dev/kfd"]  # AMD GPUs
    assert "--gpus" not in a
    image_at = a.index(launch.image)
    assert a[image_at + 1:image_at + 3] == ["vllm", "serve"]
    assert flag_value(a, "--host") == "0.0.0.0"
    assert "VLLM_ROCM_USE_AITER=1" in a[:image_at]
    nv = render_launch(Point.from_row(_trt_row()), _recipes(), runtime="podman").argv
    assert nv[nv.index("--device"):nv.index("--device") + 2] == ["--device", "nvidia.com/gpu=all"]


def test_slurm_runtime_details() -> None:
    a = render_launch(Point.from_row(seed_row(2, 1)), _recipes(), runtime="slurm").argv
    assert a[0] == "srun" and "--gres=gpu:2" in a
    assert f"--container-image={seed_row()['image']}" in a
    assert a[a.index("env") + 1] == "VLLM_ROCM_USE_AITER=1"


def test_trt_options_file_and_secret() -> None:
    launch = render_launch(Point.from_row(_trt_row()), _recipes())
    a = launch.argv
    assert a[:2] == ["trtllm-serve", "MiniMaxAI/MiniMax-M3"]
    assert flag_value(a, "--tp_size") == "4" and flag_value(a, "--ep_size") == "4"
    assert flag_value(a, "--extra_llm_api_options") == "infx-trt-extra-options.yaml"
    import yaml

    opts = yaml.safe_load(launch.files["infx-trt-extra-options.yaml"])
    assert opts["enable_attention_dp"] is True
    assert opts["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 3}
    assert opts["max_batch_size"] == 16 and opts["cuda_graph_config"]["max_batch_size"] == 16
    assert opts["kv_cache_config"] == {"free_gpu_memory_fraction": 0.94, "enable_block_reuse": True,
                                       "host_cache_size": 1199 * 10**9 // 4}
    assert "from-the-recipe" not in launch.display()


def test_sglang_flags() -> None:
    a = render_launch(Point.from_row(_sglang_row(**{"dp-attn": True})), _recipes()).argv
    assert a[:3] == ["python3", "-m", "sglang.launch_server"]
    assert flag_value(a, "--tp-size") == "4" and flag_value(a, "--dp-size") == "4"
    assert "--enable-dp-attention" in a and "--enable-metrics" in a
    assert flag_value(a, "--chunked-prefill-size") == "32768"
    assert flag_value(a, "--speculative-algorithm") == "EAGLE"
    assert flag_value(a, "--speculative-num-draft-tokens") == "4"
    assert flag_value(a, "--context-length") == "9472"
