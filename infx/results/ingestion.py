"""``infx ingest``: what it is asked (:class:`IngestRequest`) and the ingest itself (:func:`ingest`); the other
formats it reads are the ones the stages above the store register in :mod:`infx.results.ingest_hooks`."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from infx.diagnostics import Diagnostic
from infx.results.ingest_hooks import AFTER_INGEST, INGEST_FORMATS, NATIVE_FORMAT


def _either(choices: list[str]) -> str:
    """``a, b or c``: the choices of an option, as its error message names them."""
    return choices[0] if len(choices) == 1 else ", ".join(choices[:-1]) + " or " + choices[-1]


class IngestRequest(BaseModel):
    """What ``infx ingest`` is asked. ``format`` is ``infx`` (one results directory, or one run directory in
    it) or a format registered in :data:`~infx.results.ingest_hooks.INGEST_FORMATS` (files to import;
    ``results``, ``name`` and ``skip_bad`` are that reader's)."""

    model_config = ConfigDict(extra="forbid")

    paths: list[Path] = []
    db: Path | None = None  # the same as ``store`` given a SQLite file
    store: str | None = None
    strict: bool = False
    format: str = NATIVE_FORMAT
    results: Path | None = None  # the results directory an import lands in
    name: str | None = None  # the imported run's id (None: the reader's default)
    skip_bad: bool = False

    @field_validator("format")
    @classmethod
    def _known(cls, v: str) -> str:
        if v != NATIVE_FORMAT and v not in INGEST_FORMATS:
            raise ValueError(f"--format must be {_either([NATIVE_FORMAT, *INGEST_FORMATS])}, not {v!r}")
        return v

    @model_validator(mode="after")
    def _shape(self) -> IngestRequest:
        if self.db is not None and self.store is not None:
            raise ValueError("give --store or --db, not both")
        if self.format == NATIVE_FORMAT and len(self.paths) > 1:
            raise ValueError(f"expected one results directory, got {len(self.paths)} paths")
        if self.format != NATIVE_FORMAT and not self.paths:
            raise ValueError(f"--format {self.format}: give the files or directories to import")
        return self

    @property
    def store_url(self) -> str | None:
        """The store asked for (``--db`` or ``--store``; None: the default one)."""
        return str(self.db) if self.db is not None else self.store


def ingest(req: IngestRequest) -> tuple[list[Diagnostic], str]:
    """Ingest what ``req`` names into the store: the problems (bad points skipped and quarantined, or files
    rejected) and the one-line summary."""
    from infx.results.layout import results_root

    if req.format != NATIVE_FORMAT:
        return INGEST_FORMATS[req.format](req.paths, results_root(req.results), req.name, req.skip_bad, req.store_url)
    from infx.results.store import Store, locate_results
    from infx.results.store.url import resolve

    root, runs = locate_results(results_root(req.paths[0] if req.paths else None))
    with Store(resolve(req.store_url, root)) as st:
        report = st.ingest_dir(root, runs)
        if runs is None:
            for hook in AFTER_INGEST:
                hook(st, root)
    return report.problems, report.summary()
