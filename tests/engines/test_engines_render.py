"""render_launch: layers, drift check, contradictions, argv safety, fingerprints, secrets."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.engines.recipes import load_recipes, workspace_recipes
from infx.engines.render import render_launch
from infx.matrix.point import Point

from .helpers import flag_value, seed_point, seed_row, tiny_row


def recipes_from(tmp_path: Path, text: str, name: str = "r.yaml"):
    (tmp_path / name).write_text(textwrap.dedent(text))
    return load_recipes(tmp_path)


LAYERED = """\
    match: {model-prefix: dsv41flash, framework: vllm, precision: fp4}
    engine: vllm
    spec-tokens: 3
    base:
      args:
        a: base
        b: base
        gone: keep-me?
        cfg: {x: 1, y: 1}
      env: {E: base}
    vendor:
      amd: {args: {b: vendor, c: vendor}, env: {E: vendor}}
      nvidia: {args: {b: nvidia}}
    hardware:
      mi355x: {args: {c: hardware, gone: null, cfg: {y: 2, z: 3}}}
    rules:
      - when: {tp: [2, 8]}
        args: {c: rule-tp}
      - when: "conc >= 64 and tp == 2"
        args: {d: "= 2 * conc"}
"""


def test_layers_apply_in_order(tmp_path: Path) -> None:
    rs = recipes_from(tmp_path, LAYERED)
    a = render_launch(seed_point(4, 1), rs).argv
    assert flag_value(a, "--a") == "base"
    assert flag_value(a, "--b") == "vendor"
    assert flag_value(a, "--c") == "hardware"
    assert "--gone" not in a  # null removes
    assert json.loads(flag_value(a, "--cfg")) == {"x": 1, "y": 2, "z": 3}  # mappings merge
    assert "--d" not in a
    launch = render_launch(seed_point(2, 64), rs)
    assert flag_value(launch.argv, "--c") == "rule-tp"
    assert flag_value(launch.argv, "--d") == "128"
    assert launch.env == {"E": "vendor"}
    nv = render_launch(seed_point(4, 1, runner="b200-dgxc_01"), rs).argv
    assert flag_value(nv, "--b") == "nvidia" and "--c" not in nv
    assert flag_value(nv, "--gone") == "keep-me?"  # the mi355x layer did not apply
    assert json.loads(flag_value(nv, "--cfg")) == {"x": 1, "y": 1}


def test_drift_unused_field_is_reported(tmp_path: Path) -> None:
    rs = recipes_from(tmp_path, """\
        match: {model-prefix: dsv41flash, framework: vllm, precision: fp4}
        engine: vllm
        spec-tokens: 1
        """)
    point = seed_point(4, 1, router={"name": "vllm-router", "version": "0.1.14"})
    with pytest.raises(InfxError) as exc:
        render_launch(point, rs)
    msgs = [d.message for d in exc.value.diagnostics]
    assert msgs == ["field router of point seed-tp4-c1 is not used by recipe r"]
    assert exc.value.diagnostics[0].file == str(tmp_path / "r.yaml")


def test_drift_ignore_declares_irrelevant(tmp_path: Path) -> None:
    rs = recipes_from(tmp_path, """\
        match: {model-prefix: dsv41flash, framework: vllm}
        engine: vllm
        spec-tokens: 1
        ignore: [router, precision]
        """)
    launch = render_launch(seed_point(4, 1, router={"name": "vllm-router"}), rs)
    assert launch.ignored == ["precision", "router"]
    assert "tp" in launch.consumed and "spec-decoding" in launch.consumed


def test_drift_precision_must_be_matched_or_ignored(tmp_path: Path) -> None:
    rs = recipes_from(tmp_path, "match: {model-prefix: dsv41flash, framework: vllm}\nengine: vllm\nspec-tokens: 1\n")
    with pytest.raises(InfxError, match="field precision of point seed-tp4-c1 is not used by recipe r"):
        render_launch(seed_point(), rs)


def test_contradicting_tp_is_an_error(tmp_path: Path) -> None:
    rs = recipes_from(tmp_path, """\
        match: {model-prefix: dsv41flash, framework: vllm, precision: fp4}
        engine: vllm
        spec-tokens: 7
        base:
          args:
            tp: 8
            speculative-config: {method: mtp, num_speculative_tokens: 3, extra: 1}
        """)
    with pytest.raises(InfxError) as exc:
        render_launch(seed_point(4, 1), rs)
    text = "\n".join(str(d) for d in exc.value.diagnostics)
    assert "recipe r sets --tensor-parallel-size 8 but point seed-tp4-c1 has tp=4" in text
    assert "num_speculative_tokens=3 but point seed-tp4-c1 has spec-decoding=mtp (num_speculative_tokens=7)" in text
    assert f"{tmp_path / 'r.yaml'}:6:" in text


def test_agreeing_owned_flag_is_fine_and_not_duplicated(tmp_path: Path) -> None:
    rs = recipes_from(tmp_path, """\
        match: {model-prefix: dsv41flash, framework: vllm, precision: fp4}
        engine: vllm
        spec-tokens: 7
        base:
          args:
            tensor_parallel_size: 4
            speculative-config: {method: mtp, rejection_sample_method: synthetic}
        """)
    a = render_launch(seed_point(4, 1), rs).argv
    assert a.count("--tensor-parallel-size") == 1 and flag_value(a, "--tensor-parallel-size") == "4"
    assert json.loads(flag_value(a, "--speculative-config")) == {
        "method": "mtp", "num_speculative_tokens": 7, "rejection_sample_method": "synthetic"}


def test_flag_for_absent_feature_is_an_error(tmp_path: Path) -> None:
    rs = recipes_from(tmp_path, """\
        match: {model-prefix: dsv41flash, framework: vllm, precision: fp4}
        engine: vllm
        spec-tokens: 7
        base: {args: {data-parallel-size: 4}}
        """)
    with pytest.raises(InfxError, match="sets --data-parallel-size 4 but point seed-tp4-c1 has dp-attn=false"):
        render_launch(seed_point(4, 1), rs)


def test_topology_flags_dp_attn_ep_kv_offload(tmp_path: Path) -> None:
    rs = recipes_from(tmp_path, "match: {model-prefix: dsv41flash, framework: vllm, precision: fp4}\n"
                                "engine: vllm\nspec-tokens: 3\n")
    a = render_launch(seed_point(8, 4, **{"dp-attn": True, "ep": 8, "kv-offloading": "dram", "total-cpu-dram-gb": 1499,
                                         "kv-offload-backend": {"name": "vllm-simple"}}), rs).argv
    assert flag_value(a, "--tensor-parallel-size") == "1"
    assert flag_value(a, "--data-parallel-size") == "8"
    assert "--enable-expert-parallel" in a
    kv = json.loads(flag_value(a, "--kv-transfer-config"))
    assert kv["kv_connector"] == "SimpleCPUOffloadConnector"
    assert kv["kv_connector_extra_config"]["cpu_bytes_to_use"] == 1499 * 10**9 // 8
    with pytest.raises(InfxError, match="no KV offload backend 'nope'"):
        render_launch(seed_point(4, 1, **{"kv-offloading": "dram", "total-cpu-dram-gb": 10,
                                          "kv-offload-backend": {"name": "nope"}}), rs)


def test_multinode_and_unknown_hardware_are_errors(tmp_path: Path) -> None:
    rs = workspace_recipes()
    with pytest.raises(InfxError, match="names no known hardware"):
        render_launch(seed_point(runner="tpu-v5"), rs)
    worker = {"num-worker": 1, "tp": 8, "ep": 1, "dp-attn": False}
    row = {k: v for k, v in seed_row().items() if k not in ("tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn")}
    multinode = Point.from_row({**row, "conc": [1], "prefill": worker, "decode": worker, "disagg": True})
    with pytest.raises(InfxError, match="is multinode; recipe dsv41flash-fp4-mi355x-vllm-agentic renders single-node"):
        render_launch(multinode, rs)


def test_fingerprint_excludes_port_and_covers_env_and_image(tmp_path: Path) -> None:
    rs = recipes_from(tmp_path, LAYERED)
    p = seed_point(4, 1)
    a, b = render_launch(p, rs, port=8000), render_launch(p, rs, port=9001)
    assert a.fingerprint == b.fingerprint
    assert flag_value(a.argv, "--port") == "8000" and flag_value(b.argv, "--port") == "9001"
    c = render_launch(seed_point(4, 1, image="other:tag"), rs)
    assert c.fingerprint != a.fingerprint


METACHARS = ["; rm -rf /", "$(touch /tmp/infx-pwned)", "a'b\"c", "`id`", "x && y | z > /dev/null", "--not-a-flag"]


def test_shell_metacharacters_arrive_as_one_argv_element(tmp_path: Path) -> None:
    """Recipe and catalog values with shell syntax reach the engine as single argv elements."""
    script = "import json, sys; print(json.dumps(sys.argv[1:]))"
    rs = recipes_from(tmp_path, f"""\
        match: {{model-prefix: tinyllama, framework: vllm, precision: bf16}}
        engine: vllm
        entrypoint: [python, -c, {json.dumps(script)}]
        base:
          args:
            evil-a: {json.dumps(METACHARS[0])}
            evil-b: {json.dumps(METACHARS[1])}
            evil-c: {json.dumps(METACHARS[2])}
          env:
            EVIL: {json.dumps(METACHARS[3])}
        """)
    point = Point.from_row(tiny_row(model=METACHARS[4], image=METACHARS[5]))
    launch = render_launch(point, rs, port=1234)
    out = subprocess.run(launch.argv, capture_output=True, text=True, check=True,
                         env={**launch.env, "PATH": "/usr/bin:/bin"})
    received = json.loads(out.stdout)
    assert received[received.index("--evil-a") + 1] == METACHARS[0]
    assert received[received.index("--evil-b") + 1] == METACHARS[1]
    assert received[received.index("--evil-c") + 1] == METACHARS[2]
    assert received[received.index("--served-model-name") + 1] == METACHARS[4]
    assert not Path("/tmp/infx-pwned").exists()
    # the display form is shell-quoted, so copy-pasting it is safe too
    assert "'; rm -rf /'" in launch.display()


def test_secrets_are_redacted_when_printed(tmp_path: Path) -> None:
    rs = recipes_from(tmp_path, """\
        match: {model-prefix: dsv41flash, framework: vllm, precision: fp4}
        engine: vllm
        spec-tokens: 1
        base:
          env: {HF_TOKEN: hf_secret123, WANDB_API_KEY: k-secret, MY_TOKEN: t-secret, PLAIN: visible}
        """)
    launch = render_launch(seed_point(), rs, runtime="docker")
    shown = launch.display() + json.dumps(launch.redacted().model_dump())
    for secret in ("hf_secret123", "k-secret", "t-secret"):
        assert secret not in shown
    assert "PLAIN=visible" in shown
    # container runtime passes secrets by name only, so values never enter the argv
    assert "HF_TOKEN" in launch.argv and not any("hf_secret123" in a for a in launch.argv)
    assert launch.env["HF_TOKEN"] == "hf_secret123"  # still given to the process


def test_tinyllama_recipe_on_catalog_like_points() -> None:
    rs = workspace_recipes()
    fixed = render_launch(Point.from_row(tiny_row()), rs)
    assert fixed.argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert flag_value(fixed.argv, "--max-model-len") == "576"
    assert flag_value(fixed.argv, "--served-model-name") == "infx/tinyllama"
    assert fixed.model_builder == "tiny-model" and fixed.model_path.endswith(".infx/cache/tinyllama")
    assert fixed.env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    agentic = render_launch(Point.from_row(tiny_row(**{"scenario-type": "agentic-coding", "runner": "cluster:local",
                                                       "max-model-len": None, "isl": None, "osl": None,
                                                       "kv-offloading": "none", "total-cpu-dram-gb": 0})), rs)
    assert flag_value(agentic.argv, "--max-model-len") == "2048"
    fp16 = render_launch(Point.from_row(tiny_row(precision="fp16")), rs)
    assert flag_value(fp16.argv, "--dtype") == "float16"
