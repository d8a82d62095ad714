"""The catalog as it is at one git revision.

The master YAML files and ``runners.yaml`` are read with ``git show`` and written into a
temporary directory under their repository-relative names, then loaded with the catalog
stage's own loaders (so the rules are exactly those of ``infx validate``). Diagnostics name
``REV:path`` instead of the temporary copy.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infx.changelog import git
from infx.diagnostics import Diagnostic, InfxError
from infx.yamlsource import parse_yaml

DEFAULT_CONFIG_DIR = "configs"
DEFAULT_CONFIG_GLOB = "*-master.yaml"
DEFAULT_RUNNER_CONFIG = "configs/runners.yaml"


@dataclass
class CatalogSnapshot:
    """Loaded catalog + runners at ``rev``, and the raw master mappings (for scope checks)."""

    rev: str
    config_files: list[str]
    runner_config: str
    catalog: Any  # infx.catalog Catalog
    runners: Any  # infx.catalog RunnerConfig
    raw: dict[str, Any] = field(default_factory=dict)
    #: temporary copy path -> ``REV:path`` (diagnostics from later stages may name the copy)
    names: dict[str, str] = field(default_factory=dict)

    def rename(self, d: Diagnostic) -> Diagnostic:
        return _rename(d, self.names)

    @property
    def keys(self) -> list[str]:
        return list(self.catalog.entries)


def config_files_at(repo: Path, rev: str, config_files: list[str] | None) -> list[str]:
    """The master files to read at ``rev``: the given list, else ``configs/*-master.yaml`` there."""
    if config_files:
        return list(config_files)
    found = git.list_files(repo, rev, DEFAULT_CONFIG_DIR, DEFAULT_CONFIG_GLOB)
    if not found:
        raise InfxError(f"no {DEFAULT_CONFIG_DIR}/{DEFAULT_CONFIG_GLOB} files at revision '{rev}' (use --config-files)")
    return found


def load_snapshot(repo: Path, rev: str, config_files: list[str] | None = None,
                  runner_config: str = DEFAULT_RUNNER_CONFIG) -> CatalogSnapshot:
    from infx.catalog import load_catalog, load_runners

    files = config_files_at(repo, rev, config_files)
    with tempfile.TemporaryDirectory(prefix="infx-catalog-") as tmp:
        root = Path(tmp)
        local: dict[str, str] = {}
        raw: dict[str, Any] = {}
        missing = []
        for rel in [*files, runner_config]:
            data = git.show_file(repo, rev, rel)
            if data is None:
                missing.append(rel)
                continue
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            local[str(dest)] = f"{rev}:{rel}"
            if rel != runner_config:
                try:
                    src = parse_yaml(data, f"{rev}:{rel}")
                except InfxError:
                    src = None  # load_catalog reports it
                if src is not None and isinstance(src.data, dict):
                    raw.update(src.data)
        if missing:
            raise InfxError([Diagnostic(f"file '{m}' does not exist at revision '{rev}'", f"{rev}:{m}")
                             for m in missing])
        try:
            catalog = load_catalog([root / f for f in files])
            runners = load_runners(root / runner_config)
        except InfxError as exc:
            raise InfxError([_rename(d, local) for d in exc.diagnostics]) from None
    return CatalogSnapshot(rev=rev, config_files=files, runner_config=runner_config,
                           catalog=catalog, runners=runners, raw=raw, names=local)


def _rename(d: Diagnostic, local: dict[str, str]) -> Diagnostic:
    file = d.file
    msg = d.message
    for tmp, nice in local.items():
        if file == tmp:
            file = nice
        msg = msg.replace(tmp, nice)
    return Diagnostic(msg, file, d.line, d.col, d.path, d.severity)
