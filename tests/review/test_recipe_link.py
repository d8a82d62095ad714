"""``recipe-link``: link recognition (spec 5.2, by infx.recipes.rules.parse_links), the sign-off section,
merge state from --link-state, and the two policies, on the seed-pr fixture (head-fixed) and on plain text."""

from __future__ import annotations

import json
from pathlib import Path

from infx.review.upstream import found_links, signoff_section

from .helpers import cli, findings, review, rule

Seed = tuple[Path, dict[str, str]]
PR = "https://github.com/vllm-project/recipes/pull/1006"


def test_recognition_kinds() -> None:
    text = ("see vllm-project/recipes#1006 and https://github.com/vllm-project/recipes/commit/abc1234 then "
            "https://recipes.vllm.ai/deepseek-ai/DeepSeek-V4.1-Flash?hardware=mi355x, "
            "https://github.com/sgl-project/sglang/pull/77 https://cookbook.sglang.io/x/y "
            "https://github.com/vllm-project/recipes/blob/main/models/deepseek-ai/DeepSeek-V4.1-Flash.yaml")
    found = found_links(text, "body")
    got = [(x.kind, x.url) for x in found]
    assert got == [
        ("vllm-recipes-pr", PR),
        ("vllm-recipes-commit", "https://github.com/vllm-project/recipes/commit/abc1234"),
        ("vllm-recipes-page", "https://recipes.vllm.ai/deepseek-ai/DeepSeek-V4.1-Flash?hardware=mi355x"),
        ("sglang-pr", "https://github.com/sgl-project/sglang/pull/77"),
        ("sglang-page", "https://cookbook.sglang.io/x/y"),
        ("vllm-recipes-file",
         "https://github.com/vllm-project/recipes/blob/main/models/deepseek-ai/DeepSeek-V4.1-Flash.yaml"),
    ]
    assert found[2].link.pin.hardware == "mi355x"  # the trailing comma is sentence punctuation, not the query
    assert found[0].link.pr == 1006 and {x.source for x in found} == {"body"}
    assert found_links("https://github.com/other/recipes/pull/1", "body") == []


def test_signoff_section() -> None:
    text = "## Checklist\nlink vllm-project/recipes#1\n### Additional detail section:\nsee " + PR + "\nSigned: @me\n"
    assert PR in signoff_section(text) and "recipes#1\n" not in signoff_section(text)


def _state(tmp: Path, state: str) -> Path:
    p = tmp / "state.json"
    merged = state == "MERGED"
    p.write_text(json.dumps([{"url": PR, "state": state, "mergedAt": "2026-08-21T00:00:00Z" if merged else None,
                              "mergeCommit": {"oid": "8959cf64189c71d36e11c6a30335f923f261b1f7"} if merged else None}]))
    return p


def test_open_pr_is_an_error(seed: Seed, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text("recipe: vllm-project/recipes#1006\n")
    rep = review(seed[0], "base", "head-fixed", body=body, link_state=_state(tmp_path, "OPEN"))
    (f,) = findings(rep, "recipe-link")
    assert f.severity == "error" and f.title.startswith("upstream PR is open (not merged)")


def test_merged_pr_passes_and_policy_inferencex_wants_the_signoff(seed: Seed, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text("recipe: vllm-project/recipes#1006\n")
    rep = review(seed[0], "base", "head-fixed", body=body, link_state=_state(tmp_path, "MERGED"))
    assert rule(rep, "recipe-link").status == "pass"
    (f,) = findings(rep, "recipe-link")
    assert f.evidence["merge_commit"] == "8959cf64189c71d36e11c6a30335f923f261b1f7" and f.evidence["source"] == "body"
    signoff = tmp_path / "signoff.md"
    signoff.write_text("### Additional detail section:\nnothing here\nSigned: @owner\n")
    rep = review(seed[0], "base", "head-fixed", body=body, signoff=signoff, link_state=_state(tmp_path, "MERGED"),
                 link_policy="inferencex")
    (f,) = findings(rep, "recipe-link")
    assert f.severity == "error" and f.title == "link is not in the sign-off's Additional detail section"


def test_unverified_offline_and_bare_commit(seed: Seed, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text("recipe: " + PR + "\n")
    (f,) = findings(review(seed[0], "base", "head-fixed", body=body), "recipe-link")
    assert f.severity == "warning" and "unverified" in f.title
    (f,) = findings(review(seed[0], "base", "head-fixed", body=body, link_policy="inferencex"), "recipe-link")
    assert f.severity == "error"
    signoff = tmp_path / "signoff.md"
    signoff.write_text("### Additional detail section:\nhttps://github.com/vllm-project/recipes/commit/abcdef1\n")
    (f,) = findings(review(seed[0], "base", "head-fixed", signoff=signoff, link_policy="inferencex"), "recipe-link")
    assert f.severity == "error" and f.title == "bare commit does not satisfy the rule"


def test_clean_head_fixed_exits_0(seed: Seed, tmp_path: Path) -> None:
    """O4: head-fixed with a merged link, labels without fail-fast, and a verified... offline image lock
    is a warning, so --strict would block; without it the exit is 0."""
    body = tmp_path / "body.md"
    body.write_text("https://recipes.vllm.ai/deepseek-ai/DeepSeek-V4.1-Flash?hardware=mi355x\n")
    proc = cli(seed[0], "--base", "base", "--head", "head-fixed", "--body", str(body), "--labels",
               "full-sweep-enabled")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    strict = cli(seed[0], "--base", "base", "--head", "head-fixed", "--body", str(body), "--labels",
                 "full-sweep-enabled", "--strict")
    assert strict.returncode == 1  # the offline image pin is a warning
