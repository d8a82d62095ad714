"""``infx changelog validate|matrix|resolve``.

Exit status: 0 when the change passes; 2 when it is rejected, with one
``FILE:LINE:COL: error: MESSAGE`` line per problem on stderr (the line is in the head
revision of the changelog and the message names the entry). Refs are read with git, so the
commands run inside the repository (``--repo`` to point elsewhere).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from infx.diagnostics import exit_on_error

app = typer.Typer(name="changelog", help="perf-changelog gate and change-driven matrices.", no_args_is_help=True)

BaseRef = Annotated[str, typer.Option("--base-ref", help="Base revision (e.g. origin/main).")]
HeadRef = Annotated[str, typer.Option("--head-ref", help="Head revision (e.g. HEAD or the PR sha).")]
ChangelogFile = Annotated[str, typer.Option("--changelog-file", help="Changelog path in the repository.")]
ConfigFiles = Annotated[list[str] | None, typer.Option(
    "--config-files", help="Master YAML paths read at the revisions (default configs/*-master.yaml).")]
RunnerConfig = Annotated[str, typer.Option("--runner-config", help="runners.yaml path read at the revisions.")]
AllEvals = Annotated[bool, typer.Option("--all-evals", help="Expand evals to every eligible point.")]
EvalsOnly = Annotated[bool, typer.Option("--evals-only", help="Only eval points (no throughput).")]
PrNumber = Annotated[int | None, typer.Option(
    "--pr-number", help="Pull request number (default: the GitHub pull_request event, if any).")]
LinkRepo = Annotated[str | None, typer.Option(
    "--link-repo", help="owner/name whose /pull/<n> links are canonical (default $INFX_CHANGELOG_REPO or "
                        "SemiAnalysisAI/InferenceX).")]
Repo = Annotated[Path, typer.Option("--repo", help="Repository to read revisions from.")]


@app.command("validate")
@exit_on_error
def validate(base_ref: BaseRef, head_ref: HeadRef, changelog_file: ChangelogFile = "perf-changelog.yaml",
             config_files: ConfigFiles = None, runner_config: RunnerConfig = "configs/runners.yaml",
             all_evals: AllEvals = False, evals_only: EvalsOnly = False, pr_number: PrNumber = None,
             link_repo: LinkRepo = None, repo: Repo = Path(".")) -> None:
    """Gate a changelog change: append-only history, resolvable keys, a generatable matrix."""
    from infx.changelog.gate import run_gate
    from infx.changelog.options import gate_options

    opts = gate_options(repo=repo, base_ref=base_ref, head_ref=head_ref, changelog_file=changelog_file,
                        config_files=config_files, runner_config=runner_config, all_evals=all_evals,
                        evals_only=evals_only, pr_number=pr_number, link_repo=link_repo)
    report = run_gate(opts)
    for w in report.warnings:
        typer.echo(w, err=True)
    typer.echo(report.summary())


@app.command("matrix")
@exit_on_error
def matrix(base_ref: BaseRef, head_ref: HeadRef, changelog_file: ChangelogFile = "perf-changelog.yaml",
           config_files: ConfigFiles = None, runner_config: RunnerConfig = "configs/runners.yaml",
           trim_conc: Annotated[bool, typer.Option("--trim-conc",
                                                   help="Keep only the lowest concurrency per curve.")] = False,
           changed_launches: Annotated[bool, typer.Option(
               "--changed-launches",
               help="Keep only rows whose bench script or benchmark_lib.sh changed between the revisions.")] = False,
           all_evals: AllEvals = False, evals_only: EvalsOnly = False, pr_number: PrNumber = None,
           link_repo: LinkRepo = None, repo: Repo = Path(".")) -> None:
    """Print the bucketed matrix (JSON) that a changelog change selects."""
    from infx.changelog.gate import run_gate
    from infx.changelog.options import gate_options

    opts = gate_options(repo=repo, base_ref=base_ref, head_ref=head_ref, changelog_file=changelog_file,
                        config_files=config_files, runner_config=runner_config, all_evals=all_evals,
                        evals_only=evals_only, trim_conc=trim_conc, changed_launches=changed_launches,
                        pr_number=pr_number, link_repo=link_repo)
    report = run_gate(opts)
    typer.echo(json.dumps(report.matrix.model_dump(exclude_none=True), separators=(",", ":")))


@app.command("resolve")
@exit_on_error
def resolve(changelog_file: Annotated[Path, typer.Option("--changelog-file", help="Changelog file on disk.")]
            = Path("perf-changelog.yaml"),
            config_files: Annotated[list[Path] | None, typer.Option("--config-files",
                                                                    help="Master YAML files on disk.")] = None,
            runner_config: Annotated[Path, typer.Option("--runner-config")] = Path("configs/runners.yaml")) -> None:
    """Parse a whole changelog and resolve every entry's keys against a catalog on disk.
    Keys the catalog no longer has are reported as warnings (history outlives catalog entries)."""
    from infx.catalog import load_catalog
    from infx.changelog.parse import parse_changelog
    from infx.changelog.resolve import resolve_history, unmatched_diagnostic
    from infx.diagnostics import Diagnostic, InfxError, warn

    files = config_files or sorted(Path("configs").glob("*-master.yaml"))
    try:
        data = changelog_file.read_bytes()
    except OSError as exc:
        raise InfxError(Diagnostic(f"cannot read '{changelog_file}': {exc.strerror}", str(changelog_file))) from None
    log = parse_changelog(data, str(changelog_file))
    catalog = load_catalog(list(files))
    report = resolve_history(log, list(catalog.entries))
    by_index = {e.index: e for e in log.entries}
    for u in report.unmatched:
        warn(unmatched_diagnostic(log.file, by_index[u.entry_index], u, "(no longer in the catalog)", "warning"))
    typer.echo(f"{changelog_file}: {report.entries} entries, {report.resolved_patterns}/{report.patterns} patterns "
               f"resolve; {len(report.missing_patterns)} distinct patterns match no current key")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="changelog")
