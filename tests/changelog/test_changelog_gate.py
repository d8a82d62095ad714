"""The history gate on real git repositories: base commit = the real 772-entry changelog + the
seed catalog; head commit = one change. Each rejection must name the entry and the line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infx.changelog.gate import GateOptions, changelog_points, run_gate
from infx.changelog.history import PullRequestContext
from infx.diagnostics import InfxError

from .helpers import REPO_ROOT, SEED_KEY, GitRepo, real_changelog, seed_entry

LOG = "perf-changelog.yaml"
N = 772  # entries in the real changelog


def gate(repo: GitRepo, base: str, head: str, **kw: object) -> object:
    return run_gate(GateOptions(repo=repo.path, base_ref=base, head_ref=head, **kw))  # type: ignore[arg-type]


def rejected(repo: GitRepo, base: str, head: str, **kw: object) -> list[str]:
    with pytest.raises(InfxError) as exc:
        gate(repo, base, head, **kw)
    return [str(d) for d in exc.value.diagnostics]


def lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def line_of(data: bytes, needle: bytes, nth: int = 0) -> int:
    at = -1
    for _ in range(nth + 1):
        at = data.index(needle, at + 1)
    return data.count(b"\n", 0, at) + 1


def appended(extra: bytes = b"") -> bytes:
    return real_changelog() + b"\n" + seed_entry() + extra


# --- accepted changes -------------------------------------------------------------------------

def test_valid_append_of_the_seed_entry(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    head = repo.commit({LOG: appended()})
    report = gate(repo, base, head)
    assert [a.index for a in report.change.additions] == [N]
    assert report.change.additions[0].line == line_of(appended(), b"    - " + SEED_KEY.encode()) - 1
    rows = report.matrix.single_node["agentic"]
    names = sorted(r["exp-name"] for r in rows)
    assert len(rows) == 16
    concs = (1, 2, 4, 8, 16, 32, 64, 128)
    assert names == sorted(f"dsv41flash_tp{tp}_conc{c}_kvnone_spec-mtp" for tp in (2, 4) for c in concs)
    assert all(len(r["recipe-fingerprint"]) == 64 for r in rows)
    # one fingerprint per TP arm: conc and exp-name do not change the recipe
    assert len({r["recipe-fingerprint"] for r in rows}) == 2
    assert report.matrix.changelog_metadata.entries[0]["config-keys"] == [SEED_KEY]
    assert report.matrix.multi_node == {} and report.matrix.evals == []
    # default eval mode: each TP arm gets its own eval point (c128 for both)
    evals = report.matrix.agentic_evals
    assert sorted((r["tp"], r["conc"]) for r in evals) == [(2, 128), (4, 128)]
    assert all(r["eval-only"] and r["run-eval"] for r in evals)


def test_valid_append_through_the_ci_module(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    head = repo.commit({LOG: appended()})
    proc = subprocess.run([sys.executable, "-m", "infx.workflows.validate_perf_changelog", "--base-ref", base,
                           "--head-ref", head], cwd=repo.path, check=False, capture_output=True, text=True,
                          env={**os.environ, "GITHUB_EVENT_NAME": "push"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(
        f"Validated {LOG}: final newline present and matrix generated (1 new entry; 16 throughput rows")


def test_pr_link_only_correction_is_accepted(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    old = real_changelog()
    new = old.replace(b"/pull/XXX\n", b"/pull/2633\n")
    assert new != old and len(new) == len(old) + 1
    head = repo.commit({LOG: new})
    report = gate(repo, base, head)
    (corr,) = report.change.corrections
    assert corr.head.entry.pr_link.endswith("/pull/2633") and corr.base.entry.pr_link.endswith("/pull/XXX")
    assert report.change.additions == [] and report.matrix.all_rows() == []


def test_unchanged_changelog_passes_with_an_empty_matrix(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    head = repo.commit({"README": b"unrelated\n"})
    report = gate(repo, base, head)
    assert report.change.additions == [] and report.change.corrections == []
    assert report.matrix.all_rows() == []


# --- rejected changes -------------------------------------------------------------------------

def test_entry_inserted_in_the_middle(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    old = real_changelog()
    at = old.index(b"- config-keys:\n    - gptoss-fp4-*-trt")  # entry #2, line 8
    new = old[:at] + seed_entry() + b"\n" + old[at:]
    head = repo.commit({LOG: new})
    (err,) = rejected(repo, base, head)
    assert err.startswith(
        f"{LOG}:8:1: error: entry #2 [{SEED_KEY}]: new entry inserted before historical entry #2 (base line 8)")
    assert "appended at the end" in err


def test_edited_historical_description(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    old = real_changelog()
    new = old.replace(b'"6-7% uplift for llama for 6/8 configs"', b'"7% uplift for llama"')
    head = repo.commit({LOG: new + b"\n" + seed_entry()})
    (err,) = rejected(repo, base, head)
    assert err == (f"{LOG}:1:1: error: historical entry #1 [70b-fp8-*-vllm] (base line 1) was modified (description); "
                   "only a pr-link correction may change a historical entry")


def test_deleted_entry(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    old = real_changelog()
    start = old.index(b"- config-keys:\n    - gptoss*\n")  # entry #3
    line = line_of(old, b"- config-keys:\n    - gptoss*\n")
    end = old.index(b"- config-keys:", start + 1)
    head = repo.commit({LOG: old[:start] + old[end:]})
    (err,) = rejected(repo, base, head)
    assert err.startswith(f"{LOG}:{line}:1: error: historical entry #3 [gptoss*, dsr1*] (base line {line}) was deleted")


def test_deleted_last_entry(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    old = real_changelog()
    cut = old.rindex(b"\n\n- config-keys:")
    head = repo.commit({LOG: old[: cut + 1]})
    (err,) = rejected(repo, base, head)
    assert f"historical entry #{N} [dsv4-fp4-b200-vllm-agentic-mtp] (base line 6373) was deleted" in err


@pytest.mark.parametrize("with_append", [False, True], ids=["alone", "with-append"])
def test_whitespace_change_in_history(seeded_repo: tuple[GitRepo, str], with_append: bool) -> None:
    repo, base = seeded_repo
    old = real_changelog()
    stray = old.index(b"\n  \n") + 1  # first whitespace-only line: frozen history
    line = old.count(b"\n", 0, stray) + 1
    new = old[:stray] + old[stray + 2:]  # "  " -> "" (the reference's git-diff reader lets this through)
    head = repo.commit({LOG: new + (b"\n" + seed_entry() if with_append else b"")})
    (err,) = rejected(repo, base, head)
    starts = [i + 1 for i, ln in enumerate(lines(old)) if ln.startswith(b"- config-keys:")]
    k = sum(1 for s in starts if s <= line)
    assert err == (f"{LOG}:{line}:1: error: entry #{k} (line {line}): historical bytes changed; "
                   "historical whitespace and formatting are immutable")


def test_missing_final_newline(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    new = appended()[:-1]
    head = repo.commit({LOG: new})
    (err,) = rejected(repo, base, head)
    last = new.count(b"\n") + 1
    assert err.startswith(f"{LOG}:{last}:")
    assert f"error: entry #{N + 1}: the file must end with a newline" in err


def test_two_blank_lines_before_an_entry(seeded_repo: tuple[GitRepo, str]) -> None:
    """InferenceX merged such changes: a warning with the fix, never a rejection."""
    repo, base = seeded_repo
    new = real_changelog() + b"\n\n" + seed_entry()
    head = repo.commit({LOG: new})
    report = gate(repo, base, head)
    line = line_of(new, b"    - " + SEED_KEY.encode()) - 1
    assert report.warnings == [f"{LOG}:{line - 1}:1: warning: entry #{N + 1} [{SEED_KEY}]: 2 blank lines before "
                               f"the new entry; fix: delete line {line - 1} (one empty line separates entries)"]
    assert len(report.change.additions) == 1


def test_no_blank_line_before_an_entry(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    head = repo.commit({LOG: real_changelog() + seed_entry()})
    report = gate(repo, base, head)
    (w,) = report.warnings
    assert f"warning: entry #{N + 1} [{SEED_KEY}]: no empty line before the new entry; fix: insert one" in w


def test_trailing_blank_line(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    new = appended(b"\n")
    head = repo.commit({LOG: new})
    n_lines = new.count(b"\n")
    assert gate(repo, base, head).warnings == [
        f"{LOG}:{n_lines}:1: warning: entry #{N + 1} [{SEED_KEY}]: the file ends with a blank line; "
        f"fix: delete line {n_lines}"]


def test_pattern_matching_no_key(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    entry = seed_entry().replace(b"    - " + SEED_KEY.encode() + b"\n",
                                 b"    - " + SEED_KEY.encode() + b"\n    - dsv41flash-fp4-b300-*\n")
    new = real_changelog() + b"\n" + entry
    head = repo.commit({LOG: new})
    (err,) = rejected(repo, base, head)
    line = line_of(new, b"    - dsv41flash-fp4-b300-*")
    assert err.startswith(f"{LOG}:{line}:1: error: entry #{N + 1} [{SEED_KEY}, dsv41flash-fp4-b300-*]: "
                          "config-key pattern 'dsv41flash-fp4-b300-*' matches no key in the catalog at ")
    assert "configs/amd-master.yaml" in err


def test_corrections_and_additions_cannot_mix(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    new = real_changelog().replace(b"/pull/XXX\n", b"/pull/2633\n") + b"\n" + seed_entry()
    head = repo.commit({LOG: new})
    (err,) = rejected(repo, base, head)
    assert f"entry #{N + 1} [{SEED_KEY}]: pr-link corrections" in err and "cannot be mixed" in err


def test_correction_must_be_canonical_and_semantic(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    old = real_changelog()
    head = repo.commit({LOG: old.replace(b"/pull/2305/changes\n", b"/pull/2305\n")})
    (err,) = rejected(repo, base, head)
    assert "pr-link reformatted without a semantic change" in err
    assert err.startswith(f"{LOG}:{line_of(old, b'/pull/2305/changes')}:")
    head = repo.commit({LOG: old.replace(b"/pull/XXX\n", b"/pull/2633/files\n")})
    (err,) = rejected(repo, base, head)
    assert "corrected pr-link 'https://github.com/SemiAnalysisAI/InferenceX/pull/2633/files' is not canonical" in err


def test_pull_request_link_rules(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    head = repo.commit({LOG: appended()})
    gate(repo, base, head, pr=PullRequestContext(number=3326))  # its own link
    (err,) = rejected(repo, base, head, pr=PullRequestContext(number=3400))
    assert ("must be this pull request's link 'https://github.com/SemiAnalysisAI/InferenceX/pull/3400' "
            "or the placeholder 'XXX'") in err
    bare = repo.commit({LOG: appended().replace(b"https://github.com/SemiAnalysisAI/InferenceX/pull/3326\n", b"XXX\n")})
    gate(repo, base, bare, pr=PullRequestContext(number=3400))
    placeholder = repo.commit({LOG: appended().replace(b"/pull/3326\n", b"/pull/XXX\n")})
    gate(repo, base, placeholder, pr=PullRequestContext(number=3400))
    (err,) = rejected(repo, base, placeholder)  # not a pull request: a real link is required
    assert f"entry #{N + 1} [{SEED_KEY}]: new entry needs a canonical pr-link" in err


def test_pr_number_from_github_event(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 3326, "pull_request": {"number": 3326}}))
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event), "INFX_CHANGELOG_REPO": "acme/infx",
           "GITHUB_REPOSITORY": "fork/InferenceX"}
    ctx = PullRequestContext.from_env(env=env)
    assert ctx == PullRequestContext(number=3326, repo_slug="acme/infx")
    pull_12 = "refs/pull/12/merge"
    assert PullRequestContext.from_env(env={"GITHUB_EVENT_NAME": "pull_request", "GITHUB_REF": pull_12}).number == 12
    assert PullRequestContext.from_env(env={"GITHUB_EVENT_NAME": "push", "GITHUB_REF": pull_12}).number is None
    assert PullRequestContext.from_env(7, env=env).number == 7


def test_ci_module_reads_the_pull_request_event(seeded_repo: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, base = seeded_repo
    head = repo.commit({LOG: appended()})
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 3400}}))
    cmd = [sys.executable, "-m", "infx.workflows.validate_perf_changelog", "--base-ref", base, "--head-ref", head]
    env = {**os.environ, "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}
    proc = subprocess.run(cmd, cwd=repo.path, check=False, capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "must be this pull request's link" in proc.stderr and "/pull/3400'" in proc.stderr
    proc = subprocess.run([*cmd, "--pr-number", "3326"], cwd=repo.path, check=False, capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stderr


def _validate(repo: GitRepo, base: str, head: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx.workflows.validate_perf_changelog", "--base-ref", base,
                           "--head-ref", head, "--repo", str(repo.path)],
                          check=False, capture_output=True, text=True, cwd=REPO_ROOT)


def test_cli_rejection_exit_code_and_diagnostic(seeded_repo: tuple[GitRepo, str]) -> None:
    """An entry inserted before the last historical one: an error at its line, exit 2 (both CLIs)."""
    repo, base = seeded_repo
    data = real_changelog()
    last = data.rindex(b"\n- config-keys:") + 1
    new = data[:last] + seed_entry() + b"\n" + data[last:]
    head = repo.commit({LOG: new})
    line = new.count(b"\n", 0, last) + 1
    for proc in (_validate(repo, base, head),
                 subprocess.run([sys.executable, "-m", "infx", "changelog", "validate", "--base-ref", base,
                                 "--head-ref", head, "--repo", str(repo.path)],
                                check=False, capture_output=True, text=True, cwd=REPO_ROOT)):
        assert proc.returncode == 2
        assert proc.stderr.startswith(f"{LOG}:{line}:1: error: entry #{N}") and "inserted before historical entry" \
            in proc.stderr
        assert "Traceback" not in proc.stderr


def test_cli_historical_whitespace_is_an_error_at_its_line(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    data = real_changelog()
    at = data.index(b"\n", data.index(b"  pr-link:", len(data) // 2))
    line = data.count(b"\n", 0, at) + 1
    new = data[:at] + b" " + data[at:] + b"\n" + seed_entry()  # a trailing space on a historical line
    proc = _validate(repo, base, repo.commit({LOG: new}))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"{LOG}:{line}:1: error: ") and "historical" in proc.stderr


def test_cli_blank_line_layout_is_a_warning_with_the_fix(seeded_repo: tuple[GitRepo, str]) -> None:
    """Two blank lines before the entry, or a trailing blank line: exit 0, a warning naming the fix."""
    repo, base = seeded_repo
    two = real_changelog() + b"\n\n" + seed_entry()
    proc = _validate(repo, base, repo.commit({LOG: two}))
    assert proc.returncode == 0, proc.stderr
    second = two.count(b"\n", 0, len(real_changelog()) + 1) + 1
    assert proc.stderr.startswith(f"{LOG}:{second}:1: warning: entry #{N + 1}") and f"fix: delete line {second}" \
        in proc.stderr
    assert proc.stdout.startswith("Validated perf-changelog.yaml")
    trailing = appended(b"\n")
    proc = _validate(repo, base, repo.commit({LOG: trailing}))
    assert proc.returncode == 0, proc.stderr
    n = trailing.count(b"\n")
    assert proc.stderr == (f"{LOG}:{n}:1: warning: entry #{N + 1} [{SEED_KEY}]: the file ends with a blank line; "
                           f"fix: delete line {n}\n")


def test_bad_revision_is_a_diagnostic(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    (err,) = rejected(repo, base, "no-such-branch")
    assert "unknown git revision 'no-such-branch'" in err


def test_changelog_points_for_the_sweep_stage(seeded_repo: tuple[GitRepo, str]) -> None:
    repo, base = seeded_repo
    head = repo.commit({LOG: appended()})
    points = changelog_points(repo.path, base, head)
    assert len(points) == 18  # 16 throughput + one eval per TP arm
    assert sum(p.eval_only for p in points) == 2
    points = [p for p in points if not p.eval_only]
    assert {p.tp for p in points} == {2, 4} and all(p.is_agentic and p.spec_decoding == "mtp" for p in points)
    assert len({p.point_id for p in points}) == 16


def test_new_changelog_file_and_deleted_changelog_file(git_repo: GitRepo) -> None:
    from .helpers import seed_catalog

    master, runners = seed_catalog()
    base = git_repo.commit({"configs/amd-master.yaml": master, "configs/runners.yaml": runners})
    head = git_repo.commit({LOG: seed_entry()})
    report = gate(git_repo, base, head)
    assert [a.index for a in report.change.additions] == [0]
    assert len(report.matrix.single_node["agentic"]) == 16
    gone = git_repo.commit({LOG: None})
    (err,) = rejected(git_repo, head, gone)
    assert err == f"{LOG}: error: '{LOG}' does not exist at revision '{gone}'"


def test_option_errors_are_diagnostics() -> None:
    from infx.changelog.options import gate_options

    with pytest.raises(InfxError, match="--all-evals and --evals-only are mutually exclusive"):
        gate_options(base_ref="a", head_ref="b", all_evals=True, evals_only=True)
    with pytest.raises(InfxError, match="--pr-number must be a positive integer"):
        gate_options(base_ref="a", head_ref="b", pr_number=0)
    opts = gate_options(base_ref="a", head_ref="b", pr_number=5, link_repo="acme/infx")
    assert opts.pr == PullRequestContext(number=5, repo_slug="acme/infx")


def test_a_pr_number_past_64_bits_is_not_canonical_never_a_traceback(seeded_repo: tuple[GitRepo, str]) -> None:
    """Python refuses to convert a 5,000-digit integer; the link's number is bounded where it is read."""
    from infx.changelog.models import pr_link_number

    huge = b"9" * 5000
    assert pr_link_number("https://github.com/SemiAnalysisAI/InferenceX/pull/" + huge.decode()) is None
    assert pr_link_number("https://github.com/SemiAnalysisAI/InferenceX/pull/3326") == 3326
    repo, base = seeded_repo
    head = repo.commit({LOG: appended().replace(b"/pull/3326\n", b"/pull/" + huge + b"\n")})
    (err,) = rejected(repo, base, head)
    assert f"entry #{N + 1} [{SEED_KEY}]: new entry needs a canonical pr-link" in err
    assert PullRequestContext.from_env(env={"GITHUB_EVENT_NAME": "pull_request",
                                            "GITHUB_REF": f"refs/pull/{huge.decode()}/merge"}).number is None
