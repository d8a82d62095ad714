"""The seed's edit on a scripted row: a real agentic vLLM bench script changed the way the seed PR
changed its recipe (drop the fixed --max-num-seqs, derive the CUDA-graph capture ceiling from
max(2*CONC, 128)). Plan and preflight show the new ceiling at every concurrency, and the changelog
selection (``--changed-launches``) picks exactly that script's rows. Real git, real sandbox."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infx.matrix.select import keyed_points

CORPUS = Path("/work/shared/compat/inferencex")
for _p in Path(__file__).resolve().parents:
    if (_p / "shared" / "compat" / "inferencex").is_dir():
        CORPUS = _p / "shared" / "compat" / "inferencex"
        break

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) not installed"),
    pytest.mark.skipif(not (CORPUS / "benchmarks").is_dir(),
                       reason="InferenceX corpus (../shared/compat/inferencex) absent"),
]

SCRIPT = "benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh"  # what dsv4-fp4-b200-vllm-agentic-mtp runs
KEY = "dsv4-fp4-b200-vllm-agentic-mtp"
MASTER = "nvidia-master.yaml"
ENTRY = b"""
- config-keys:
    - dsv4-fp4-b200-*-agentic-*
  description:
    - "DSv4 B200 vLLM agentic: drop --max-num-seqs; capture CUDA graphs up to max(2*CONC, 128) tokens"
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/9999
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false",
                           "-C", str(repo), *args], capture_output=True, check=True, text=True).stdout.strip()


LOOP = """for ((num_seqs = 1; num_seqs <= MAX_NUM_SEQS; num_seqs++)); do
    CAPTURE_SIZE_LIST+=("$((num_seqs * TOKENS_PER_SEQ))")
done
"""
PIECEWISE = "    CAPTURE_SIZE_LIST+=(100 200 300 400 500)\n"
NEW_LOOP = """MAX_CAPTURE=$(( 2 * CONC > 128 ? 2 * CONC : 128 ))
for ((size = 1; size <= MAX_CAPTURE; size++)); do
    CAPTURE_SIZE_LIST+=("$size")
done
"""


def _seed_edit(text: str) -> str:
    """The seed PR's change, on this script: no fixed --max-num-seqs, capture sizes 1..max(2*CONC, 128)."""
    for old in ('    --max-num-seqs "$MAX_NUM_SEQS"\n', LOOP, PIECEWISE):
        assert text.count(old) == 1, old
    text = text.replace('    --max-num-seqs "$MAX_NUM_SEQS"\n', "").replace(PIECEWISE, "    :\n")
    return text.replace(LOOP, NEW_LOOP)


@pytest.fixture()
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    root = tmp_path / "repo"
    (root / "configs").mkdir(parents=True)
    for f in (MASTER, "runners.yaml"):
        shutil.copy(CORPUS / f, root / "configs" / f)
    shutil.copy(CORPUS / "perf-changelog.yaml", root / "perf-changelog.yaml")
    shutil.copytree(CORPUS / "benchmarks", root / "benchmarks")
    (root / "infx.toml").write_text("")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    base = _git(root, "rev-parse", "HEAD")
    script = root / SCRIPT
    script.write_text(_seed_edit(script.read_text()))
    with open(root / "perf-changelog.yaml", "ab") as fh:
        fh.write(ENTRY)
    _git(root, "commit", "-q", "-am", "seed edit")
    return root, base, _git(root, "rev-parse", "HEAD")


def _infx(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", "--workspace", str(root), *args], capture_output=True,
                          text=True, cwd=root, timeout=600)


def test_plan_and_preflight_show_the_new_ceiling_per_concurrency(repo: tuple[Path, str, str]) -> None:
    root = repo[0]
    plan = _infx(root, "plan", "--config-keys", KEY, "--json")
    assert plan.returncode == 0, plan.stderr
    points = json.loads(plan.stdout)["points"]
    concs = sorted({p["conc"] for p in points})
    assert len(concs) >= 2
    for p in points:
        launch = p["launch"]
        assert launch["script"] == SCRIPT and launch["script_sha256"]
        argv = launch["argv"]
        assert "--max-num-seqs" not in argv
        cc = json.loads(argv[argv.index("--compilation-config") + 1])
        assert cc["cudagraph_capture_sizes"] == list(range(1, max(2 * p["conc"], 128) + 1))
    pf = _infx(root, "preflight", "--config-keys", KEY, "--json")
    assert pf.returncode in (0, 1), pf.stderr
    verdicts = json.loads(pf.stdout)
    assert {v["point_id"] for v in verdicts} == {p["point_id"] for p in points}
    conc_of = {p["point_id"]: p["conc"] for p in points}
    for v in verdicts:
        g = next(c for c in v["checks"] if c["name"] == "cuda-graph-ceiling")
        assert g["details"]["ceiling_tokens"] == max(2 * conc_of[v["point_id"]], 128), g
        assert "compilation-config" in g["details"]["ceiling_source"]


def test_changelog_selects_exactly_the_edited_scripts_rows(repo: tuple[Path, str, str]) -> None:
    root, base, head = repo
    common = ["changelog", "matrix", "--base-ref", base, "--head-ref", head, "--config-files", f"configs/{MASTER}",
              "--runner-config", "configs/runners.yaml", "--repo", str(root)]
    wide = _infx(root, *common)
    narrow = _infx(root, *common, "--changed-launches")
    assert wide.returncode == 0 and narrow.returncode == 0, wide.stderr + narrow.stderr

    def rows(out: str) -> list[dict]:
        m = json.loads(out)
        m.pop("changelog_metadata")
        found: list[dict] = []

        def walk(x: object) -> None:
            if isinstance(x, dict):
                if "point-id" in x:
                    found.append(x)
                else:
                    for v in x.values():
                        walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)
        walk(m)
        return found

    wide_rows, narrow_rows = rows(wide.stdout), rows(narrow.stdout)
    expected = {p.point_id for _, p in keyed_points([root / "configs" / MASTER], root / "configs/runners.yaml",
                                                    [KEY], "none")}
    assert {r["framework"] for r in wide_rows} > {"vllm"}  # the entry's glob also selects other engines' rows
    assert {r["point-id"] for r in narrow_rows if not r.get("run-eval")} == expected
    assert {r["framework"] for r in narrow_rows} == {"vllm"}
    launches = json.loads(narrow.stdout)["changelog_metadata"]["launches"]
    assert {x["point-id"] for x in launches} == {r["point-id"] for r in narrow_rows}
    import hashlib

    want = hashlib.sha256((root / SCRIPT).read_bytes()).hexdigest()  # = the plan's launch.script_sha256
    assert {(x["script"], x["script-sha256"]) for x in launches} == {(SCRIPT, want)}
    assert "launches" not in json.loads(wide.stdout)["changelog_metadata"]
