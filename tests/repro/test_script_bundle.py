"""A launch rendered from an InferenceX bench script (issue 27) bundles the script's path, sha256 and text and
the lib's sha256; its launch replays to the same config hash; `infx diff-env` between two renders whose script
differs by one comment shows exactly that hash. The renders are real (the corpus' script executed in the
bubblewrap sandbox, as tests/engines/test_scripts.py does); no engine starts."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from infx.repro.diffenv import diff_env, load_payload
from infx.repro.replay import replay_launch
from tests.engines import test_scripts
from tests.engines.test_scripts import CORPUS, _launch, _pt
from tests.repro.helpers import REPO, bundle

pytestmark = test_scripts.pytestmark  # the same skips: no corpus, no bubblewrap
ws = test_scripts.ws  # the corpus workspace fixture

SCRIPT = "benchmarks/single_node/fixed_seq_len/dsr1_fp4_b200.sh"


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_scripted_launch_bundles_its_script_and_lib_hashes_and_diff_env_shows_them(ws: Path, tmp_path: Path) -> None:
    point = _pt(conc=8)
    la = _launch(ws, point, runtime="local")  # docker would name its container by the fingerprint: derived
    assert la.script == SCRIPT
    a = bundle(tmp_path / "ra", "run-a", point, la)
    pa = load_payload(a)
    r = pa.recipe
    assert r.bench_script is not None and r.bench_script.path == SCRIPT
    assert r.bench_script.sha256 == _sha(ws / SCRIPT) == la.script_sha256 and r.sha256 == la.script_sha256
    assert r.bench_script.size == (ws / SCRIPT).stat().st_size
    assert r.bench_script_text == (ws / SCRIPT).read_text() and r.text is None  # the text once, as the script's
    assert r.lib_hashes == {"benchmark_lib.sh": _sha(CORPUS / "benchmarks/benchmark_lib.sh")}
    # the port-free argv is found (the fingerprint carries the script facts) and replays to the config hash
    assert pa.argv_template and "{port}" in pa.argv_template
    assert replay_launch(pa, 9100).fingerprint == pa.config_hash == la.fingerprint
    # the same row from a workspace whose script differs by a comment: only the script's hash differs
    copy = tmp_path / "ws2"
    shutil.copytree(ws, copy, symlinks=False)
    (copy / SCRIPT).write_text((copy / SCRIPT).read_text() + "\n# a comment changes the script's hash\n")
    lb = _launch(copy, point, runtime="local")
    pb = load_payload(bundle(tmp_path / "rb", "run-b", point, lb))
    assert pb.recipe.bench_script and pb.recipe.bench_script.sha256 == _sha(copy / SCRIPT)
    assert [(d.group, d.key, d.a, d.b) for d in diff_env(pa, pb)] == [
        ("script", "bench script sha256", la.script_sha256, lb.script_sha256)]
    # in a container the wrapper names it by the fingerprint: a derived digest, left out like the others
    da, db = (load_payload(bundle(tmp_path / f"d{k}", f"run-d{k}", point, _launch(w, point)))
              for k, w in ((1, ws), (2, copy)))
    assert "--name" in da.argv_template and da.argv_template != db.argv_template
    assert [(d.group, d.key) for d in diff_env(da, db)] == [("script", "bench script sha256")]
    # the lib's hash is compared too
    pc = pb.model_copy(update={"recipe": pb.recipe.model_copy(update={"lib_hashes": {"benchmark_lib.sh": "0" * 64}})})
    assert [(d.group, d.key) for d in diff_env(pb, pc)] == [("script", "lib benchmark_lib.sh sha256")]
    cli = subprocess.run([sys.executable, "-m", "infx", "diff-env", str(a), str(tmp_path / "rb" / "run-b" / "points"
                                                                               / point.point_id)],
                         cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.splitlines() == ["script:", f"  bench script sha256: {la.script_sha256} -> {lb.script_sha256}"]
    assert "1 difference(s)" in cli.stderr
