"""Rendering bench scripts several sandboxes at once gives exactly what the serial path gives, and a
render does not depend on the scripts rendered before or beside it.

Real scripts of ../shared/compat/inferencex, chosen so that some derive values from PIDs (the agentic
scripts' ``/tmp/inferencex-agentic-$$`` and ``--server-pid``). Needs ``bwrap`` and the corpus.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from infx.engines.scripts.locate import workflow_env
from infx.engines.scripts.sandbox import JobResult, run_many
from infx.engines.scripts.source import ScriptSource
from infx.matrix.point import Point
from infx.matrix.select import keyed_points

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "compat" / "inferencex"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/compat/inferencex")

pytestmark = [
    pytest.mark.skipif(not (CORPUS / "benchmarks").is_dir(),
                       reason="InferenceX corpus (../shared/compat/inferencex) absent"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) not installed"),
]

#: Scripts whose renders carry a PID of the sandbox (agentic) and one whose render does not (fixed).
SCRIPTS = ("agentic/dsv4_fp4_b200_vllm_mtp.sh", "agentic/minimaxm3_fp8_h200_mtp.sh",
           "fixed_seq_len/dsv4_fp8_h200.sh")


@pytest.fixture(scope="module")
def corpus_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    (root / "configs").mkdir()
    for f in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
        shutil.copy(CORPUS / f, root / "configs" / f)
    (root / "benchmarks").symlink_to(CORPUS / "benchmarks")
    return root


def _jobs(root: Path) -> list[tuple[str, dict[str, str]]]:
    """Two catalog points (two concurrencies) of each of :data:`SCRIPTS`: (script, workflow env)."""
    src = ScriptSource(root=root)
    picked: dict[str, list[Point]] = {s: [] for s in SCRIPTS}
    for _, p in keyed_points([root / "configs" / "nvidia-master.yaml", root / "configs" / "amd-master.yaml"],
                             root / "configs" / "runners.yaml", None):
        lk = None if p.multinode else src.lookup(p)
        if lk is None or lk.path is None:
            continue
        for s in SCRIPTS:
            if lk.path.endswith(s) and len(picked[s]) < 2:
                picked[s].append(p)
    assert all(len(v) == 2 for v in picked.values()), {k: len(v) for k, v in picked.items()}
    return [(f"benchmarks/single_node/{s}", workflow_env(p, p.concs[0], f"benchmarks/single_node/{s}"))
            for s, pts in picked.items() for p in pts]


def test_parallel_renders_equal_the_serial_path_and_do_not_depend_on_their_neighbours(
        corpus_ws: Path, tmp_path: Path) -> None:
    jobs = _jobs(corpus_ws)
    bench, state = corpus_ws / "benchmarks", tmp_path / "state"
    serial = run_many(bench, jobs, state_dir=state, workers=1)
    assert all(r.rc == 0 and any(x.kind == "server" for x in r.records) for r in serial)
    parallel = run_many(bench, jobs, state_dir=state, workers=3, cost=[len(j[0]) for j in jobs])
    backwards = run_many(bench, jobs[::-1], state_dir=state, workers=1)[::-1]
    for s, p, b in zip(serial, parallel, backwards, strict=True):
        # exit status and every record (argv, env, files); the log tail is the trace, where a pipeline's
        # processes may interleave in any order, and is read only for a failed script's message
        assert s.rc == p.rc == b.rc
        assert s.model_dump()["records"] == p.model_dump()["records"] == b.model_dump()["records"]
    # the PID-derived values are there (the agentic venv under /tmp/inferencex-agentic-$$), and the same in
    # every agentic job: each script ran as the same PID of a sandbox of its own
    pid_paths = {" ".join(re.findall(r"/tmp/inferencex-agentic-\d+/", " ".join(x.env.values())))
                 for r in serial[:4] for x in r.records if x.kind == "server"}
    assert len(pid_paths) == 1 and pid_paths != {""}


def test_one_sandbox_for_several_scripts_is_not_the_default(corpus_ws: Path, tmp_path: Path) -> None:
    # Two scripts in one sandbox: the second's processes get other PIDs (why each job gets its own).
    jobs = _jobs(corpus_ws)[:2]
    bench, state = corpus_ws / "benchmarks", tmp_path / "state"
    alone = run_many(bench, jobs, state_dir=state, workers=1)
    shared = run_many(bench, jobs, state_dir=state, workers=1, batch=2)
    assert alone[0].model_dump()["records"] == shared[0].model_dump()["records"]

    def launch(r: JobResult) -> list[object]:  # what a launch is made of; INFX_REC names the job's slot
        return [(x.kind, x.argv, {k: v for k, v in x.env.items() if k != "INFX_REC"}) for x in r.records]

    assert launch(alone[1]) != launch(shared[1])
