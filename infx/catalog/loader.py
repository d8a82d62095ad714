"""Load master catalogs: strict YAML, every entry validated, all diagnostics of a file at once.

Several files merge in order; a key defined in two files is an error listing every duplicate,
and ``*`` in a key is an error (it is reserved for changelog patterns). A validated file is
cached by content hash (see ``cache.py``), so the second load skips YAML parsing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from infx.catalog import cache
from infx.catalog.rules import entry_problems
from infx.catalog.schema import MasterEntry, MultiNodeMasterEntry, SingleNodeMasterEntry
from infx.diagnostics import Diagnostic, InfxError, Severity

if TYPE_CHECKING:
    from infx.catalog.runners import RunnerConfig

Pos = tuple[int, int]


@dataclass(frozen=True)
class EntrySource:
    """Where an entry came from, kept so later stages can point at it."""

    file: str
    key_pos: Pos
    runner_pos: Pos


@dataclass
class Catalog:
    """The merged, validated catalog. ``entries`` keeps file order (files concatenated)."""

    entries: dict[str, MasterEntry]
    sources: dict[str, EntrySource] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def keys(self) -> list[str]:
        return list(self.entries)

    def diag(self, key: str, message: str, severity: Severity = "error", at_runner: bool = False) -> Diagnostic:
        src = self.sources.get(key)
        if src is None:
            return Diagnostic(message, path=(key,), severity=severity)
        line, col = src.runner_pos if at_runner else src.key_pos
        path = (key, "runner") if at_runner else (key,)
        return Diagnostic(message, src.file, line, col, path, severity)


FileEntries = dict[str, tuple[MasterEntry, Pos, Pos]]


def validate_file_data(src: Any) -> FileEntries:
    """Validate every entry of one parsed file. Raises InfxError with every problem found."""
    if not isinstance(src.data, dict):
        kind = "empty" if src.data is None else type(src.data).__name__
        raise InfxError(Diagnostic(f"master config root must be a mapping of entries, got {kind}", src.file, 1, 1))
    diags: list[Diagnostic] = []
    out: FileEntries = {}
    for key, raw in src.data.items():
        if not isinstance(key, str):
            diags.append(src.diag((key,), f"master config keys must be strings, got {key!r}"))
            continue
        if "*" in key:
            line, col = src.key_positions.get((key,), (1, 1))
            diags.append(Diagnostic(f"Wildcard '*' is not allowed in master config keys ('{key}')",
                                    src.file, line, col, (key,)))
            continue
        if not isinstance(raw, dict):
            line, col = src.key_positions.get((key,), (1, 1))
            diags.append(Diagnostic(f"entry '{key}' must be a mapping, got {_kind(raw)}", src.file, line, col, (key,)))
            continue
        model = MultiNodeMasterEntry if raw.get("multinode", False) is True else SingleNodeMasterEntry
        try:
            entry = model.model_validate(raw)
        except ValidationError as exc:
            diags.extend(src.diags_from_validation(exc, (key,)))
            continue
        problems = entry_problems(entry)
        if problems:
            diags.extend(src.diag((key,) + path, msg) for path, msg in problems)
            continue
        key_pos = src.key_positions.get((key,), src.positions.get((key,), (1, 1)))
        out[key] = (entry, key_pos, src.positions.get((key, "runner"), (1, 1)))
    if diags:
        raise InfxError(sorted(diags, key=lambda d: (d.line or 0, d.col or 0)))
    return out


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {value!r}"


def load_file(path: str | Path) -> FileEntries:
    """One file's validated entries, from the cache when its content is unchanged."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InfxError(Diagnostic(f"Input file '{path}' does not exist.", str(path))) from None
    except OSError as exc:
        raise InfxError(Diagnostic(f"cannot read '{path}': {exc.strerror}", str(path))) from None
    cached: FileEntries | None = cache.get(data)  # unpickled: what put() stored for these bytes
    if cached is not None:
        return cached
    from infx.yamlsource import parse_yaml

    entries = validate_file_data(parse_yaml(data, str(path)))
    cache.put(data, entries)
    return entries


def load_catalog(config_files: list[str | Path] | tuple[str | Path, ...] | str | Path) -> Catalog:
    """Load, validate and merge master config files (in order). Raises InfxError listing every problem."""
    if isinstance(config_files, (str, Path)):
        config_files = [config_files]
    diags: list[Diagnostic] = []
    per_file: list[tuple[str, FileEntries]] = []
    for f in config_files:
        try:
            per_file.append((str(f), load_file(f)))
        except InfxError as exc:
            diags.extend(exc.diagnostics)
    if diags:
        raise InfxError(diags)
    catalog = Catalog(entries={}, files=[f for f, _ in per_file])
    first_file: dict[str, str] = {}
    dups: dict[str, list[str]] = {}
    for f, entries in per_file:
        for key, (entry, kpos, rpos) in entries.items():
            if key in catalog.entries:
                dups.setdefault(key, [first_file[key]]).append(f)
                diags.append(Diagnostic(f"duplicate master config key '{key}' (first defined in {first_file[key]})",
                                        f, kpos[0], kpos[1], (key,)))
                continue
            first_file[key] = f
            catalog.entries[key] = entry
            catalog.sources[key] = EntrySource(f, kpos, rpos)
    if dups:
        listing = ", ".join(sorted(dups))
        diags.append(Diagnostic(f"{len(dups)} master config key(s) defined in more than one file: {listing}"))
        raise InfxError(diags)
    return catalog


def runner_warnings(catalog: Catalog, labels: dict[str, list[str]] | Any) -> list[Diagnostic]:
    """A master ``runner`` that is not a runners.yaml label still loads, with a warning."""
    known = labels.labels if hasattr(labels, "labels") else labels
    return [
        catalog.diag(key, f"runner '{e.runner}' is not a label in the runner config", "warning", at_runner=True)
        for key, e in catalog.entries.items()
        if e.runner not in known
    ]


def load_catalog_and_runners(config_files: Sequence[str | Path],
                             runner_config: str | Path) -> tuple[Catalog, RunnerConfig]:
    """Load catalog and runners, reporting the problems of both at once."""
    from infx.catalog.runners import load_runners

    diags: list[Diagnostic] = []
    catalog = runners = None
    try:
        catalog = load_catalog(list(config_files))
    except InfxError as exc:
        diags.extend(exc.diagnostics)
    try:
        runners = load_runners(runner_config)
    except InfxError as exc:
        diags.extend(exc.diagnostics)
    if catalog is not None and runners is not None:  # deployments that cannot fit their runner
        from infx.catalog.topology import capacity_problems

        diags.extend(capacity_problems(catalog, runners))
    if diags:
        raise InfxError(diags)
    assert catalog is not None and runners is not None
    return catalog, runners
