"""What the show commands read before they show anything: the results store, brought up to date with the
results directory (``infx compare``, ``infx report``, ``infx cost export``), and the cost table at a price tier."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from infx.diagnostics import Diagnostic, warn

if TYPE_CHECKING:
    from infx.analysis.costmodel import CostModel
    from infx.results.store import IngestReport, Store


@dataclass
class OpenedResults:
    """A results directory's store, open, after ingesting the directory: close it (``with``) when done."""

    store: Store
    root: Path  # the results directory (a run directory given: the one holding it)
    ingested: IngestReport

    def __enter__(self) -> OpenedResults:
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.close()


def open_results(results: str | Path, store: str | None = None) -> OpenedResults:
    """Ingest ``results`` (a results directory or one run directory in it; idempotent, cheap when nothing
    changed) into its store (``store``: a URL or SQLite file, else the default one) and return it open.
    A directory holding neither a run nor a store is refused before any database is created; imported
    InferenceX runs are restored when the database was rebuilt; bad points are warnings, left out."""
    from infx.interop.ingest import restore_imports
    from infx.results.store import Store, locate_results, require_results
    from infx.results.store.url import resolve

    root, runs = locate_results(results)
    where = resolve(store, root)
    require_results(root, runs, where)
    st = Store(where)
    try:
        report = st.ingest_dir(root, runs)
        if runs is None:
            restore_imports(st, root)
    except BaseException:
        st.close()
        raise
    for d in report.problems:
        warn(Diagnostic(d.message, d.file, d.line, d.col, d.path, "warning"))
    return OpenedResults(st, root, report)


def cost_model_for(tier: str | None) -> CostModel:
    """The cost table in use (validated: a bad file is a FILE:LINE error) with ``tier`` checked (an unknown
    tier names the tiers there are)."""
    from infx.analysis.costmodel import load_cost_model

    model = load_cost_model()
    model.tier(tier)
    return model
