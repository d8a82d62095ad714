"""``infx store copy SRC DST``: every run of one store into another (a local SQLite store into the team store,
or back), idempotently: a point already in DST with the same digest is not touched, a changed one is replaced
whole, an imported run is replaced whole when its published files changed. Each batch lands whole or not at all,
so an interrupted copy is finished by running it again. Quarantined rows are copied too."""

from __future__ import annotations

from dataclasses import dataclass, field

from infx.diagnostics import Diagnostic, InfxError
from infx.results.store.api import BATCH, Store
from infx.results.store.url import StoreUrl, parse
from infx.results.store.writes import RowBatch


@dataclass
class CopyReport:
    runs: int = 0
    written: int = 0
    unchanged: int = 0
    replaced_runs: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    quarantined: int = 0

    def summary(self) -> str:
        extra = f", {len(self.rejected)} refused" if self.rejected else ""
        return (f"{self.runs} run(s): {self.written} point(s) copied, {self.unchanged} unchanged{extra}, "
                f"{self.quarantined} quarantined row(s)")


def copy_between(src: str, dst: str, run_ids: list[str] | None = None) -> tuple[StoreUrl, StoreUrl, CopyReport]:
    """``infx store copy SRC DST [--run R]``: the two stores (URLs or SQLite files) checked, then copied. Refused
    before anything is written: the same store twice, a SQLite source that does not exist, a run SRC lacks."""
    source, dest = parse(src), parse(dst)
    if source.sqlalchemy_url == dest.sqlalchemy_url:
        raise InfxError(Diagnostic(f"SRC and DST are the same store ({source.display})"))
    if source.path is not None and not source.path.is_file():
        raise InfxError(Diagnostic(f"no results database at {source.path}", str(source.path)))
    with Store(source, readonly=source.kind == "sqlite") as a, Store(dest) as b:
        known = set(a.run_ids())
        missing = [r for r in run_ids or [] if r not in known]
        if missing:
            raise InfxError(Diagnostic(f"run(s) not in {a.name}: {', '.join(missing)}"))
        return source, dest, copy_store(a, b, run_ids or None)


def copy_store(src: Store, dst: Store, run_ids: list[str] | None = None) -> CopyReport:
    report = CopyReport()
    for run_id in run_ids if run_ids is not None else src.run_ids():
        run, batch, aggs = src.run_rows(run_id)
        report.runs += 1
        if run["origin"] == "imported":  # a published run is one unit: its rows are replaced together
            if dst.run_digest(run_id) != run["digest"]:
                dst.replace_run_rows(run, batch, aggs)
                report.replaced_runs.append(run_id)
                report.written += len(batch.digests)
            else:
                report.unchanged += len(batch.digests)
            continue
        dst.upsert_run_row(run)
        keys = list(batch.digests)
        for i in range(0, len(keys), BATCH):
            part = set(keys[i:i + BATCH])
            chunk = RowBatch()
            chunk.rows = {name: [r for r in rows if (r[0], r[1]) in part] for name, rows in batch.rows.items()}
            chunk.digests = {k: batch.digests[k] for k in keys[i:i + BATCH]}
            out = dst.write_rows(chunk)
            report.written += out.written
            report.unchanged += out.unchanged
            report.rejected.extend(f"{r}/{p}: {reason}" for (r, p), reason in out.rejected)
    entries = src.quarantined()
    dst.quarantine(entries)
    report.quarantined = len(entries)
    return report
