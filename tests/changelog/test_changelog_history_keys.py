"""The whole real changelog against the compat catalog: every pattern resolves except keys the
catalog really no longer has, which are reported (warnings), never a crash."""

from __future__ import annotations

import fnmatch
import subprocess
import sys

import pytest

from infx.changelog.parse import parse_changelog
from infx.changelog.resolve import match_pattern, resolve_history

from .helpers import REPO_ROOT, compat_dir, real_changelog


@pytest.fixture(scope="module")
def compat_keys() -> list[str]:
    from infx.catalog import load_catalog

    files = [compat_dir() / "amd-master.yaml", compat_dir() / "nvidia-master.yaml"]
    if not all(f.exists() for f in files):
        pytest.skip("compat catalog not found (set INFX_SHARED)")
    return list(load_catalog(files).entries)


def test_every_pattern_resolves_or_is_reported(compat_keys: list[str]) -> None:
    log = parse_changelog(real_changelog(), "perf-changelog.yaml")
    report = resolve_history(log, compat_keys)
    assert report.entries == 772
    assert report.patterns == sum(len(e.entry.config_keys) for e in log.entries) == 1066
    assert 0 < len(report.unmatched) < report.patterns
    # reported patterns really match nothing in the catalog (checked independently with fnmatch) ...
    for u in report.unmatched:
        assert not fnmatch.filter(compat_keys, u.pattern), u.pattern
        entry = log.entries[u.entry_index]
        assert u.pattern in entry.entry.config_keys and entry.line <= u.line <= entry.end_line
    # ... and every other pattern matches at least one key
    gone = {(u.entry_index, u.pattern) for u in report.unmatched}
    for e in log.entries:
        for p in e.entry.config_keys:
            if (e.index, p) not in gone:
                assert fnmatch.filter(compat_keys, p), p
    # the newest entries refer to keys the catalog still has
    assert all(not any(u.entry_index == e.index for u in report.unmatched) for e in log.entries[-5:])
    assert "70b-fp8-*-vllm" in report.missing_patterns


def test_star_is_the_only_wildcard() -> None:
    keys = ["dsr1-fp4-b200-sglang", "dsr1-fp8-h200-trt", "gptoss-fp4-b200-trt"]
    assert match_pattern("dsr1*", keys) == keys[:2]
    assert match_pattern("*-trt", keys) == keys[1:]
    assert match_pattern("dsr1-fp?-b200-sglang", keys) == []  # '?' is literal, as in the reference
    assert match_pattern("dsr1-fp4-b200-sglang", keys) == keys[:1]
    assert match_pattern("dsr1", keys) == []  # exact keys match whole keys only


def test_resolve_command_reports_missing_keys_as_warnings(compat_keys: list[str]) -> None:
    d = compat_dir()
    proc = subprocess.run(
        [sys.executable, "-m", "infx", "changelog", "resolve", "--changelog-file", str(d / "perf-changelog.yaml"),
         "--config-files", str(d / "amd-master.yaml"), "--config-files", str(d / "nvidia-master.yaml")],
        check=False, capture_output=True, text=True, cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "772 entries" in proc.stdout and "patterns resolve" in proc.stdout
    warnings = proc.stderr.strip().splitlines()
    assert warnings and all(": warning: entry #" in w for w in warnings)
    assert any("'70b-fp8-*-vllm' matches no key" in w and "perf-changelog.yaml:2:1:" in w for w in warnings)
