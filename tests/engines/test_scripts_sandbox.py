"""The bench-script sandbox holds, and bad scripts give per-row diagnostics naming script and line.

Scripts here are written by the tests (InferenceX-style: they source the real ``benchmark_lib.sh``
of the corpus). Needs ``bwrap``; skips with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.engines.recipes import RecipeSet
from infx.engines.render import render_launch
from infx.engines.scripts.source import ScriptSource
from infx.matrix.point import Point

CORPUS = Path("/work/shared/compat/inferencex")
for _p in Path(__file__).resolve().parents:
    if (_p / "shared" / "compat" / "inferencex").is_dir():
        CORPUS = _p / "shared" / "compat" / "inferencex"
        break
LIB = CORPUS / "benchmarks" / "benchmark_lib.sh"

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) not installed"),
    pytest.mark.skipif(not LIB.is_file(), reason="InferenceX corpus (../shared/compat/inferencex) absent"),
]

HEAD = """#!/usr/bin/env bash
set -eo pipefail
source "$(dirname "$0")/../../benchmark_lib.sh"
check_env_vars MODEL TP CONC
"""
SERVE = 'vllm serve "$MODEL" --port "$PORT" --tensor-parallel-size "$TP" --max-num-seqs "$((2 * CONC))" &\n'


def _ws(tmp_path: Path, scripts: dict[str, str]) -> Path:
    root = tmp_path / "ws"
    d = root / "benchmarks" / "single_node" / "fixed_seq_len"
    d.mkdir(parents=True)
    shutil.copy(LIB, root / "benchmarks" / "benchmark_lib.sh")
    for name, body in scripts.items():
        (d / name).write_text(body)
    return root


def _pt(framework: str = "vllm", **kw: object) -> Point:
    row = {"image": "img:1", "model": "m/M", "model-prefix": "tst", "precision": "fp8", "framework": framework,
           "runner": "b200", "isl": 1024, "osl": 1024, "tp": 2, "conc": 4, "max-model-len": 2304,
           "exp-name": "tst_1k1k", "point-id": "p1"}
    row.update(kw)
    return Point.from_row(row)


def _render(root: Path, point: Point, timeout_s: float = 10.0):
    return render_launch(point, RecipeSet([], scripts=ScriptSource(root=root, timeout_s=timeout_s)), port=9100)


def _error(root: Path, point: Point, **kw: object) -> str:
    with pytest.raises(InfxError) as exc:
        _render(root, point, **kw)  # type: ignore[arg-type]
    assert len(exc.value.diagnostics) == 1
    text = str(exc.value.diagnostics[0])
    assert "\n" not in text  # one line per point
    return text


def test_a_good_script_renders(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": HEAD + SERVE})
    launch = _render(root, _pt())
    assert launch.argv[1:] == ["-m", "vllm.entrypoints.openai.api_server", "--model", "m/M", "--port", "9100",
                              "--tensor-parallel-size", "2", "--max-num-seqs", "8"]  # local: vllm serve as the module


def test_network_is_unreachable(tmp_path: Path) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(0.5)
    port = srv.getsockname()[1]
    body = HEAD + f"exec 3<>/dev/tcp/127.0.0.1/{port}\necho leaked >&3\n" + SERVE
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": body})
    text = _error(root, _pt())
    assert "tst_fp8_b200_vllm.sh:5:" in text and "exited 1" in text
    with pytest.raises(socket.timeout):
        srv.accept()  # nothing ever connected to the host
    srv.close()


def test_writes_outside_the_throwaway_dirs_fail_and_inside_ones_vanish(tmp_path: Path) -> None:
    outside = tmp_path / "escaped.txt"
    probe = f"infx-probe-{uuid.uuid4().hex}"
    bench = "benchmarks/single_node/fixed_seq_len"
    scripts = {
        "tst_fp8_b200_vllm.sh": HEAD + f"echo x > {outside}\n" + SERVE,
        "tst_fp8_b200_sglang.sh": HEAD + f"echo x > /workspace/{bench}/planted.sh\n" + SERVE,
        "tst_fp8_b200_trt.sh": HEAD + f"echo x > /tmp/{probe}; echo x > $HOME/{probe}; echo x > /workspace/{probe}\n"
                                      + SERVE,
    }
    root = _ws(tmp_path, scripts)
    before = sorted(p.name for p in (root / bench).iterdir())
    assert "tst_fp8_b200_vllm.sh:5:" in _error(root, _pt())
    assert "Read-only file system" in _error(root, _pt("sglang"))
    _render(root, _pt("trt"))  # throwaway /tmp, $HOME and /workspace: allowed, and gone afterwards
    assert not outside.exists() and not (Path("/tmp") / probe).exists() and not (Path.home() / probe).exists()
    assert sorted(p.name for p in (root / bench).iterdir()) == before


def test_a_script_that_never_ends_is_killed(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": HEAD + "while :; do :; done\n" + SERVE})
    text = _error(root, _pt(), timeout_s=2)
    assert "tst_fp8_b200_vllm.sh" in text and "did not finish within 2 s" in text


def test_exit_1_names_script_line_and_message(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": HEAD + "\necho 'Error: unsupported TP' >&2\nexit 1\n" + SERVE})
    text = _error(root, _pt())
    assert f"{root}/benchmarks/single_node/fixed_seq_len/tst_fp8_b200_vllm.sh:7:" in text
    assert "bench script exited 1: Error: unsupported TP" in text and "point p1" in text


def test_missing_variable_names_it(tmp_path: Path) -> None:
    body = HEAD.replace("check_env_vars MODEL TP CONC", "check_env_vars MODEL TP NOT_SET_ANYWHERE") + SERVE
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": body})
    text = _error(root, _pt())
    assert "tst_fp8_b200_vllm.sh:4:" in text and "NOT_SET_ANYWHERE" in text and "not set" in text


def test_launching_nothing_is_an_error(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": HEAD + "hf download \"$MODEL\"\n"})
    assert "launched no server (it ran: hf)" in _error(root, _pt())


def test_missing_and_unreadable_scripts(tmp_path: Path) -> None:
    root = _ws(tmp_path, {})
    text = _error(root, _pt())
    assert "no bench script" in text and "tst_fp8_b200_vllm.sh" in text and "tst_fp8_b200.sh" in text
    (root / "benchmarks/single_node/fixed_seq_len/tst_fp8_b200_vllm.sh").symlink_to(tmp_path / "gone.sh")
    text = _error(root, _pt())
    assert "tst_fp8_b200_vllm.sh" in text and "not readable" in text


def test_unknown_framework(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"tst_fp8_b200_foo.sh": HEAD + SERVE})
    text = _error(root, _pt("foo"))
    assert "tst_fp8_b200_foo.sh" in text and "framework 'foo'" in text


def test_no_sandbox_is_a_clear_error_never_an_unsandboxed_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "ran"
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": HEAD + f"touch {marker}\n" + SERVE})
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no bwrap on PATH
    with pytest.raises(InfxError) as exc:
        _render(root, _pt())
    assert "bubblewrap" in str(exc.value) and not marker.exists()


def test_plan_shows_script_hash_argv_and_redacted_env(tmp_path: Path) -> None:
    from infx.engines.plan import build_plan, format_plan

    body = HEAD + "export HF_TOKEN=hf_do_not_print_me VLLM_EXTRA=1\n" + SERVE
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": body})
    recipes = RecipeSet([], scripts=ScriptSource(root=root))
    plan = build_plan([_pt(conc=4), _pt(conc=8, **{"point-id": "p2"})], recipes, port=9100)
    text = format_plan(plan)
    assert "hf_do_not_print_me" not in text and "hf_do_not_print_me" not in plan.model_dump_json()
    assert "HF_TOKEN='***'" in text and "VLLM_EXTRA=1" in text
    assert "script: benchmarks/single_node/fixed_seq_len/tst_fp8_b200_vllm.sh  sha256 " in text
    assert "--max-num-seqs 8" in text and "--max-num-seqs 16" in text  # one launch per concurrency here
    assert len(plan.groups) == 2


CATALOG = """tst-fp8-b200-vllm:
  image: vllm/vllm-openai:v0.11.0
  model: m/M
  model-prefix: tst
  runner: b200
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - { tp: 2, conc-list: [4, 8] }
"""
RUNNERS = """labels:
  b200:
    - b200-nb_0
"""


def test_cli_exit_codes_failing_rows_1_workspace_errors_2(tmp_path: Path) -> None:
    body = HEAD + '[ "$CONC" -lt 8 ] || { echo "Error: CONC=$CONC unsupported" >&2; exit 1; }\n' + SERVE
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": body})
    (root / "configs").mkdir()
    (root / "configs" / "tst-master.yaml").write_text(CATALOG)
    (root / "configs" / "runners.yaml").write_text(RUNNERS)
    (root / "infx.toml").write_text("")

    def infx(*args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "infx", "--workspace", str(root), *args], capture_output=True,
                              text=True, cwd=root, timeout=300, env={**os.environ, **(env or {})})

    pf = infx("preflight", "--json")
    assert pf.returncode == 1, pf.stderr
    verdicts = {v["exp_name"] + str(i): v for i, v in enumerate(json.loads(pf.stdout))}
    failed = [v for v in verdicts.values() if v["status"] == "fail"]
    assert len(failed) == 1  # only the conc-8 row; the conc-4 row renders
    (launch,) = [c for c in failed[0]["checks"] if c["name"] == "launch"]
    assert "tst_fp8_b200_vllm.sh:5:" in launch["message"] and "Error: CONC=8 unsupported" in launch["message"]
    no_bwrap = infx("preflight", env={"PATH": str(tmp_path / "no-bin"), "INFX_CACHE_DIR": str(tmp_path / "fresh")})
    assert no_bwrap.returncode == 2 and "bubblewrap" in no_bwrap.stderr and "Traceback" not in no_bwrap.stderr


# ---- what the sandbox pretends (docs/architecture.md): a node's facts a script may probe -----------------

NODE_PROBES = '''
SNAP=$(hf download org/Target)                       # hub-cache layout, path on stdout
hf download org/Draft --local-dir /data/models/Draft  # --local-dir layout, outside the tmpfs dirs
CACHE="${HF_HUB_CACHE%/}/models--org--Target"
[[ "$SNAP" == "$CACHE/snapshots/$(<"$CACHE/refs/main")" ]] || { echo "Error: bad snapshot $SNAP" >&2; exit 1; }
SHARDS=$(python3 - "$SNAP" /data/models/Draft <<'PY'
import json, os, sys
n = 0
for d in sys.argv[1:]:
    for f in ("config.json", "tokenizer_config.json"):
        assert os.path.isfile(os.path.join(d, f)), f
    for s in set(json.load(open(os.path.join(d, "model.safetensors.index.json")))["weight_map"].values()):
        assert os.path.isfile(os.path.join(d, s)), s
        n += 1
print(n)
PY
)
ROOT="$(python3 -c 'import importlib.util as u, os; \
print(os.path.dirname(os.path.dirname(u.find_spec("vllm").origin)))')"
[ -d "$ROOT/vllm" ] && [ -d "$ROOT/aiter" ] || { echo "Error: no dist-packages ($ROOT)" >&2; exit 1; }
python3 -c "from mooncake.store import MooncakeDistributedStore" >/dev/null  # container-only: silent success
RAIL=""
for d in mlx5_0 mlx5_1; do grep -q ACTIVE "/sys/class/infiniband/$d/ports/1/state" 2>/dev/null \
&& { RAIL=$d; break; }; done
[ -n "$RAIL" ] || { echo "Error: no active RDMA rail" >&2; exit 1; }
SHM_GB=$(df -BG --output=avail /dev/shm | tail -1 | tr -dc '0-9')
mooncake_master --port 50051 > /tmp/master.log 2>&1 &
MASTER=$!
sleep 2
kill -0 "$MASTER"
if [ -e /data/leak ] || [ -e /mnt/leak ]; then echo "Error: a previous script's files are still here" >&2; exit 1; fi
mkdir -p /mnt && touch /data/leak /mnt/leak
'''


def test_node_probes_see_what_the_sandbox_pretends(tmp_path: Path) -> None:
    body = HEAD + NODE_PROBES + ('vllm serve "$SNAP" --port "$PORT" --shards "$SHARDS" --root "$ROOT" '
                                 '--rail "$RAIL" --shm-gb "$SHM_GB" --max-num-seqs "$CONC" &\n')
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": body})
    src = ScriptSource(root=root, timeout_s=10.0, batch=2)  # one sandbox for both
    recipes = RecipeSet([], scripts=src)
    p4, p8 = _pt(conc=4), _pt(conc=8, **{"point-id": "p2"})
    src.prefetch([p4, p8])  # one sandbox, two scripts in a row: the second sees none of the first's files
    assert src.stats["rendered"] == 2
    for p in (p4, p8):
        argv = render_launch(p, recipes, port=9100).argv
        a = dict(zip(argv[3::2], argv[4::2], strict=True))  # flag, value, flag, value...
        assert a["--model"] == "/mnt/hf_hub_cache/models--org--Target/snapshots/infx-render-placeholder"
        assert a["--shards"] == "2" and a["--root"] == "/tmp/.infx-site/dist-packages" and a["--rail"] == "mlx5_0"
        assert int(a["--shm-gb"]) >= 1400  # half of a 3 TiB node, whatever the render host has
        assert a["--max-num-seqs"] == str(p.conc)
    assert not Path("/data/leak").exists() and not Path("/mnt/leak").exists()


def test_inline_python_runs_for_real(tmp_path: Path) -> None:
    # The host's interpreter answers stdlib programs; a failing one is the container's silent success.
    body = HEAD + ('N=$(python3 -c "print(6 * 7)")\nM=$(python3 -c "import vllm_only_in_the_image; print(1)")\n'
                   'vllm serve "$MODEL" --n "$N" --m "x$M" &\n')
    root = _ws(tmp_path, {"tst_fp8_b200_vllm.sh": body})
    argv = _render(root, _pt()).argv
    assert argv[argv.index("--n") + 1] == "42" and argv[argv.index("--m") + 1] == "x"


def test_every_stand_in_file_is_in_the_render_cache_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from infx.engines.scripts import sandbox

    copy = tmp_path / "sandbox"
    shutil.copytree(sandbox.HERE, copy)
    monkeypatch.setattr(sandbox, "HERE", copy)
    sandbox.sandbox_version.cache_clear()
    try:
        v0 = sandbox.sandbox_version()
        (copy / "shim.sh").write_text((copy / "shim.sh").read_text() + "\n# changed\n")
        sandbox.sandbox_version.cache_clear()
        v1 = sandbox.sandbox_version()
        (copy / "new-stand-in.txt").write_text("x")  # a stand-in added later counts too
        sandbox.sandbox_version.cache_clear()
        v2 = sandbox.sandbox_version()
        monkeypatch.setattr(sandbox, "SHM_MIB", sandbox.SHM_MIB + 1)  # so do the pretended node's facts
        sandbox.sandbox_version.cache_clear()
        v3 = sandbox.sandbox_version()
        assert len({v0, v1, v2, v3}) == 4
    finally:
        monkeypatch.undo()
        sandbox.sandbox_version.cache_clear()
