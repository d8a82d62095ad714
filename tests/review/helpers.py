"""Running ``infx review`` for the tests: in-process (the library) and as the real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from infx.review.engine import run_review
from infx.review.models import ReviewReport, ReviewRequest

REPO = Path(__file__).resolve().parents[2]


def review(root: Path, base: str, head: str, **kw: Any) -> ReviewReport:
    return run_review(ReviewRequest(base=base, head=head, **kw), root)


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", "--workspace", str(root), "review", *args],
                          capture_output=True, text=True, cwd=root, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def rule(report: ReviewReport, rid: str) -> Any:
    return next(r for r in report.rules if r.id == rid)


def findings(report: ReviewReport, rid: str, severity: str | None = None) -> list[Any]:
    return [f for f in report.findings if f.rule == rid and (severity is None or f.severity == severity)]


def as_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return json.loads(proc.stdout)
