"""Forced (synthetic) acceptance read off rendered launches (infx.engines.synthetic), and ``infx plan`` over the
InferenceX corpus counting the points that run with it, by engine."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infx.engines.synthetic import ATOM, INJECTOR, SGLANG, TRT, VLLM, detect, label
from infx.matrix.point import Point

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "compat" / "inferencex"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/compat/inferencex")
REPO = Path(__file__).resolve().parents[2]


def _pt(**kw: object) -> Point:
    row = {"image": "img:1", "model": "m/M", "model-prefix": "dsv4", "precision": "fp4", "framework": "vllm",
           "runner": "b200", "isl": 1024, "osl": 1024, "tp": 8, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 4,
           "max-model-len": 2304, "ep": 1, "dp-attn": False, "spec-decoding": "mtp", "exp-name": "x",
           "disagg": False, "run-eval": False, "point-id": "p0"}
    row.update(kw)
    return Point.from_row(row)


def test_each_engines_knob_is_detected_with_its_length() -> None:
    spec = json.dumps({"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic",
                       "synthetic_acceptance_length": 2.49})
    assert detect(["vllm", "serve", "--speculative-config", spec], {}) == (2.49, VLLM)
    assert detect(["vllm", f"--speculative-config={spec}"], {}) == (2.49, VLLM)
    assert detect(["python", "-m", "sglang.launch_server"], {"SGLANG_SIMULATE_ACC_LEN": "3.39"}) == (3.39, SGLANG)
    # TRT-LLM forces accepted draft tokens per step: AL is one more
    assert detect(["trtllm-serve"], {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "1.78"}) == (pytest.approx(2.78),
                                                                                                TRT)
    assert detect(["trtllm-serve"], {}, ["speculative_config:\n  decoding_type: MTP\n",
                                         "env:\n  TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: 2\n"]) == (3.0, TRT)
    assert detect(["atom", "--spec-decode-acceptance-length", "2.49"], {}) == (2.49, ATOM)
    rate = detect(["atom", "--num-speculative-tokens", "3", "--spec-decode-acceptance-rate", "0.663333"], {})
    assert rate is not None and rate[0] == pytest.approx(2.99, abs=1e-5)
    real = json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3})
    assert detect(["vllm", "--speculative-config", real], {"SGLANG_OTHER": "1"}) is None


def test_label_of_points() -> None:
    assert label(_pt(**{"spec-decoding": "none"}), [(["x"], {"SGLANG_SIMULATE_ACC_LEN": "3"}, [])]) is None
    measured = label(_pt(), [(["vllm", "--speculative-config", '{"method":"mtp"}'], {}, [])])
    assert measured is not None and measured.acceptance == "measured" and measured.text() == "measured"
    forced = label(_pt(framework="sglang"), [(["sglang"], {"SGLANG_SIMULATE_ACC_LEN": "3.51"}, [])])
    assert forced is not None and forced.text() == "synthetic (AL 3.51, via SGLANG_SIMULATE_ACC_LEN)"


def test_multinode_rows_given_the_srt_slurm_injector_are_synthetic() -> None:
    worker = {"num-worker": 1, "tp": 8, "ep": 1, "dp-attn": False,
              "additional-settings": ["SYNTHETIC_ACCEPTANCE=true", "SYNTHETIC_ACCEPTANCE_LENGTH=2.27",
                                      "CONFIG_FILE=recipes/vllm/x.yaml"]}
    p = _pt(framework="dynamo-vllm", prefill=worker, decode={**worker, "additional-settings": []}, disagg=True)
    got = label(p, [])
    assert got is not None and (got.acceptance, got.synthetic_al, got.via) == ("synthetic", 2.27, INJECTOR)


@pytest.mark.slow  # renders ~1,800 points through the bench-script sandbox (~60 s uncached)
@pytest.mark.skipif(not (CORPUS / "benchmarks").is_dir() or shutil.which("bwrap") is None,
                    reason="InferenceX corpus or bubblewrap absent")
def test_plan_over_the_corpus_counts_synthetic_points_by_engine(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "configs").mkdir(parents=True)
    for f in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
        shutil.copy(CORPUS / f, ws / "configs" / f)
    (ws / "benchmarks").symlink_to(CORPUS / "benchmarks")
    (ws / "infx.toml").write_text("")
    out = subprocess.run([sys.executable, "-m", "infx", "plan", "--keep-going", "--config-keys", "*"], cwd=ws,
                         capture_output=True, text=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin",
                                                              "HOME": str(tmp_path)}, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    head = re.search(r"speculative decoding: (\d+) of (\d+) point\(s\) run with synthetic acceptance", text)
    assert head is not None, text[-3000:]
    counts = dict((m.group(1), (int(m.group(2)), int(m.group(3))))
                  for m in re.finditer(r"^  ([\w-]+): (\d+) synthetic, (\d+) measured$", text, re.M))
    # every engine with a forcing knob in the corpus is caught: vLLM's speculative-config, SGLang's env,
    # TRT-LLM's env, ATOM's flags, and the srt-slurm injector on multi-node dynamo rows
    for engine in ("vllm", "sglang", "trt", "atom", "dynamo-vllm", "dynamo-sglang"):
        assert counts[engine][0] > 0, (engine, counts)
    assert sum(c[0] for c in counts.values()) == int(head.group(1))
    assert "acceptance: synthetic (AL 2.78, via TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS)" in text
    assert "acceptance: synthetic (AL 3.39, via SGLANG_SIMULATE_ACC_LEN)" in text
    assert "acceptance: measured" in text


@pytest.mark.skipif(not (CORPUS / "benchmarks").is_dir() or shutil.which("bwrap") is None,
                    reason="InferenceX corpus or bubblewrap absent")
def test_preflight_shows_the_label(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "configs").mkdir(parents=True)
    for f in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
        shutil.copy(CORPUS / f, ws / "configs" / f)
    (ws / "benchmarks").symlink_to(CORPUS / "benchmarks")
    (ws / "infx.toml").write_text("")
    out = subprocess.run([sys.executable, "-m", "infx", "preflight", "--config-keys",
                          "qwen3.5-fp8-b200-sglang-agentic-mtp", "--json"], cwd=ws, capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, timeout=600)
    verdicts = json.loads(out.stdout)
    labels = {c["message"] for v in verdicts for c in v["checks"] if c["name"] == "acceptance"}
    assert labels == {"synthetic (AL 3.39, via SGLANG_SIMULATE_ACC_LEN)"}, labels
