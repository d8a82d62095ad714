"""InferenceX bench scripts as a recipe source: real scripts of ../shared/compat/inferencex rendered
by executing them in the bubblewrap sandbox, checked against what the scripts say (read by hand).

Needs ``bwrap`` (Debian ``bubblewrap``) and the corpus; each test skips with the reason otherwise.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from infx.engines.launch import PORT_PLACEHOLDER
from infx.engines.recipes import workspace_recipes
from infx.engines.render import render_launch
from infx.engines.scripts.locate import locate_script, script_names, workflow_env
from infx.engines.scripts.source import ScriptSource
from infx.matrix.point import Point
from infx.preflight.launchargs import engine_settings, parse_argv
from infx.workspace import at

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "compat" / "inferencex"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/compat/inferencex")

pytestmark = [
    pytest.mark.skipif(not (CORPUS / "benchmarks").is_dir(),
                       reason="InferenceX corpus (../shared/compat/inferencex) absent"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) not installed"),
]


def _row(**kw: object) -> dict:
    row = {"image": "img:1", "model": "m/M", "model-prefix": "dsr1", "precision": "fp4", "framework": "sglang",
           "runner": "b200", "isl": 1024, "osl": 1024, "tp": 8, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 4,
           "max-model-len": 2304, "ep": 1, "dp-attn": False, "spec-decoding": "none", "exp-name": "dsr1_1k1k",
           "disagg": False, "run-eval": False, "point-id": "p0"}
    row.update({k.replace("_", "-"): v for k, v in kw.items()})
    return row


def _pt(**kw: object) -> Point:
    return Point.from_row(_row(**kw))


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    """A workspace made from the corpus: catalogs, runners and the real benchmarks/ tree."""
    root = tmp_path / "ws"
    (root / "configs").mkdir(parents=True)
    for f in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
        shutil.copy(CORPUS / f, root / "configs" / f)
    (root / "benchmarks").symlink_to(CORPUS / "benchmarks")
    (root / "infx.toml").write_text("")
    return root


def _launch(ws: Path, point: Point, runtime: str = "docker"):
    recipes = workspace_recipes(None, at(ws))
    return render_launch(point, recipes, runtime=runtime, port=9000)  # type: ignore[arg-type]


def _engine_argv(launch) -> list[str]:
    """The server argv inside the container runtime's wrapper (after the image)."""
    i = launch.argv.index(launch.image)
    return launch.argv[i + 1:]


# ---- the launchers' rule ----------------------------------------------------------------------------------

def test_script_names_follow_the_launchers() -> None:
    assert script_names(_pt(framework="trt"), "b200") == ["dsr1_fp4_b200_trt.sh"]
    assert script_names(_pt(framework="vllm", spec_decoding="mtp"), "b200") == ["dsr1_fp4_b200_vllm_mtp.sh",
                                                                               "dsr1_fp4_b200_mtp.sh"]
    assert script_names(_pt(framework="atom"), "mi355x") == ["dsr1_fp4_mi355x_atom.sh"]
    assert script_names(_pt(framework="sglang"), "mi355x") == ["dsr1_fp4_mi355x_sglang.sh", "dsr1_fp4_mi355x.sh"]
    # no engine in the name
    assert script_names(_pt(framework="sglang", precision="fp8"), "h100") == ["dsr1_fp8_h100.sh"]


def test_locate_prefers_framework_tagged_then_falls_back(ws: Path) -> None:
    tagged = locate_script(_pt(model_prefix="dsv4", exp_name="dsv4_1k1k", framework="vllm"), ws)
    assert tagged is not None and tagged.path == "benchmarks/single_node/fixed_seq_len/dsv4_fp4_b200_vllm.sh"
    legacy = locate_script(_pt(framework="trt", spec_decoding="mtp"), ws)
    assert legacy is not None and legacy.path == "benchmarks/single_node/fixed_seq_len/dsr1_fp4_b200_trt_mtp.sh"
    agentic = locate_script(_pt(model_prefix="dsv4", exp_name="dsv4_x", framework="vllm", spec_decoding="mtp",
                                scenario_type="agentic-coding", runner="cluster:b200-dgxc"), ws)
    assert agentic is not None and agentic.path == "benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh"


def test_workflow_env_is_the_templates_contract() -> None:
    env = workflow_env(_pt(dp_attn=True, ep=8, conc=32), 32, "x.sh")
    assert env["DP_ATTENTION"] == "true" and env["EP_SIZE"] == "8" and env["CONC"] == "32"
    assert env["SCENARIO_SUBDIR"] == "fixed_seq_len/" and env["IS_AGENTIC"] == "0"
    assert env["RESULT_DIR"] == "/workspace/results"
    assert env["PP_SIZE"] == "1" and env["MAX_MODEL_LEN"] == "2304" and env["RANDOM_RANGE_RATIO"] == "0.8"


# ---- real scripts, all four frameworks, both scenarios ----------------------------------------------------

def test_sglang_scheduler_interval_follows_conc_and_dp_attention_branch(ws: Path) -> None:
    # dsr1_fp4_b200.sh: CONC >= 16 -> --scheduler-recv-interval 30, else 10; DP_ATTENTION=true -> 1,
    # --data-parallel-size=TP, --enable-dp-attention, chunked prefill 32768, --schedule-conservativeness 3.33.
    low = parse_argv(_engine_argv(_launch(ws, _pt(conc=8, point_id="a"))))
    high = parse_argv(_engine_argv(_launch(ws, _pt(conc=16, point_id="b"))))
    dpa_l = _launch(ws, _pt(conc=64, dp_attn=True, ep=8, point_id="c"))
    dpa = parse_argv(_engine_argv(dpa_l))
    assert low["scheduler-recv-interval"] == "10" and high["scheduler-recv-interval"] == "30"
    assert low["data-parallel-size"] == "1" and "enable-dp-attention" not in low
    assert dpa["scheduler-recv-interval"] == "1" and dpa["data-parallel-size"] == "8"
    assert dpa["enable-dp-attention"] is True and dpa["chunked-prefill-size"] == "32768"
    assert dpa["schedule-conservativeness"] == "3.33" and dpa["ep-size"] == "8"
    argv = _engine_argv(dpa_l)
    assert argv[:3] == ["python3", "-m", "sglang.launch_server"]
    assert dpa_l.env["SGLANG_RADIX_FORCE_MISS"] == "1" and dpa_l.env["PYTHONNOUSERSITE"] == "1"
    assert dpa_l.script == "benchmarks/single_node/fixed_seq_len/dsr1_fp4_b200.sh" and dpa_l.script_sha256
    assert dpa_l.client and dpa_l.client[0][0] == "client" and "--max-concurrency" in dpa_l.client[0]


def test_trt_runs_under_mpirun_with_its_config_file(ws: Path) -> None:
    # dsv4_fp4_b200_trt.sh writes dsv4-fp4-trt.yml and starts `mpirun -n 1 ... trtllm-serve ... --config FILE`.
    launch = _launch(ws, _pt(model_prefix="dsv4", exp_name="dsv4_1k1k", framework="trt", conc=16))
    argv = _engine_argv(launch)
    assert argv[:2] == ["mpirun", "-n"] and "trtllm-serve" in argv
    assert argv[argv.index("--config") + 1] == "dsv4-fp4-trt.yml"
    assert set(launch.files) == {"dsv4-fp4-trt.yml"}
    import yaml

    opts = yaml.safe_load(launch.files["dsv4-fp4-trt.yml"])
    assert isinstance(opts, dict) and opts
    s = engine_settings("trt", launch.argv, launch.env, files=launch.files, point_tp=8)
    assert s.options == opts  # the gate reads the file the script wrote
    assert launch.engine == "trt" and "-w" in launch.argv  # the file is mounted as the container's workdir


def test_agentic_vllm_capture_sizes_and_max_num_seqs(ws: Path) -> None:
    # dsv4_fp4_b200_vllm_mtp.sh (agentic): MAX_NUM_SEQS = 2*CONC (2*CONC/TP under DP-attention); capture sizes
    # are multiples of (1 + 3 speculative tokens) up to MAX_NUM_SEQS*4, plus 100..500 without DP-attention.
    p = _pt(model_prefix="dsv4", exp_name="dsv4_agentic", framework="vllm", spec_decoding="mtp",
            scenario_type="agentic-coding", runner="cluster:b200-dgxc", conc=8, kv_offloading="none",
            total_cpu_dram_gb=0, duration=1800, max_model_len=None, isl=None, osl=None)
    launch = _launch(ws, p)
    args = parse_argv(_engine_argv(launch))
    assert args["max-num-seqs"] == "16"
    cc = json.loads(args["compilation-config"])  # type: ignore[arg-type]
    assert cc["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    assert cc["cudagraph_capture_sizes"] == sorted({4 * s for s in range(1, 17)} | {100, 200, 300, 400, 500})
    assert json.loads(args["speculative-config"])["num_speculative_tokens"] == 3  # type: ignore[arg-type]
    assert launch.env["VLLM_ENGINE_READY_TIMEOUT_S"] == "3600"
    s = engine_settings("vllm", launch.argv, launch.env, point_tp=8)
    assert s.max_num_seqs.value == 16 and s.graph_ceiling.value == 500 and s.kv_cache_dtype.value == "fp8"
    assert s.memory_fraction.value == 0.90 and s.memory_fraction.source == "argv"  # GPU_MEMORY_UTILIZATION default
    assert s.max_model_len.value == 1048576 and s.spec_tokens.value == 3
    dep = _launch(ws, p.model_copy(update={"dp_attn": True, "ep": 8, "conc": 32, "point_id": "dep"}))
    dargs = parse_argv(_engine_argv(dep))
    assert dargs["max-num-seqs"] == "8" and dargs["data-parallel-size"] == "8"  # 2*32/8
    assert json.loads(dargs["compilation-config"])["cudagraph_mode"] == "FULL_DECODE_ONLY"  # type: ignore[arg-type]
    replay = [c for c in launch.client if c[0] == "replay"]
    assert replay and "--concurrency" in replay[0] and replay[0][replay[0].index("--concurrency") + 1] == "8"


def test_atom_fixed_and_sglang_agentic(ws: Path) -> None:
    atom = _launch(ws, _pt(framework="atom", runner="mi355x", conc=4, tp=4, isl=8192, osl=1024, max_model_len=9472))
    argv = _engine_argv(atom)
    assert argv[:3] == ["python3", "-m", "atom.entrypoints.openai_server"] and atom.engine == "atom"
    assert argv[argv.index("-tp") + 1] == "4" and argv[argv.index("--kv_cache_dtype") + 1] == "fp8"
    assert argv[argv.index("--server-port") + 1] == "9000"  # the sweep's port, not the script's 8888
    sg = _launch(ws, _pt(model_prefix="qwen3.5", exp_name="qwen3.5_agentic", precision="fp4", framework="sglang",
                         spec_decoding="mtp", scenario_type="agentic-coding", runner="cluster:b300-nv", conc=4,
                         kv_offloading="none", total_cpu_dram_gb=0, duration=1800, max_model_len=None, isl=None,
                         osl=None))
    assert _engine_argv(sg)[:3] == ["python3", "-m", "sglang.launch_server"]
    assert any(c[0] == "replay" for c in sg.client)


def test_fingerprint_carries_script_and_lib_hashes(ws: Path, tmp_path: Path) -> None:
    a = _launch(ws, _pt(conc=8))
    copy = tmp_path / "ws2"
    shutil.copytree(ws, copy, symlinks=False)
    script = copy / "benchmarks/single_node/fixed_seq_len/dsr1_fp4_b200.sh"
    script.write_text(script.read_text() + "\n# a comment changes the script's hash\n")
    b = _launch(copy, _pt(conc=8))
    assert _engine_argv(a) == _engine_argv(b) and a.env == b.env
    assert a.script_sha256 != b.script_sha256 and a.fingerprint != b.fingerprint
    assert a.lib_sha256 == b.lib_sha256


def test_renders_are_cached_by_content(ws: Path) -> None:
    src = ScriptSource(root=ws)
    pts = [_pt(conc=c, point_id=f"p{c}") for c in (1, 2, 4)]
    src.prefetch(pts)
    assert src.stats == {"rendered": 3, "cached": 0}
    again = ScriptSource(root=ws)
    again.prefetch(pts)
    assert again.stats == {"rendered": 0, "cached": 3}
    assert again.renders == src.renders and len(src.renders) == 3


def test_port_placeholder_never_leaks(ws: Path) -> None:
    launch = _launch(ws, _pt(conc=4))
    assert PORT_PLACEHOLDER not in " ".join(launch.argv) and "9000" in launch.argv


def test_dp_attention_engine_behind_a_router_gets_the_sweeps_port(ws: Path) -> None:
    # dsv4_fp4_b200_vllm_mtp.sh under DP-attention starts vLLM on $PORT+1 behind vllm-router on $PORT;
    # the rendered launch is the engine, on infx's port.
    p = _pt(model_prefix="dsv4", exp_name="dsv4_agentic", framework="vllm", spec_decoding="mtp",
            scenario_type="agentic-coding", runner="cluster:b200-dgxc", conc=32, dp_attn=True, ep=8,
            kv_offloading="none", total_cpu_dram_gb=0, duration=1800, max_model_len=None, isl=None, osl=None)
    argv = _engine_argv(_launch(ws, p))
    assert argv[argv.index("--port") + 1] == "9000" and "8889" not in argv


CATALOG_KEYS = {  # key -> (engine, argv head): every framework, both scenarios, rows straight from the catalogs
    "dsr1-fp4-b200-sglang": ("sglang", ["python3", "-m", "sglang.launch_server"]),
    "dsv4-fp4-b200-trt": ("trt", ["mpirun", "-n", "1"]),
    "dsr1-fp4-mi355x-atom": ("atom", ["python3", "-m", "atom.entrypoints.openai_server"]),
    "dsv4-fp4-b200-vllm-agentic-mtp": ("vllm", ["vllm", "serve"]),
    "qwen3.5-fp8-b200-sglang-agentic-mtp": ("sglang", ["python3", "-m", "sglang.launch_server"]),
    "kimik3-fp4-mi355x-atom-agentic-mtp": ("atom", ["python", "-m", "atom.entrypoints.openai_server"]),
}


def test_real_catalog_rows_render(ws: Path) -> None:
    from infx.engines.plan import build_plan
    from infx.matrix.select import keyed_points

    masters = [ws / "configs/amd-master.yaml", ws / "configs/nvidia-master.yaml"]
    keyed = keyed_points(masters, ws / "configs/runners.yaml", list(CATALOG_KEYS), "none")
    plan = build_plan([p for _, p in keyed], workspace_recipes(None, at(ws)), runtime="docker",
                      config_keys={p.point_id: k for k, p in keyed})
    assert {pp.config_key for pp in plan.points} == set(CATALOG_KEYS)
    scenarios = set()
    for pp in plan.points:
        engine, head = CATALOG_KEYS[pp.config_key]  # type: ignore[index]
        launch = pp.launch
        assert launch is not None and launch.engine == engine and launch.script
        assert _engine_argv(launch)[: len(head)] == head, (pp.config_key, _engine_argv(launch)[:4])
        argv = _engine_argv(launch)
        tp_flag = next(f for f in ("--tp", "--tp-size", "--tp_size", "--tensor-parallel-size", "-tp") if any(
            a == f or a.startswith(f + "=") for a in argv))
        i = next(i for i, a in enumerate(argv) if a == tp_flag or a.startswith(tp_flag + "="))
        tp = argv[i].split("=", 1)[1] if "=" in argv[i] else argv[i + 1]
        assert int(tp) in (pp.tp, 1), (pp.config_key, tp_flag, tp, pp.tp)  # 1: DP-attention arms run TP 1 x DP
        scenarios.add(pp.scenario_type)
    assert scenarios == {"fixed-seq-len", "agentic-coding"}


# ---- what the sandbox pretends: rows whose scripts probe a real node ---------------------------------------

NODE_PROBE_KEYS = (
    "minimaxm3-fp8-h200-vllm-agentic-mtp",  # snapshot completeness in the hub cache after `hf download`
    "minimaxm3-fp4-b200-vllm-agentic-mtp",  # draft head `hf download --local-dir`, then config.json + shards
    "kimik3-fp4-b300-vllm-agentic-dspark",  # an ACTIVE port under /sys/class/infiniband for Mooncake
    "kimik3-fp4-mi355x-vllm-agentic-mtp",  # the container's dist-packages (apply_k3_container_patches.sh)
    "minimaxm3-fp4-mi355x-vllm-agentic-mtp",  # LMCache L1 must fit 90% of free /dev/shm
    "minimaxm3-fp8-h100-vllm-agentic-mtp",  # `kill -0` on the backgrounded mooncake_master
)


def test_rows_that_probe_the_node_render_with_the_scripts_argv(ws: Path) -> None:
    from infx.engines.plan import build_plan
    from infx.matrix.select import keyed_points

    masters = [ws / "configs/amd-master.yaml", ws / "configs/nvidia-master.yaml"]
    keyed = keyed_points(masters, ws / "configs/runners.yaml", list(NODE_PROBE_KEYS), "none")
    plan = build_plan([p for _, p in keyed], workspace_recipes(None, at(ws)), runtime="docker",
                      config_keys={p.point_id: k for k, p in keyed})
    by_key: dict[str, list] = {}
    for pp in plan.points:
        assert pp.launch is not None and pp.launch.script, (pp.config_key, pp.conc)
        by_key.setdefault(pp.config_key, []).append(pp)
    assert set(by_key) == set(NODE_PROBE_KEYS)

    def args(pp) -> dict:
        return parse_argv(_engine_argv(pp.launch))

    # h200: MODEL_PATH is the snapshot the script resolved from refs/main in $HF_HUB_CACHE
    for pp in by_key["minimaxm3-fp8-h200-vllm-agentic-mtp"]:
        argv = _engine_argv(pp.launch)
        assert argv[:3] == ["vllm", "serve",
                            "/mnt/hf_hub_cache/models--MiniMaxAI--MiniMax-M3-MXFP8/snapshots/infx-render-placeholder"]
        assert args(pp)["max-num-seqs"] == str(2 * pp.conc)
    # b200: the draft head staged next to the target; the server takes the repo id as the model
    for pp in by_key["minimaxm3-fp4-b200-vllm-agentic-mtp"]:
        assert _engine_argv(pp.launch)[:3] == ["vllm", "serve", "nvidia/MiniMax-M3-NVFP4"]
        assert json.loads(args(pp)["speculative-config"])["model"] == "nvidia/MiniMax-M3-EAGLE3-GQA"  # type: ignore[arg-type]
    # b300: the Mooncake branch ran to the server (rail found), and every rank shares its config
    k3 = by_key["kimik3-fp4-b300-vllm-agentic-dspark"]
    assert all(json.loads(args(pp)["kv-transfer-config"])["kv_connector"] == "MooncakeStoreConnector"  # type: ignore[arg-type]
               for pp in k3)
    assert all(pp.launch.env["MOONCAKE_CONFIG_PATH"] == "/workspace/results/mooncake_config.json" for pp in k3)
    # mi355x kimik3: the patch script found vllm+aiter, and the script's fixed sequence cap reaches the server
    for pp in by_key["kimik3-fp4-mi355x-vllm-agentic-mtp"]:
        s = engine_settings("vllm", pp.launch.argv, pp.launch.env, point_tp=pp.tp)
        assert args(pp)["max-num-seqs"] == "20" and s.max_num_seqs.value == 20
    # mi355x minimaxm3: LMCache rows get the MP connector (the /dev/shm check passed)
    lm = [pp for pp in by_key["minimaxm3-fp4-mi355x-vllm-agentic-mtp"] if pp.kv_offloading == "dram"]
    assert lm and all(json.loads(args(pp)["kv-transfer-config"])["kv_connector"] == "LMCacheMPConnector"  # type: ignore[arg-type]
                      for pp in lm)
    # h100: DRAM rows keep their mooncake_master up past `kill -0`, and get the store connector
    dram = [pp for pp in by_key["minimaxm3-fp8-h100-vllm-agentic-mtp"] if pp.kv_offloading == "dram"]
    assert dram and all(json.loads(args(pp)["kv-transfer-config"])["kv_connector"] == "MooncakeStoreConnector"  # type: ignore[arg-type]
                        for pp in dram)
