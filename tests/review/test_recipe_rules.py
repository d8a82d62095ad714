"""The recipe rules of ``infx review`` wired to the upstream-recipe library (spec 8.3): recipe-link,
recipe-args and recipe-hardware on the seed-pr fixture (head = head-fixed) against a recipes git
repository holding the constructed seed recipe at commit M, all through the real ``infx review`` command
(JSON output); and the real-data cases L8/L9 on a workspace made from the InferenceX corpus."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.recipes.helpers import CORPUS, IX, needs_corpus, seed_recipe_text, seed_recipes_repo

from .helpers import as_json, cli
from .seedrepo import REPO, SEED_KEY, build_seed, git

pytestmark = needs_corpus

PR = "https://github.com/vllm-project/recipes/pull/1006"
SEED = "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml"
PAGE = "https://recipes.vllm.ai/deepseek-ai/DeepSeek-V4.1-Flash?hardware=mi355x"
TP2_ERRORS = {"speculative-config.method", "kv-cache-dtype"}
WARNINGS = {"env:VLLM_ROCM_USE_AITER_MOE", "swa-bounded-replay", "mm-encoder-tp-mode", "enable-prefix-caching",
            "env:VLLM_USE_BREAKABLE_CUDAGRAPH"}
PASSES = {"model", "tensor-parallel-size", "moe-backend", "engram-config", "env:VLLM_ROCM_USE_AITER"}


class Wired:
    def __init__(self, root: Path, recipes: Path, m: str, tmp: Path) -> None:
        self.root, self.recipes, self.m, self.tmp = root, recipes, m, tmp

    def write(self, name: str, text: str) -> str:
        p = self.tmp / name
        p.write_text(text)
        return str(p)

    def state(self, state: str, head: str | None = None) -> str:
        merged = state == "MERGED"
        return self.write(f"state-{state}.json", json.dumps([{
            "url": PR, "state": state, "mergedAt": "2026-08-21T00:00:00Z" if merged else None,
            "mergeCommit": {"oid": self.m} if merged else None, "headRefOid": head}]))

    def event(self, comment: str) -> str:
        return self.write("event.json", json.dumps({"pull_request": {"number": 3326, "body": "", "labels": []},
                                                    "comments": [{"body": comment}]}))

    def review(self, *args: str, base: str = "base", head: str = "head-fixed",
               code: int | None = None) -> dict[str, Any]:
        proc = cli(self.root, "--base", base, "--head", head, "--format", "json", *args)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        if code is not None:
            assert proc.returncode == code, proc.stdout
        return as_json(proc)


@pytest.fixture(scope="module")
def wired(tmp_path_factory: pytest.TempPathFactory) -> Wired:
    t = tmp_path_factory.mktemp("wired")
    root = t / "repo"
    build_seed(root)
    recipes, m = seed_recipes_repo(t / "recipes")
    # head-toml: head-fixed whose infx.toml names the checkout ([recipes] path, relative to the workspace)
    (root / "infx.toml").write_text('[recipes]\npath = "../recipes"\n')
    git(root, "commit", "-q", "-am", "name the recipes checkout")
    git(root, "branch", "head-toml")
    (root / "infx.toml").write_text('[recipes]\npath = "../nowhere"\n')
    git(root, "commit", "-q", "-am", "name a checkout that is not there")
    git(root, "branch", "head-toml-gone")
    # multi: head-fixed plus one disaggregated multi-node entry, and nothing else
    git(root, "checkout", "-q", "-b", "multi", "head-fixed")
    catalog = (REPO / "configs/cpu-master.yaml").read_text()
    (root / "configs/cpu-master.yaml").write_text(_only_entry(catalog, "disagg-tinyllama-bf16-cpu-vllm"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a multi-node entry")
    git(root, "checkout", "-q", "head-fixed")
    work = t / "inputs"
    work.mkdir()
    return Wired(root, recipes, m, work)


def _rule(data: dict[str, Any], rid: str) -> dict[str, Any]:
    return next(r for r in data["rules"] if r["id"] == rid)


def _found(data: dict[str, Any], rid: str, severity: str | None = None) -> list[dict[str, Any]]:
    return [f for f in data["findings"] if f["rule"] == rid and (severity is None or f["severity"] == severity)]


def _arm(data: dict[str, Any], tp: int, severity: str) -> dict[str, dict[str, Any]]:
    """recipe-args findings of one arm, by flag key."""
    return {f["evidence"]["key"]: f for f in _found(data, "recipe-args", severity)
            if f["evidence"]["arm"].startswith(f"{SEED_KEY}/tp={tp}/") and "key" in f["evidence"]}


def _seed_line(n: int) -> str:
    return seed_recipe_text().splitlines()[n - 1].strip()


def _assert_l4_l5(data: dict[str, Any], commit: str) -> None:
    """L4 (TP=2 arm) and L5 (TP=4 arm) as the review reports them."""
    tp2_err, tp4_err = _arm(data, 2, "error"), _arm(data, 4, "error")
    assert set(tp2_err) == TP2_ERRORS
    assert set(tp4_err) == TP2_ERRORS | {"tensor-parallel-size", "engram-config"}
    assert set(_arm(data, 2, "warning")) == WARNINGS and set(_arm(data, 4, "warning")) == WARNINGS
    every = {k for sev in ("error", "warning", "note") for k in _arm(data, 2, sev)}
    assert not every & PASSES  # model, TP 2, --moe-backend aiter, engram-config, AITER: no finding (pass)
    for tp, line in ((2, 19), (4, 18)):  # primary: the arm's search-space row; 8 points each
        for f in _found(data, "recipe-args"):
            if f"/tp={tp}/" in f["evidence"]["arm"]:
                assert f["locations"][0] == {"path": "configs/amd-master.yaml", "line": line, "end_line": line,
                                             "role": "primary"}
                assert len(f["points"]) == 8 and all(f"tp{tp}_" in p for p in f["points"])
                assert f["evidence"]["recipe_commit"] == commit
    method = tp2_err["speculative-config.method"]
    assert (method["evidence"]["launch"], method["evidence"]["recipe"]) == ("mtp", "dspark")
    rel = method["locations"][1]
    assert rel["role"] == "related" and rel["path"] == SEED and "dspark" in _seed_line(rel["line"])
    kv = tp2_err["kv-cache-dtype"]
    assert kv["evidence"]["launch"] == "fp8" and kv["evidence"]["recipe"] is None
    assert kv["locations"][1]["path"] == "recipes/dsv41flash-fp4-mi355x-vllm-agentic.yaml"  # the launch's line
    tp = tp4_err["tensor-parallel-size"]
    assert (tp["evidence"]["launch"], tp["evidence"]["recipe"]) == (4, 2)
    assert "the recipe renders 2 for single_node_tp on mi355x: strategy_overrides.single_node_tp.tp" in tp["title"]
    assert tp["locations"][1]["path"] == SEED and _seed_line(tp["locations"][1]["line"]) == "mi355x: 2"
    engram = tp4_err["engram-config"]
    assert (engram["evidence"]["launch"], engram["evidence"]["recipe"]) == ({"cpu_offload": False},
                                                                             {"cpu_offload": True})
    (notes,) = [f for f in _found(data, "recipe-args", "note") if f["evidence"]["arm"].startswith(f"{SEED_KEY}/tp=2/")]
    for flag in ("--max-model-len", "--max-num-batched-tokens", "--compilation-config",
                 "--speculative-config.num_speculative_tokens 7 vs 5", "--tokenizer-mode deepseek_v4 vs deepseek_v41"):
        assert flag in notes["title"], flag
    assert _rule(data, "recipe-args")["status"] == "fail"
    assert _rule(data, "recipe-hardware")["status"] == "pass" and not _found(data, "recipe-hardware")


def test_l2_merged_link_compares_at_the_merge_commit(wired: Wired) -> None:
    data = wired.review("--event", wired.event("recipe: vllm-project/recipes#1006"), "--link-state",
                        wired.state("MERGED"), "--recipes-repo", str(wired.recipes), code=1)
    assert _rule(data, "recipe-link")["status"] == "pass"
    (ok,) = _found(data, "recipe-link")
    assert ok["severity"] == "note" and ok["evidence"]["merge_commit"] == wired.m
    assert ok["evidence"]["recipe_commit"] == wired.m and ok["evidence"]["recipe_path"] == SEED
    assert ok["evidence"]["source"] == "comment"
    _assert_l4_l5(data, wired.m)
    assert all(f["evidence"]["link_state"] == "merged" and "[unmerged preview]" not in f["title"]
               for f in _found(data, "recipe-args"))


def test_l1_open_pr_is_an_error_and_args_are_an_unmerged_preview(wired: Wired) -> None:
    data = wired.review("--event", wired.event("recipe: vllm-project/recipes#1006"), "--link-state",
                        wired.state("OPEN", head=wired.m), "--recipes-repo", str(wired.recipes), code=1)
    (link,) = _found(data, "recipe-link")
    assert link["severity"] == "error" and link["title"].startswith("upstream PR is open (not merged)")
    args = _found(data, "recipe-args")
    assert args and all(f["title"].startswith("[unmerged preview] ") for f in args)
    assert all(f["evidence"]["link_state"] == "unmerged preview" and f["evidence"]["recipe_commit"] == wired.m
               for f in args)
    assert _rule(data, "recipe-args")["reason"].startswith("[unmerged preview] ")


def test_l3_policy_inferencex_wants_the_link_in_the_signoff(wired: Wired) -> None:
    signoff = wired.write("signoff.md", "### Additional detail section:\nnothing here\nSigned: @owner\n")
    data = wired.review("--event", wired.event("recipe: vllm-project/recipes#1006"), "--link-state",
                        wired.state("MERGED"), "--link-policy", "inferencex", "--signoff", signoff, "--recipes-repo",
                        str(wired.recipes), code=1)
    (f,) = _found(data, "recipe-link")
    assert f["severity"] == "error" and f["title"] == "link is not in the sign-off's Additional detail section"
    assert f["locations"][0]["line"] == 6  # the config key line


def test_l6_published_page_is_merged_documentation_read_at_the_checkout(wired: Wired) -> None:
    body = wired.write("body.md", f"recipe: {PAGE}.\n")
    data = wired.review("--body", body, "--recipes-repo", str(wired.recipes), code=1)
    assert _rule(data, "recipe-link")["status"] == "pass"
    (ok,) = _found(data, "recipe-link")
    assert ok["evidence"]["state"] == "published" and ok["evidence"]["pin"] == {"recipe_path": SEED,
                                                                                   "hardware": "mi355x", "modes": {}}
    assert ok["evidence"]["recipe_commit"] == wired.m
    _assert_l4_l5(data, wired.m)


def test_l7_bare_commit_fails_under_inferencex(wired: Wired) -> None:
    link = f"https://github.com/vllm-project/recipes/commit/{wired.m}"
    signoff = wired.write("signoff-commit.md", f"### Additional detail section:\n{link}\nSigned: @o\n")
    data = wired.review("--signoff", signoff, "--link-policy", "inferencex", "--recipes-repo", str(wired.recipes),
                        code=1)
    (f,) = _found(data, "recipe-link")
    assert f["severity"] == "error" and f["title"] == "bare commit does not satisfy the rule"


def test_linked_file_absent_at_the_merge_commit_is_an_error(wired: Wired) -> None:
    """The recipe half of recipe-link: the merge commit must hold the recipe serving the changed points."""
    gone = wired.write("gone.json", json.dumps([{"url": PR, "state": "MERGED", "mergedAt": "2026-08-21T00:00:00Z",
                                                 "mergeCommit": {"oid": "0" * 40}}]))
    data = wired.review("--body", wired.write("b.md", PR + "\n"), "--link-state", gone, "--recipes-repo",
                        str(wired.recipes), code=1)
    (f,) = _found(data, "recipe-link")
    assert f["severity"] == "error" and "cannot read the recipes checkout" in f["title"]
    (page,) = _found(wired.review("--body", wired.write("p.md", "https://recipes.vllm.ai/x-org/Nope\n"),
                                  "--recipes-repo", str(wired.recipes)), "recipe-link")
    assert page["severity"] == "error" and "models/x-org/Nope.yaml does not exist" in page["title"]


def test_recipes_path_from_infx_toml_and_na_without_a_checkout(wired: Wired) -> None:
    body = wired.write("body2.md", PAGE + "\n")
    data = wired.review("--body", body, head="head-toml", code=1)  # [recipes] path = "../recipes"
    _assert_l4_l5(data, wired.m)
    bare = wired.review("--body", body)
    for rid in ("recipe-args", "recipe-hardware"):
        r = _rule(bare, rid)
        assert (r["status"], r["reason"]) == ("n/a", "no recipes checkout: give --recipes-repo or [recipes] path")
        assert not _found(bare, rid)
    gone = wired.review("--body", body, head="head-toml-gone")  # not bad input: the rules say why
    reason = _rule(gone, "recipe-args")["reason"]
    assert _rule(gone, "recipe-args")["status"] == "n/a" and reason.startswith("no recipes checkout: ")
    assert "[recipes] path" in reason and "nowhere is not a directory" in reason


def test_l10_multi_node_only_change_is_na(wired: Wired) -> None:
    data = wired.review("--recipes-repo", str(wired.recipes), base="head-fixed", head="multi")
    assert data["summary"]["points"]["added"] == 1 and data["summary"]["points"]["changed"] == 0
    for rid in ("recipe-link", "recipe-args", "recipe-hardware"):
        r = _rule(data, rid)
        assert r["status"] == "n/a" and r["reason"].startswith("disaggregated/multi-node submission"), r


def test_sarif_and_markdown_carry_the_recipe_findings(wired: Wired) -> None:
    proc = cli(wired.root, "--base", "base", "--head", "head-fixed", "--format", "sarif", "--body",
               wired.write("b3.md", PAGE + "\n"), "--recipes-repo", str(wired.recipes))
    assert proc.returncode == 1, proc.stderr
    sarif = json.loads(proc.stdout)
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "recipe-args"]
    assert {r["level"] for r in results} == {"error", "warning", "note"}
    related = [loc["physicalLocation"]["artifactLocation"]["uri"] for r in results
               for loc in r.get("relatedLocations", [])]
    assert SEED in related
    assert len({r["partialFingerprints"]["infxReview/v1"] for r in results}) == len(results)


# ---- real data: the InferenceX corpus and the recipes corpus at R@8959cf6 (L8, L9)


def _only_entry(text: str, key: str) -> str:
    """The top-level entry ``key`` of a catalog, alone (it runs to the next top-level line)."""
    out, keep = [], False
    for line in text.splitlines(keepends=True):
        if line[:1] not in (" ", "\n", "#", "-") and line.strip():
            keep = line.split(":", 1)[0] == key
        if keep:
            out.append(line)
    assert out, f"no entry {key!r} in the catalog"
    return "".join(out)


def _drop_entries(text: str, keys: set[str]) -> str:
    """A catalog without the top-level entries ``keys`` (each runs to the next top-level line)."""
    out, skip = [], False
    for line in text.splitlines(keepends=True):
        if line[:1] not in (" ", "\n", "#", "-") and line.strip():
            skip = line.split(":", 1)[0] in keys
        if not skip:
            out.append(line)
    return "".join(out)


@pytest.fixture(scope="module")
def ix_pr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """base = the InferenceX corpus without two entries; head = the corpus (the entries added)."""
    if not (IX / "amd-master.yaml").is_file():
        pytest.skip(f"InferenceX corpus absent at {IX}")
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) not installed")
    root = tmp_path_factory.mktemp("ixpr") / "repo"
    (root / "configs").mkdir(parents=True)
    for f in ("nvidia-master.yaml", "runners.yaml"):
        shutil.copy(IX / f, root / "configs" / f)
    full = (IX / "amd-master.yaml").read_text()
    (root / "configs/amd-master.yaml").write_text(
        _drop_entries(full, {"dsv4-fp4-mi355x-vllm-agentic-mtp", "dsv4-fp8-mi300x-vllm"}))
    shutil.copytree(IX / "benchmarks", root / "benchmarks")
    (root / "infx.toml").write_text(f'[recipes]\npath = "{CORPUS}"\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "branch", "base")
    (root / "configs/amd-master.yaml").write_text(full)
    git(root, "commit", "-q", "-am", "add two dsv4 entries")
    git(root, "branch", "head-fixed")
    return root


@pytest.mark.slow
def test_l8_l9_real_inferencex_entries(ix_pr: Path) -> None:
    proc = cli(ix_pr, "--base", "base", "--head", "head-fixed", "--format", "json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = as_json(proc)
    keys = {f["evidence"]["arm"].split("/")[0] for f in _found(data, "recipe-args")}
    assert keys == {"dsv4-fp4-mi355x-vllm-agentic-mtp", "dsv4-fp8-mi300x-vllm"}  # the changed set only
    # L8: the tp 8 arm of the agentic MTP entry errs exactly on --moe-backend aiter and VLLM_ROCM_USE_AITER_MOE
    arm = "dsv4-fp4-mi355x-vllm-agentic-mtp/tp=8/spec=mtp"  # tp 8, ep 1, no DP attention
    errs = {f["evidence"]["key"]: f for f in _found(data, "recipe-args", "error") if f["evidence"]["arm"] == arm}
    assert set(errs) == {"moe-backend", "env:VLLM_ROCM_USE_AITER_MOE"}
    script = "benchmarks/single_node/agentic/dsv4_fp4_mi355x_vllm_mtp.sh"
    assert errs["moe-backend"]["evidence"]["launch"] == "aiter"
    assert errs["moe-backend"]["locations"][1] == {"path": script, "line": 424, "end_line": 424, "role": "related"}
    assert errs["env:VLLM_ROCM_USE_AITER_MOE"]["locations"][1]["line"] == 405
    assert "DeepSeek-V4-Pro.yaml (fp8, single_node_tp, mi355x)" in errs["moe-backend"]["evidence"]["selection"]
    warns = {f["evidence"]["key"] for f in _found(data, "recipe-args", "warning") if f["evidence"]["arm"] == arm}
    assert {"enable-prefix-caching", "disable-hybrid-kv-cache-manager", "block-size"} <= warns
    # L9: mi300x is unsupported upstream: one warning at the entry's runner line, related to meta.hardware
    (hw,) = _found(data, "recipe-hardware", "warning")
    assert hw["title"] == "upstream recipe marks mi300x unsupported"
    assert hw["points"] and all(p.startswith("dsv4") for p in hw["points"])
    runner_line = next(i for i, ln in enumerate((ix_pr / "configs/amd-master.yaml").read_text().splitlines(), 1)
                       if ln.startswith("dsv4-fp8-mi300x-vllm:"))
    assert hw["locations"][0]["path"] == "configs/amd-master.yaml" and hw["locations"][0]["line"] > runner_line
    rel = hw["locations"][1]
    assert rel["path"].endswith("models/deepseek-ai/DeepSeek-V4-Pro.yaml")
    assert (CORPUS / "models/deepseek-ai/DeepSeek-V4-Pro.yaml").read_text().splitlines()[rel["line"] - 1].strip() \
        == "mi300x: unsupported"
    assert _rule(data, "recipe-hardware")["status"] == "warn"


def test_recipes_repo_that_is_not_a_directory_is_bad_input(wired: Wired) -> None:
    proc = cli(wired.root, "--base", "base", "--head", "head-fixed", "--recipes-repo", str(wired.tmp / "nope"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [f"{wired.tmp / 'nope'}: error: recipes checkout "
                                                f"'{wired.tmp / 'nope'}' is not a directory"]
