"""What the stages above the store add to ``infx ingest`` (they import this module, never the reverse;
tests/test_import_direction.py): the formats it reads besides infx's own results directory, and what runs
after a whole results directory was ingested. ``infx.interop`` registers ``--format inferencex`` and restores
imported runs when its commands are attached. Imports nothing heavy: it is filled at start-up."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infx.diagnostics import Diagnostic
    from infx.results.store import Store

NATIVE_FORMAT = "infx"  # a results directory, as the sweep writes it

#: ``--format NAME`` -> a reader of that format: ``(paths, results root, run name or None, skip bad files,
#: store URL or None) -> (problems, summary line)``.
IngestFormat = Callable[[list[Path], Path, str | None, bool, str | None], tuple[list["Diagnostic"], str]]
INGEST_FORMATS: dict[str, IngestFormat] = {}
#: Run after a whole results directory was ingested: ``(store, results root)``.
AFTER_INGEST: list[Callable[[Store, Path], None]] = []
