"""Command-line options shared by ``infx changelog ...`` and
``python -m infx.workflows.validate_perf_changelog``."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from infx.changelog.gate import DEFAULT_CHANGELOG, GateOptions
from infx.changelog.history import PullRequestContext
from infx.changelog.snapshot import DEFAULT_RUNNER_CONFIG
from infx.diagnostics import Diagnostic, InfxError


def gate_options(*, repo: Path | str = ".", base_ref: str, head_ref: str, changelog_file: str = DEFAULT_CHANGELOG,
                 config_files: list[str] | None = None, runner_config: str = DEFAULT_RUNNER_CONFIG,
                 all_evals: bool = False, evals_only: bool = False, trim_conc: bool = False,
                 changed_launches: bool = False, pr_number: int | None = None,
                 link_repo: str | None = None) -> GateOptions:
    if pr_number is not None and pr_number < 1:
        raise InfxError(Diagnostic(f"--pr-number must be a positive integer, got {pr_number}"))
    try:
        return GateOptions(repo=Path(repo), base_ref=base_ref, head_ref=head_ref, changelog_file=changelog_file,
                           config_files=config_files or None, runner_config=runner_config, all_evals=all_evals,
                           evals_only=evals_only, trim_conc=trim_conc, changed_launches=changed_launches,
                           pr=PullRequestContext.from_env(pr_number, link_repo))
    except ValidationError as exc:
        raise InfxError([Diagnostic(e["msg"].removeprefix("Value error, ")) for e in exc.errors()]) from None
