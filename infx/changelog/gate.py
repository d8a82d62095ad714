"""The changelog gate and the change-driven matrix, end to end.

1. read the changelog at the base and head revisions (``git show``), parse both;
2. history rules (:mod:`infx.changelog.history`): append-only, pr-link corrections, links;
3. resolve each new entry's ``config-keys`` against the catalog at the head revision;
4. generate the rows each new entry selects (throughput and evals, per-entry eval flags,
   append-only deltas against the base catalog), de-duplicated by ``point-id``, bucketed.

A change that cannot run fails at 3 or 4, before any machine is booked. Every problem is an
:class:`InfxError` of ``FILE:LINE:COL`` diagnostics naming the entry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from infx.changelog import git
from infx.changelog.appendonly import append_only_delta, scope_diagnostics
from infx.changelog.history import ChangeSet, PullRequestContext, check_history, layout_warnings
from infx.changelog.models import Changelog, ParsedEntry
from infx.changelog.parse import entry_start_lines, parse_appended, parse_changelog
from infx.changelog.resolve import resolve_entry, unmatched_diagnostic
from infx.changelog.snapshot import (
    DEFAULT_RUNNER_CONFIG,
    CatalogSnapshot,
    load_snapshot,
)
from infx.diagnostics import Diagnostic, InfxError
from infx.matrix.buckets import (
    BucketBuilder,
    ChangelogMatrix,
    ChangelogMetadata,
    Row,
    trim_conc,
    with_fingerprint,
)
from infx.matrix.point import Point

DEFAULT_CHANGELOG = "perf-changelog.yaml"


class GateOptions(BaseModel):
    """Everything the gate needs. Paths in ``changelog_file``/``config_files``/``runner_config`` are
    relative to the repository root and are read at the revisions, not from the working tree."""

    model_config = ConfigDict(frozen=True)

    repo: Path = Path(".")
    base_ref: str
    head_ref: str
    changelog_file: str = DEFAULT_CHANGELOG
    config_files: list[str] | None = None
    runner_config: str = DEFAULT_RUNNER_CONFIG
    all_evals: bool = False
    evals_only: bool = False
    trim_conc: bool = False
    #: keep only rows whose bench script (or benchmark_lib.sh) changed between the revisions
    changed_launches: bool = False
    pr: PullRequestContext = Field(default_factory=PullRequestContext)

    @model_validator(mode="after")
    def _flags(self) -> GateOptions:
        if self.all_evals and self.evals_only:
            raise ValueError("--all-evals and --evals-only are mutually exclusive")
        return self


class GateReport(BaseModel):
    """What a passing gate found: the change and the matrix it selects."""

    model_config = ConfigDict(frozen=True)
    changelog_file: str
    change: ChangeSet
    matrix: ChangelogMatrix
    seconds: float
    #: blank-line layout of the appended text (FILE:LINE:COL: warning: ... with the fix); never blocks
    warnings: list[str] = []

    def summary(self) -> str:
        c = self.change
        n = len(c.additions)
        what = (f"{n} new entr{'y' if n == 1 else 'ies'}" if n
                else f"{len(c.corrections)} pr-link correction(s)" if c.corrections else "no change")
        return (f"Validated {self.changelog_file}: final newline present and matrix generated "
                f"({what}; {len(self.matrix.throughput_rows())} throughput rows, "
                f"{len(self.matrix.eval_rows())} eval rows; {self.seconds:.2f} s)")


def read_changelog(repo: Path, rev: str, path: str, *, required: bool, base: Changelog | None = None) -> Changelog:
    """The changelog at ``rev``; with ``base``, an append-only head is parsed incrementally."""
    data = git.show_file(repo, rev, path)
    if data is None:
        if required:
            raise InfxError(Diagnostic(f"'{path}' does not exist at revision '{rev}'", path))
        data = b""
        return Changelog(file=path, data=data, entries=[])
    label = path if required else f"{rev}:{path}"
    try:
        if base is not None:
            fast = parse_appended(base, data, label)
            if fast is not None:
                return fast
        return parse_changelog(data, label)
    except InfxError as exc:
        raise InfxError([_name_entry(d, data) for d in exc.diagnostics]) from None


def _name_entry(d: Diagnostic, data: bytes) -> Diagnostic:
    if d.line is None or "entry #" in d.message:
        return d
    starts = entry_start_lines(data)
    k = sum(1 for s in starts if s <= d.line)
    if not k:
        return d
    return Diagnostic(f"entry #{k}: {d.message}", d.file, d.line, d.col, d.path, d.severity)


def check_change(opts: GateOptions) -> tuple[Changelog, Changelog, ChangeSet]:
    """Steps 1-2: the history gate only (no catalog needed)."""
    repo = git.repo_root(opts.repo)
    git.resolve_rev(repo, opts.base_ref)
    git.resolve_rev(repo, opts.head_ref)
    base = read_changelog(repo, opts.base_ref, opts.changelog_file, required=False)
    head = read_changelog(repo, opts.head_ref, opts.changelog_file, required=True, base=base)
    return base, head, check_history(base, head, opts.pr)


def _generate(snapshot: CatalogSnapshot, keys: list[str], scenario_types: Sequence[str] | None,
              evals: str) -> list[Row]:
    from infx.matrix.generate import test_config_rows

    return test_config_rows(snapshot.catalog, snapshot.runners, keys, evals=evals, scenario_types=scenario_types)


def _repointer(keys: list[str]) -> Callable[[Row, Row], str]:
    """``(old, new) -> point-id of new`` for rows whose conc list we shrink. The matrix stage hashes
    the config key into the id; rows do not carry it, so it is recovered from the old row's id."""
    from infx.matrix.pointid import point_id

    def repoint(old: Row, new: Row) -> str:
        for key in keys:
            if point_id(old, key) == old.get("point-id"):
                return point_id(new, key)
        return point_id(new)

    return repoint


def build_matrix(opts: GateOptions, head: Changelog, change: ChangeSet) -> ChangelogMatrix:
    """Steps 3-4 for the new entries of ``change``."""
    metadata = ChangelogMetadata(base_ref=opts.base_ref, head_ref=opts.head_ref,
                                 entries=[a.raw for a in change.additions])
    builder = BucketBuilder()
    if not change.additions:
        return builder.build(metadata)
    file = head.file
    diags: list[Diagnostic] = []
    appendonly = [a for a in change.additions if a.entry.append_only]
    if appendonly and len(appendonly) != len(change.additions):
        regular = next(a for a in change.additions if not a.entry.append_only)
        diags.append(Diagnostic(f"{regular.label}: append-only and regular entries cannot be mixed in one change "
                                f"({appendonly[0].label} is append-only)", file, regular.line, 1))
    if appendonly and (opts.all_evals or opts.evals_only):
        diags.append(Diagnostic(f"{appendonly[0].label}: append-only entries cannot be run with "
                                "--all-evals/--evals-only", file, appendonly[0].line, 1))
    if diags:
        raise InfxError(diags)
    repo = git.repo_root(opts.repo)
    head_cat = load_snapshot(repo, opts.head_ref, opts.config_files, opts.runner_config)
    where = f"at {opts.head_ref} ({', '.join(head_cat.config_files)})"
    resolved: dict[int, list[str]] = {}
    for a in change.additions:
        res = resolve_entry(a, head_cat.keys)
        diags.extend(unmatched_diagnostic(file, a, u, where) for u in res.unmatched)
        resolved[a.index] = res.keys
    if diags:
        raise InfxError(diags)
    base_cat = load_snapshot(repo, opts.base_ref, opts.config_files, opts.runner_config) if appendonly else None
    ordered = sorted(change.additions, key=lambda a: not a.entry.all_evals)  # all-evals entries first (stable)
    for a in ordered:
        try:
            _entry_rows(opts, a, resolved[a.index], head_cat, base_cat, builder, file, _repointer(resolved[a.index]))
        except InfxError as exc:
            for d in exc.diagnostics:
                if d.file == file:  # already about the changelog entry
                    diags.append(d)
                    continue
                d = head_cat.rename(base_cat.rename(d) if base_cat else d)
                diags.append(Diagnostic(f"{a.label}: matrix generation failed: {d}", file, a.line, 1))
    if diags:
        raise InfxError(diags)
    built = builder.build(metadata)
    if opts.changed_launches:
        from infx.changelog.launches import launch_hashes

        launches = launch_hashes(repo, opts.head_ref, built.all_rows())
        meta = built.changelog_metadata.model_copy(update={"launches": launches})
        built = built.model_copy(update={"changelog_metadata": meta})
    return built


def _entry_rows(opts: GateOptions, a: ParsedEntry, keys: list[str], head_cat: CatalogSnapshot,
                base_cat: CatalogSnapshot | None, builder: BucketBuilder, file: str, repoint: Any) -> None:
    if opts.changed_launches:
        from infx.changelog.launches import changed_launch_rows

        repo = git.repo_root(opts.repo)

        def scripted(rows: list[Row]) -> list[Row]:
            return changed_launch_rows(repo, opts.base_ref, opts.head_ref, rows)
    else:
        def scripted(rows: list[Row]) -> list[Row]:
            return rows
    e = a.entry
    scen = list(e.scenario_type) if e.scenario_type else None
    expand_all = opts.all_evals or e.all_evals
    suppress_throughput = opts.evals_only or e.evals_only or e.all_evals
    if e.append_only:
        assert base_cat is not None
        base_keys = [k for k in keys if k in base_cat.catalog.entries]
        base_rows = _generate(base_cat, base_keys, scen, "none") if base_keys else []
        head_rows = _generate(head_cat, keys, scen, "none")
        delta, diags = append_only_delta(a, base_rows, head_rows, file, repoint)
        diags += scope_diagnostics(a, keys, base_cat.raw, head_cat.raw, file)
        if diags:
            raise InfxError(diags)
        rows = trim_conc(delta, repoint) if opts.trim_conc else delta
        for r in scripted(rows):
            builder.add_throughput(with_fingerprint(r))
        return
    if not suppress_throughput:
        rows = _generate(head_cat, keys, scen, "none")
        if opts.trim_conc:
            rows = trim_conc(rows, repoint)
        for r in scripted(rows):
            builder.add_throughput(with_fingerprint(r))
    evals = _generate(head_cat, keys, scen, "all" if expand_all else "evals-only")
    if e.eval_min_prefill_ep is not None:
        evals = [r for r in evals if "prefill" not in r or int(r["prefill"].get("ep", 1)) >= e.eval_min_prefill_ep]
    for r in scripted(evals):
        builder.add_eval(r)


def run_gate(opts: GateOptions) -> GateReport:
    """History gate + pattern resolution + matrix generation."""
    t0 = time.perf_counter()
    base, head, change = check_change(opts)
    matrix = build_matrix(opts, head, change)
    warnings = [str(d) for d in layout_warnings(base, head, change)]
    return GateReport(changelog_file=opts.changelog_file, change=change, matrix=matrix,
                      seconds=time.perf_counter() - t0, warnings=warnings)


def changelog_points(repo: str | Path, base_ref: str, head_ref: str, *, changelog_file: str = DEFAULT_CHANGELOG,
                     config_files: list[str] | None = None, runner_config: str = DEFAULT_RUNNER_CONFIG,
                     all_evals: bool = False, evals_only: bool = False, trim_conc: bool = False,
                     pr_number: int | None = None, changed_launches: bool = False) -> list[Point]:
    """The points a changelog change selects (throughput rows first, then eval rows), for ``infx run --changelog``."""
    opts = GateOptions(repo=Path(repo), base_ref=base_ref, head_ref=head_ref, changelog_file=changelog_file,
                       config_files=config_files, runner_config=runner_config, all_evals=all_evals,
                       evals_only=evals_only, trim_conc=trim_conc, changed_launches=changed_launches,
                       pr=PullRequestContext.from_env(pr_number))
    return run_gate(opts).matrix.points()
