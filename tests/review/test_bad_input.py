"""Bad input to ``infx review``: one line naming the file (and line), exit 2, nothing written; a base whose
catalog is broken still reviews the head and says the base could not be read."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import cli, review
from .seedrepo import git

Seed = tuple[Path, dict[str, str]]


def _one_line(proc) -> str:  # type: ignore[no-untyped-def]
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def _commit(seed: Seed, branch: str, rel: str, text: str, start: str = "head-fixed") -> str:
    root, shas = seed
    git(root, "checkout", "-q", "-B", branch, shas[start])
    (root / rel).write_text(text)
    git(root, "commit", "-q", "-am", branch)
    sha = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "head-fixed")
    return sha


@pytest.mark.parametrize("opt", ["--base", "--head"])
def test_ref_that_is_not_a_commit(seed: Seed, tmp_path: Path, opt: str) -> None:
    root, shas = seed
    tree = git(root, "rev-parse", "head^{tree}")
    args = {"--base": "base", "--head": "head"}
    for bad in ("no-such-branch", tree):
        args[opt] = bad
        out = tmp_path / "out.json"
        line = _one_line(cli(root, "--base", args["--base"], "--head", args["--head"], "--output", str(out)))
        assert f"{opt} '{bad}' is not a commit" in line and line.startswith("(" + opt + "): error:")
        assert not out.exists()


def test_head_catalog_that_does_not_parse(seed: Seed) -> None:
    root = seed[0]
    text = (root / "configs/amd-master.yaml").read_text().replace("  model: deepseek", "  model: [deepseek", 1)
    sha = _commit(seed, "bad-catalog", "configs/amd-master.yaml", text)
    line = _one_line(cli(root, "--base", "base", "--head", sha))
    assert line.startswith("configs/amd-master.yaml:") and f"(head {sha[:12]})" in line
    assert int(line.split(":")[1]) >= 8


def test_changelog_that_is_not_yaml(seed: Seed) -> None:
    root = seed[0]
    text = (root / "perf-changelog.yaml").read_text() + "- config-keys: [unclosed\n"
    sha = _commit(seed, "bad-log", "perf-changelog.yaml", text)
    line = _one_line(cli(root, "--base", "base", "--head", sha))
    n = text.count("\n")
    assert line.startswith(f"perf-changelog.yaml:{n + 1}:") or line.startswith(f"perf-changelog.yaml:{n}:"), line
    assert "YAML" in line


def test_workspace_that_is_not_a_git_repository(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "infx.toml").write_text("")
    line = _one_line(cli(tmp_path, "--base", "a", "--head", "b"))
    assert "is not a git repository" in line and str(tmp_path) in line


def test_bad_option_values_are_one_line_each(seed: Seed) -> None:
    line = _one_line(cli(seed[0], "--base", "base", "--head", "head", "--format", "yaml"))
    assert "--format" in line


def test_broken_base_still_reviews_the_head(seed: Seed) -> None:
    root = seed[0]
    text = (root / "configs/amd-master.yaml").read_text().replace("  model: deepseek", "  model: [deepseek", 1)
    broken = _commit(seed, "broken-base", "configs/amd-master.yaml", text, start="base")
    rep = review(root, broken, "head-fixed")
    assert not rep.base.readable and "configs/amd-master.yaml:" in (rep.base.problem or "")
    assert rep.summary.points.added == 16 and rep.summary.points.changed == 0
    proc = cli(root, "--base", broken, "--head", "head-fixed")
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"warning: the base ({broken[:12]}) could not be read")


def test_relocated_workspace_paths_are_read_from_the_commit(tmp_path: Path) -> None:
    """A workspace whose infx.toml moves the catalog (``[paths] configs``) is reviewed from its own layout."""
    from .seedrepo import build_seed

    root = tmp_path / "repo"
    build_seed(root)
    git(root, "checkout", "-q", "-B", "moved", "head-fixed")
    git(root, "mv", "configs", "catalog")
    (root / "infx.toml").write_text('[paths]\nconfigs = "catalog"\nrunners = "catalog/runners.yaml"\n'
                                    'images-lock = "catalog/images.lock"\n')
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "move the catalog")
    rep = review(root, "head-fixed", "moved")
    assert rep.summary.points.unchanged == 16 and rep.summary.points.changed == 0
