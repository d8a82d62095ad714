"""The seed's change reviewed (spec 8.1-8.2): ``seed-pr`` is a real git repository built from this
repository's files; base -> head gives every finding the seed's reviewers made by hand (A1-A9), and
head-fixed gives what the fixed recipe should."""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.review.models import RULE_IDS

from .helpers import as_json, cli, findings, review, rule
from .seedrepo import RECIPE, git

MASTER = "configs/amd-master.yaml"
TP2 = [f"dsv41flash_tp2_conc{c}_kvnone_spec-mtp" for c in (1, 2, 4, 8, 16, 32, 64, 128)]
TP4 = [n.replace("tp2", "tp4") for n in TP2]
Seed = tuple[Path, dict[str, str]]


@pytest.fixture(scope="module")
def head_report(seed: Seed):  # type: ignore[no-untyped-def]
    root, _ = seed
    return review(root, "base", "head", labels=["full-sweep-fail-fast"])


def test_a1_memory_fit_tp2_oom_at_its_row(head_report) -> None:  # type: ignore[no-untyped-def]
    (f,) = findings(head_report, "memory-fit")
    assert f.severity == "error"
    assert (f.primary.path, f.primary.line) == (MASTER, 19)
    assert sorted(f.points) == sorted(TP2)  # exactly the 8 TP=2 points, no TP=4 point
    assert f.evidence["margin_bytes"] < 0
    engram = [ln for ln in f.evidence["breakdown"] if "engram" in ln["component"].lower()]
    assert engram and all(ln["where"] == "gpu" for ln in engram)
    assert f.evidence["argv_facts"] == ["--engram-config not in the launch argv: gpu-resident; 188.8 GiB / TP 2"]
    assert "--engram-config not in the launch argv" in f.message
    assert f.locations[1].path == RECIPE and f.locations[1].role == "related"


def test_a2_launch_claims_flag_not_launched(head_report) -> None:  # type: ignore[no-untyped-def]
    (f,) = findings(head_report, "launch-claims")
    assert f.severity == "warning" and (f.primary.path, f.primary.line) == ("perf-changelog.yaml", 13)
    assert f.title == "changelog claims `--engram-config '{\"cpu_offload\":true}'` but no changed point launches it"


def test_a3_eval_coverage_infx_rule_passes(head_report) -> None:  # type: ignore[no-untyped-def]
    r = rule(head_report, "eval-coverage")
    assert r.status == "pass"
    (note,) = findings(head_report, "eval-coverage")
    table = note.evidence["table"]
    assert table["tp=4"]["evals-only"] == [128] and table["tp=2"]["evals-only"] == [128]
    assert table["tp=4"]["all"] and table["tp=2"]["all"]


def test_a3_eval_coverage_inferencex_rule_drops_tp2(seed: Seed) -> None:
    rep = review(seed[0], "base", "head", eval_rule="inferencex")
    (f,) = findings(rep, "eval-coverage", "error")
    assert (f.primary.path, f.primary.line) == (MASTER, 19)
    assert f.title == ("under InferenceX's agentic eval grouping the tp=2 arm gets no eval (tie at conc 128, first row "
                       "tp=4 kept); with evals-only its 8 points are dropped")
    assert sorted(f.points) == sorted(TP2)


def test_a4_failure_isolation_fail_fast_cancels_tp4(head_report) -> None:  # type: ignore[no-untyped-def]
    (f,) = findings(head_report, "failure-isolation")
    assert f.severity == "error" and (f.primary.path, f.primary.line) == (MASTER, 6)
    assert f.evidence["family"] == "agentic /" and f.evidence["points"] == 16
    assert sorted(f.points) == sorted(TP4)
    assert f.title == "the predicted failure of the TP=2 arm cancels the 8 TP=4 points, including the new conc 64 " \
                      "and conc 128"
    assert sorted(f.evidence["new"]) == sorted(TP4[6:])


def test_a4_failure_isolation_without_fail_fast_and_on_head_fixed(seed: Seed) -> None:
    assert rule(review(seed[0], "base", "head", labels=["full-sweep-enabled"]), "failure-isolation").status == "pass"
    fixed = review(seed[0], "base", "head-fixed", labels=["full-sweep-fail-fast"])
    (f,) = findings(fixed, "failure-isolation")
    assert f.severity == "warning" and "fail-fast couples 2 arms" in f.title


def test_a5_image_pin_offline_is_a_warning_never_a_pass(head_report) -> None:  # type: ignore[no-untyped-def]
    (f,) = findings(head_report, "image-pin")
    assert f.severity == "warning" and (f.primary.path, f.primary.line) == (MASTER, 7)
    assert "not verified against the registry" in f.title


def test_a6_changelog_append_passes(head_report) -> None:  # type: ignore[no-untyped-def]
    assert rule(head_report, "changelog-append").status == "pass"
    assert not findings(head_report, "changelog-append")


def _variant(seed: Seed, name: str, changes: dict[str, bytes]) -> str:
    root, shas = seed
    git(root, "checkout", "-q", "-B", name, shas["head"])
    for rel, data in changes.items():
        (root / rel).write_bytes(data)
    git(root, "commit", "-q", "-am", name)
    sha = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "head-fixed")
    return sha


def test_a6_changelog_variants(seed: Seed) -> None:
    root, shas = seed
    log = git(root, "show", f"{shas['head']}:perf-changelog.yaml").encode() + b"\n"
    lines = log.splitlines(keepends=True)
    base_part, entry = b"".join(lines[:6]), b"".join(lines[7:])
    above = _variant(seed, "v-above", {"perf-changelog.yaml": entry + b"\n" + base_part})
    (f,) = findings(review(root, "base", above), "changelog-append", "error")
    assert (f.primary.path, f.primary.line) == ("perf-changelog.yaml", 1)
    assert "new entry inserted before historical entry #1" in f.message
    two = _variant(seed, "v-two", {"perf-changelog.yaml": base_part + b"\n\n" + entry})
    rep = review(root, "base", two)
    (w,) = findings(rep, "changelog-append")
    assert w.severity == "warning" and (w.primary.path, w.primary.line) == ("perf-changelog.yaml", 8)
    assert "fix: delete line 8" in w.message and rule(rep, "changelog-append").status == "warn"


def test_a7_launch_derivation_table(head_report) -> None:  # type: ignore[no-untyped-def]
    notes = findings(head_report, "launch-derivation")
    assert [n.severity for n in notes] == ["note", "note"]
    tp4 = next(n for n in notes if n.evidence["arm"].endswith("tp=4"))
    rows = {r["conc"]: r for r in tp4.evidence["table"]}
    assert sorted(rows) == [1, 2, 4, 8, 16, 32, 64, 128]
    for c, r in rows.items():
        h = r["head"]
        assert h["max_num_seqs"] == 1024 and h["max_num_seqs_source"] == "engine default"
        assert h["capture_ceiling"] == (2048 if c == 128 else 1024)
        assert h["capture_ceiling_source"] == f"--compilation-config, {RECIPE}:28"
        assert h["spec_tokens"] == 7 and h["worst_in_flight"] == 2 * c
        if c <= 32:
            assert r["base"]["max_num_seqs"] == 128 and r["base"]["max_num_seqs_source"].startswith("--max-num-seqs")
            assert r["base"]["capture_ceiling"] == 1024
        else:
            assert r["base"] is None


def test_a7_cap_below_worst_case_warns_at_the_recipe_line(seed: Seed) -> None:
    root, shas = seed
    recipe = git(root, "show", f"{shas['head']}:{RECIPE}") + "\n"
    kept = recipe.replace("    max-model-len: 1048576           # 1M-token context\n",
                          "    max-model-len: 1048576           # 1M-token context\n    max-num-seqs: 128\n")
    sha = _variant(seed, "v-cap", {RECIPE: kept.encode()})
    ws = [f for f in findings(review(root, "base", sha), "launch-derivation") if f.severity == "warning"]
    assert {f.title for f in ws} == {"sequence cap 128 < worst-case 256 in flight (conc 128 × fan-out 2)"}
    assert {(f.primary.path, f.primary.line) for f in ws} == {(RECIPE, 16)}
    assert len(ws) == 2  # one per arm, at conc 128 only


def test_a8_recipe_link_missing(head_report) -> None:  # type: ignore[no-untyped-def]
    (f,) = findings(head_report, "recipe-link")
    assert f.severity == "error" and (f.primary.path, f.primary.line) == (MASTER, 6)
    assert f.evidence["scope"] == "pr"


def test_a9_exit_code_and_markdown(seed: Seed) -> None:
    root, shas = seed
    proc = cli(root, "--base", "base", "--head", "head", "--labels", "full-sweep-fail-fast", "--format", "markdown")
    assert proc.returncode == 1, proc.stderr
    md = proc.stdout
    assert md.startswith(f"<!-- infx-review sha={shas['head']} -->\n") and len(md) <= 65_536
    rows = [ln.split(" ", 2)[1].rstrip(":") for ln in md.splitlines() if ln[:1] in "✅❌⚠➖❔" and ": " in ln
            and ln.split(" ", 2)[1].rstrip(":") in RULE_IDS]
    assert rows == list(RULE_IDS)


def test_head_fixed(seed: Seed) -> None:
    root, _ = seed
    proc = cli(root, "--base", "base", "--head", "head-fixed", "--labels", "full-sweep-fail-fast", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    data = as_json(proc)
    status = {r["id"]: r["status"] for r in data["rules"]}
    assert data["schema"] == "infx.review/1"
    for rid in ("memory-fit", "launch-claims", "eval-coverage", "changelog-append"):
        assert status[rid] == "pass", (rid, status)
    assert status["failure-isolation"] == "warn" and status["recipe-link"] == "fail"
    reasons = {r["id"]: r["reason"] for r in data["rules"]}
    for rid in ("recipe-args", "recipe-hardware"):  # the seed workspace names no recipes checkout
        assert (status[rid], reasons[rid]) == ("n/a", "no recipes checkout: give --recipes-repo or [recipes] path")
    assert data["summary"]["points"] == {"added": 10, "changed": 6, "removed": 0, "unchanged": 0}


def test_image_pin_changelog_digest_differs_from_the_lock(seed: Seed) -> None:
    root, shas = seed
    log = git(root, "show", f"{shas['head']}:perf-changelog.yaml") + "\n"
    other = "sha256:" + "0" * 64
    log = log.replace("on the pinned image vllm", f"on the pinned image ({other}) vllm")
    sha = _variant(seed, "v-digest", {"perf-changelog.yaml": log.encode()})
    (f,) = findings(review(root, "base", sha), "image-pin")
    assert f.severity == "error" and (f.primary.path, f.primary.line) == (MASTER, 7)
    assert other in f.title and "eccb72b74b8c04ce" in f.title
