"""The change-driven matrix: buckets, de-duplication, per-entry eval flags, --trim-conc and the
append-only semantics (base catalog read from the base revision)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pytest
import yaml

from infx.changelog.gate import GateOptions, run_gate
from infx.diagnostics import InfxError

from .helpers import (
    REPO_ROOT,
    SEED_KEY,
    GitRepo,
    real_changelog,
    seed_catalog,
    seed_entry,
)

LOG = "perf-changelog.yaml"
N = 772
IMAGE = "vllm/vllm-openai-rocm:nightly-rocm100-3df4ae153eb385e27b52f26c81f8edb9e20b9984"


def seed_master() -> dict[str, Any]:
    data = yaml.safe_load(seed_catalog()[0])
    return {SEED_KEY: data[SEED_KEY]}


def dump(master: dict[str, Any]) -> bytes:
    return yaml.safe_dump(master, sort_keys=False).encode()


def arms(master: dict[str, Any]) -> list[dict[str, Any]]:
    return master[SEED_KEY]["scenarios"]["agentic-coding"][0]["search-space"]


def entry(keys: list[str], *, extra: str = "", link: int = 3326) -> bytes:
    ks = "".join(f"    - {k}\n" for k in keys)
    return (f"- config-keys:\n{ks}  description:\n    - \"test change\"\n"
            f"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/{link}\n{extra}").encode()


def append(*entries: bytes) -> bytes:
    return real_changelog() + b"".join(b"\n" + e for e in entries)


@pytest.fixture
def repo_with(git_repo: GitRepo):  # type: ignore[no-untyped-def]
    """Commit a base with ``master`` (dict) and return a function committing a head."""
    runners = seed_catalog()[1]

    def make(base_master: dict[str, Any], head_master: dict[str, Any] | None, *entries: bytes,
             other: dict[str, Any] | None = None) -> tuple[str, str]:
        base = git_repo.commit({LOG: real_changelog(),
                                "configs/amd-master.yaml": dump({**base_master, **(other or {})}),
                                "configs/runners.yaml": runners}, "base")
        files: dict[str, bytes | None] = {LOG: append(*entries)}
        if head_master is not None:
            files["configs/amd-master.yaml"] = dump(head_master)
        return base, git_repo.commit(files, "head")

    return make


def gate(repo: GitRepo, base: str, head: str, **kw: Any) -> Any:
    return run_gate(GateOptions(repo=repo.path, base_ref=base, head_ref=head, **kw))


def rejected(repo: GitRepo, base: str, head: str, **kw: Any) -> list[str]:
    with pytest.raises(InfxError) as exc:
        gate(repo, base, head, **kw)
    return [str(d) for d in exc.value.diagnostics]


def tp_conc(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted((r["tp"], r["conc"]) for r in rows)


ALL = [(tp, c) for tp in (2, 4) for c in (1, 2, 4, 8, 16, 32, 64, 128)]


def test_trim_conc_keeps_the_lowest_concurrency(git_repo: GitRepo, repo_with: Any) -> None:
    base, head = repo_with(seed_master(), None, seed_entry())
    m = gate(git_repo, base, head, trim_conc=True).matrix
    assert tp_conc(m.single_node["agentic"]) == [(2, 1), (4, 1)]


def test_overlapping_entries_select_each_point_once(git_repo: GitRepo, repo_with: Any) -> None:
    base, head = repo_with(seed_master(), None, entry([SEED_KEY]), entry(["dsv41flash-*", SEED_KEY]))
    m = gate(git_repo, base, head).matrix
    assert tp_conc(m.single_node["agentic"]) == ALL
    assert tp_conc(m.agentic_evals) == [(2, 128), (4, 128)]
    assert len(m.changelog_metadata.entries) == 2


def test_entry_eval_flags(git_repo: GitRepo, repo_with: Any) -> None:
    base, head = repo_with(seed_master(), None, entry([SEED_KEY], extra="  evals-only: true\n"))
    m = gate(git_repo, base, head).matrix
    assert m.single_node == {} and tp_conc(m.agentic_evals) == [(2, 128), (4, 128)]


def test_entry_all_evals_suppresses_throughput(git_repo: GitRepo, repo_with: Any) -> None:
    base, head = repo_with(seed_master(), None, entry([SEED_KEY], extra="  all-evals: true\n"))
    m = gate(git_repo, base, head).matrix
    assert m.single_node == {} and tp_conc(m.agentic_evals) == ALL


def test_cli_all_evals_keeps_throughput(git_repo: GitRepo, repo_with: Any) -> None:
    base, head = repo_with(seed_master(), None, seed_entry())
    m = gate(git_repo, base, head, all_evals=True).matrix
    assert tp_conc(m.single_node["agentic"]) == ALL and tp_conc(m.agentic_evals) == ALL
    m = gate(git_repo, base, head, evals_only=True).matrix
    assert m.single_node == {} and tp_conc(m.agentic_evals) == [(2, 128), (4, 128)]


def test_scenario_type_filters_rows(git_repo: GitRepo, repo_with: Any) -> None:
    base, head = repo_with(seed_master(), None, entry([SEED_KEY], extra="  scenario-type:\n    - fixed-seq-len\n"))
    m = gate(git_repo, base, head).matrix
    assert m.all_rows() == []


def test_matrix_command_prints_buckets(git_repo: GitRepo, repo_with: Any) -> None:
    base, head = repo_with(seed_master(), None, seed_entry())
    proc = subprocess.run([sys.executable, "-m", "infx", "changelog", "matrix", "--base-ref", base, "--head-ref", head,
                           "--trim-conc", "--repo", str(git_repo.path)],
                          check=False, capture_output=True, text=True, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert list(out) == ["single_node", "multi_node", "evals", "agentic_evals", "multinode_evals",
                         "multinode_agentic_evals", "changelog_metadata"]
    assert [r["exp-name"] for r in out["single_node"]["agentic"]] == ["dsv41flash_tp4_conc1_kvnone_spec-mtp",
                                                                      "dsv41flash_tp2_conc1_kvnone_spec-mtp"]
    meta = out["changelog_metadata"]
    assert meta["base_ref"] == base and meta["entries"][0]["pr-link"].endswith("/3326")


def test_generation_failure_names_the_entry(git_repo: GitRepo, repo_with: Any) -> None:
    head_master = seed_master()
    arms(head_master)[0]["tp"] = 16  # 16 GPUs per server on an 8-GPU node: cannot run
    arms(head_master)[0]["kv-offloading"] = "dram"
    arms(head_master)[0]["kv-offload-backend"] = {"name": "vllm-simple"}
    base, head = repo_with(seed_master(), head_master, seed_entry())
    errs = rejected(git_repo, base, head)
    head_of_error = f"{LOG}:{6382}:1: error: entry #{N + 1} [{SEED_KEY}]: matrix generation failed"
    assert errs and all(e.startswith(head_of_error) for e in errs), errs
    assert any("gpus-per-node" in e for e in errs), errs


# --- append-only -------------------------------------------------------------------------------

APPEND_ONLY = "  scenario-type:\n    - agentic-coding\n  append-only: true\n"


def before_change() -> dict[str, Any]:
    """The seed key as it was before the change: TP=4 only, conc 1..32."""
    m = seed_master()
    arms(m)[:] = [dict(arms(m)[0], **{"conc-list": [1, 2, 4, 8, 16, 32]})]
    return m


def test_append_only_emits_only_new_concurrencies(git_repo: GitRepo, repo_with: Any) -> None:
    head_master = before_change()
    arms(head_master)[0]["conc-list"] = [1, 2, 4, 8, 16, 32, 64, 128]
    base, head = repo_with(before_change(), head_master, entry([SEED_KEY], extra=APPEND_ONLY))
    m = gate(git_repo, base, head).matrix
    assert tp_conc(m.single_node["agentic"]) == [(4, 64), (4, 128)]
    assert m.eval_rows() == []  # append-only runs no evals
    assert all(r["image"] == IMAGE for r in m.single_node["agentic"])


def test_append_only_new_arm_joins_the_series(git_repo: GitRepo, repo_with: Any) -> None:
    base, head = repo_with(before_change(), seed_master(), entry([SEED_KEY], extra=APPEND_ONLY))
    m = gate(git_repo, base, head).matrix
    assert tp_conc(m.single_node["agentic"]) == [(2, c) for c in (1, 2, 4, 8, 16, 32, 64, 128)] + [(4, 64), (4, 128)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("image", "uses image 'vllm/vllm-openai-rocm:other' but its series ran with"),
        ("drop-conc", "append-only may not remove concurrency [1]"),
        ("nothing", "adds no new concurrency points"),
        ("modify-arm", "append-only may not remove or modify existing generated recipes"),
        ("other-key", "catalog key 'other-fp4-mi355x-vllm-agentic' changed but the entry does not select it"),
    ],
)
def test_append_only_rejections(git_repo: GitRepo, repo_with: Any, change: str, message: str) -> None:
    head_master = before_change()
    arms(head_master)[0]["conc-list"] = [1, 2, 4, 8, 16, 32, 64]
    other = {"other-fp4-mi355x-vllm-agentic": copy.deepcopy(before_change()[SEED_KEY])}
    if change == "image":
        head_master[SEED_KEY]["image"] = "vllm/vllm-openai-rocm:other"
    elif change == "drop-conc":
        arms(head_master)[0]["conc-list"] = [2, 4, 8, 16, 32, 64]
    elif change == "nothing":
        head_master = before_change()
    elif change == "modify-arm":
        arms(head_master)[0]["spec-decoding"] = "none"
    head_full = dict(head_master)
    other_head = copy.deepcopy(other)
    if change == "other-key":
        other_head["other-fp4-mi355x-vllm-agentic"]["image"] = "vllm/vllm-openai-rocm:other"
    head_full.update(other_head)
    base, head = repo_with(before_change(), head_full, entry([SEED_KEY], extra=APPEND_ONLY), other=other)
    errs = rejected(git_repo, base, head)
    assert any(message in e for e in errs), errs
    assert all(e.startswith(f"{LOG}:6382:1: error: entry #{N + 1} [{SEED_KEY}] (append-only): ") for e in errs), errs


def test_append_only_cannot_mix_with_regular_entries_or_eval_flags(git_repo: GitRepo, repo_with: Any) -> None:
    head_master = before_change()
    arms(head_master)[0]["conc-list"] = [1, 2, 4, 8, 16, 32, 64]
    base, head = repo_with(before_change(), head_master, entry([SEED_KEY], extra=APPEND_ONLY), entry([SEED_KEY]))
    (err,) = rejected(git_repo, base, head)
    assert f"entry #{N + 2} [{SEED_KEY}]: append-only and regular entries cannot be mixed" in err
    base, head = repo_with(before_change(), head_master, entry([SEED_KEY], extra=APPEND_ONLY))
    (err,) = rejected(git_repo, base, head, evals_only=True)
    assert "append-only entries cannot be run with --all-evals/--evals-only" in err


def test_multinode_buckets_and_eval_min_prefill_ep(git_repo: GitRepo) -> None:
    from .helpers import compat_dir

    amd, runners = compat_dir() / "amd-master.yaml", compat_dir() / "runners.yaml"
    if not amd.exists():
        pytest.skip("compat catalog not found (set INFX_SHARED)")
    base = git_repo.commit({LOG: real_changelog(), "configs/amd-master.yaml": amd.read_bytes(),
                            "configs/runners.yaml": runners.read_bytes()})
    pattern = "dsv4-fp4-mi355x-sglang-disagg*"
    plain = git_repo.commit({LOG: append(entry([pattern]))})
    m = gate(git_repo, base, plain).matrix
    assert set(m.multi_node) == {"8k1k", "agentic"} and m.single_node == {}
    assert all("prefill" in r for rows in m.multi_node.values() for r in rows)
    assert sorted(r["prefill"]["ep"] for r in m.multinode_evals) == [1, 1, 8, 8]
    assert sorted(r["prefill"]["ep"] for r in m.multinode_agentic_evals) == [1, 8]
    assert m.evals == [] and m.agentic_evals == []
    filtered = git_repo.commit({LOG: append(entry([pattern], extra="  eval-min-prefill-ep: 8\n"))})
    m2 = gate(git_repo, base, filtered).matrix
    assert [r["prefill"]["ep"] for r in m2.multinode_evals] == [8, 8]
    assert [r["prefill"]["ep"] for r in m2.multinode_agentic_evals] == [8]
    assert m2.multi_node == m.multi_node  # the threshold only filters evals
    trimmed = gate(git_repo, base, plain, trim_conc=True).matrix
    assert all(len(r["conc"]) == 1 for rows in trimmed.multi_node.values() for r in rows)
    assert all(r["conc"] == [min(o["conc"])]
               for r, o in zip(trimmed.multi_node["8k1k"], m.multi_node["8k1k"], strict=True))
    assert len({r["point-id"] for r in trimmed.multi_node["8k1k"]}) == len(trimmed.multi_node["8k1k"])
    from infx.matrix.pointid import point_id

    keys = ["dsv4-fp4-mi355x-sglang-disagg", "dsv4-fp4-mi355x-sglang-disagg-mtp"]
    for r, o in zip(trimmed.multi_node["8k1k"], m.multi_node["8k1k"], strict=True):
        bare = {k: v for k, v in r.items() if k != "recipe-fingerprint"}
        assert r["point-id"] in {point_id(bare, k) for k in keys}
        assert (r["point-id"] != o["point-id"]) == (len(o["conc"]) > 1)
