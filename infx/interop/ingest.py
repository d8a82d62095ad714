"""``infx ingest --format inferencex PATH...``: published InferenceX results as an external run.

Inputs are aggregated result files (one JSON object), the combined list file its collection step
writes (a JSON list of them), or directories (every ``agg_*.json`` below them). Every file is read
and validated first; a file that is not an aggregated result, or has a bad entry, is reported with
its reason (``FILE:LINE:COL``) and nothing at all is written unless ``skip_bad`` lets the good files
through (a file is never half-imported).

The run lands in ``RESULTS/<name>/`` (``import.json`` plus the published files, byte for byte:
the files stay the source of truth) and in the store as a run whose ``origin`` is ``imported``,
with its own run id, so it is never mixed with measured runs. Its points get the store's usual
identity columns (so frontiers and comparisons work unchanged) and the agg JSON verbatim.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from infx import __version__, atomic
from infx.diagnostics import Diagnostic, InfxError
from infx.interop.formats import AggResult
from infx.matrix.point import Point
from infx.results.layout import MANIFEST, RunManifest, _json_diags, check_name
from infx.results.store import Store, hardware_of, role_gpus_of, topology_label
from infx.results.store.quarantine import entries as quarantine_entries
from infx.results.store.rows import ImportedAggRow, ImportedRows, PointRow, ResultRow
from infx.results.store.url import resolve as resolve_store

IMPORT_FILE = "import.json"
FILES_DIR = "inferencex"


class ImportSource(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    path: str  # as given on the command line
    file: str  # the copy under RESULTS/<name>/inferencex/
    sha256: str
    points: int


class ImportManifest(BaseModel):
    """``RESULTS/<name>/import.json``: where an imported run came from."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    format: str = "inferencex"
    run_id: str
    imported_at: float
    infx_version: str
    sources: list[ImportSource] = Field(default_factory=list)


@dataclass(frozen=True)
class ImportedPoint:
    point_id: str
    name: str  # file name an export gives it (agg_*.json)
    source: str
    agg: Any  # AggResult
    data: dict[str, Any]  # the published dict, untouched


@dataclass
class ParsedFile:
    path: Path
    text: bytes
    points: list[ImportedPoint]


@dataclass
class ImportReport:
    run_id: str = ""
    files: int = 0
    points: int = 0
    duplicates: int = 0
    problems: list[Diagnostic] = field(default_factory=list)

    def summary(self) -> str:
        return (f"imported run {self.run_id}: {self.points} point(s) from {self.files} file(s)"
                + (f", {self.duplicates} duplicate(s) dropped" if self.duplicates else "")
                + (f", {len(self.problems)} file(s) rejected" if self.problems else ""))


_ENTRY = TypeAdapter(AggResult)
_ENTRIES = TypeAdapter(list[AggResult])


def imported_point_id(data: dict[str, Any]) -> str:
    """12 hex of a sha256 over the canonical published dict: identical entries are one point."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]


def expand(paths: list[Path]) -> tuple[list[Path], list[Diagnostic]]:
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for p in paths:
        if p.is_dir():
            found = sorted(q for q in p.rglob("agg_*.json") if q.is_file())
            if not found:
                problems.append(Diagnostic("no agg_*.json files in this directory", str(p)))
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            problems.append(Diagnostic("no such file or directory", str(p)))
    unique: dict[Path, Path] = {}  # each file once, however many paths named it
    for f in files:
        unique.setdefault(f.resolve(), f)
    return list(unique.values()), problems


def _kind_hint(obj: Any) -> str:
    if isinstance(obj, dict):
        if "total_token_throughput" in obj and "model_id" in obj:
            return "a raw bench-client result (process it into agg_*.json first)"
        if "power_valid" in obj and "reasons" in obj:
            return "a power validation sidecar"
        return "no 'tput_per_gpu' / 'hw' keys"
    return f"top level is a JSON {type(obj).__name__}, expected an object or a list of objects"


def parse_file(path: Path) -> ParsedFile:
    """One published file -> its points; raises InfxError naming the file (and line:col) when bad."""
    from infx import jsonio

    raw = jsonio.read_bytes(path, what="agg file")
    text = jsonio.decode(raw, str(path))
    obj = jsonio.loads(text, str(path))
    is_list = isinstance(obj, list)
    entries = obj if is_list else [obj]
    if not entries:
        raise InfxError(Diagnostic("empty list: no results", str(path)))
    if not all(isinstance(e, dict) and "tput_per_gpu" in e and "hw" in e for e in entries):
        bad = next(e for e in entries if not (isinstance(e, dict) and "tput_per_gpu" in e and "hw" in e))
        where = f" (entry {entries.index(bad)})" if is_list else ""
        raise InfxError(Diagnostic(f"not an InferenceX aggregated result{where}: {_kind_hint(bad)}", str(path)))
    try:
        models = _ENTRIES.validate_python(obj) if is_list else [_ENTRY.validate_python(obj)]
    except ValidationError as exc:
        raise InfxError(_json_diags(text, str(path), exc)) from None
    stem = path.name[:-5] if path.name.endswith(".json") else path.name
    base = stem if stem.startswith("agg_") else f"agg_{stem}"
    points = [ImportedPoint(imported_point_id(e), f"{base}_{i}.json" if is_list else f"{base}.json",
                            str(path), m, e) for i, (m, e) in enumerate(zip(models, entries, strict=True))]
    return ParsedFile(path, raw, points)


def _flag(value: str | bool | None) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "1", "yes"))


def point_of(p: ImportedPoint) -> Point:
    """The imported entry as a matrix point (identity only: it was not run here)."""
    a = p.agg
    row: dict[str, Any] = {
        "image": a.image, "model": a.model, "model-prefix": a.infmax_model_prefix, "precision": a.precision,
        "framework": a.framework, "runner": a.hw, "spec-decoding": a.spec_decoding,
        "exp-name": p.name[len("agg_"):-len(".json")], "point-id": p.point_id, "isl": a.isl, "osl": a.osl,
        "conc": a.conc, "disagg": a.disagg,
    }
    if a.recipe_fingerprint:
        row["recipe-fingerprint"] = a.recipe_fingerprint
    if a.router is not None:
        row["router"] = {"name": a.router.name, "version": a.router.version}
    if a.kv_p2p_transfer:
        row["kv-p2p-transfer"] = a.kv_p2p_transfer
    if a.is_multinode:
        for role in ("prefill", "decode"):
            row[role] = {"num-worker": getattr(a, f"{role}_num_workers"), "tp": getattr(a, f"{role}_tp"),
                         "ep": getattr(a, f"{role}_ep"), "dp-attn": _flag(getattr(a, f"{role}_dp_attention")),
                         "pp": getattr(a, f"{role}_pp") or 1, "dcp-size": getattr(a, f"{role}_dcp_size") or 1,
                         "pcp-size": getattr(a, f"{role}_pcp_size") or 1}
            if getattr(a, f"{role}_hw"):
                row[role]["hardware"] = getattr(a, f"{role}_hw")
    else:
        row |= {"tp": a.tp, "pp": a.pp or 1, "dcp-size": a.dcp_size or 1, "pcp-size": a.pcp_size or 1,
                "ep": a.ep, "dp-attn": _flag(a.dp_attention)}
    return Point.from_row(row)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def _rows(run_id: str, p: ImportedPoint) -> ImportedRows:
    """The store rows of one imported point: its identity (as a measured point's), the published figures as the
    store keeps measured ones (per server, latencies in ms) and the agg JSON verbatim."""
    a, point = p.agg, point_of(p)
    n_all, n_out, n_in = a.gpus()
    lat = a.model_dump()  # attribute names: median_ttft, p999_ttft...

    def ms(stat: str, metric: str) -> float | None:
        return _ms(lat.get(f"{stat}_{metric}"))

    pg, dg, disagg = role_gpus_of(point)
    pt = PointRow(run_id=run_id, point_id=p.point_id, digest=p.point_id, model=a.model,
                  model_prefix=a.infmax_model_prefix, hardware=hardware_of(a.hw), runner=a.hw, framework=a.framework,
                  precision=a.precision, topology=topology_label(point), tp=point.tp, pp=point.pp, ep=point.ep,
                  dp_attn=int(point.dp_attn), dcp=point.dcp_size, pcp=point.pcp_size, multinode=int(a.is_multinode),
                  gpus_per_server=n_all, conc=a.conc, scenario="fixed-seq-len", isl=a.isl, osl=a.osl,
                  spec_decoding=a.spec_decoding, kv_offloading=None, image=a.image,
                  launch_fingerprint=a.recipe_fingerprint or None, state="done",
                  point_json=json.dumps({"point": point.to_row(), "launch_fingerprint": None}),
                  prefill_gpus=pg, decode_gpus=dg, disagg=disagg)
    res = ResultRow(run_id=run_id, point_id=p.point_id, complete=1, total_tok_per_s=a.tput_per_gpu * n_all,
                    output_tok_per_s=a.output_tput_per_gpu * n_out, input_tok_per_s=a.input_tput_per_gpu * n_in,
                    interactivity_median=lat.get("median_intvty"), interactivity_p90=lat.get("p90_intvty"),
                    versions_json=json.dumps({"source": "inferencex"}),
                    ttft_median=ms("median", "ttft"), ttft_p90=ms("p90", "ttft"), ttft_p99=ms("p99", "ttft"),
                    tpot_median=ms("median", "tpot"), tpot_p90=ms("p90", "tpot"), tpot_p99=ms("p99", "tpot"),
                    itl_median=ms("median", "itl"), itl_p90=ms("p90", "itl"), itl_p99=ms("p99", "itl"),
                    e2el_median=ms("median", "e2el"), e2el_p90=ms("p90", "e2el"), e2el_p99=ms("p99", "e2el"))
    agg = ImportedAggRow(run_id=run_id, point_id=p.point_id, name=p.name, source=p.source, agg_json=json.dumps(p.data))
    return ImportedRows(pt, res, agg)


def write_store(store: Store, manifest: RunManifest, points: list[ImportedPoint]) -> None:
    """Replace the imported run's rows in one transaction (all or nothing)."""
    store.replace_imported_run(manifest, [_rows(manifest.run_id, p) for p in points])


def _check_rows(store: Store, run_id: str, points: list[ImportedPoint]) -> None:
    """Every point's store rows can be built and held by the store (64-bit integers...), or InfxError naming its
    file."""
    built = []
    for p in points:
        try:
            built.append((p, _rows(run_id, p)))
        except (ValueError, TypeError, OverflowError, AttributeError) as exc:
            raise InfxError(Diagnostic(f"cannot import: {exc}", p.source)) from None
    by_rows = {id(rows): p for p, rows in built}
    bad = store.check_imported([rows for _, rows in built])
    if bad:
        rows, reason = bad[0]
        raise InfxError(Diagnostic(f"cannot import: {reason}", by_rows[id(rows)].source))


def _write_files(run_dir: Path, manifest: ImportManifest, parsed: list[ParsedFile], copies: list[str]) -> None:
    """Write the run directory next to its final place, then swap it in (never half-written)."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.import-", dir=run_dir.parent))
    try:
        for pf, name in zip(parsed, copies, strict=True):
            atomic.write_bytes(stage / FILES_DIR / name, pf.text)
        atomic.write_text(stage / IMPORT_FILE, manifest.model_dump_json(indent=2) + "\n")
        old = None
        if run_dir.exists():
            old = run_dir.with_name(f".{run_dir.name}.old-{os.getpid()}")
            os.replace(run_dir, old)
        os.replace(stage, run_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def ingest_inferencex(paths: list[Path], results_root: Path, name: str, *, skip_bad: bool = False,
                      store_url: str | None = None) -> ImportReport:
    """Import published files as the run ``name`` of ``results_root`` (see the module docstring)."""
    check_name(name, "run name")
    report = ImportReport(run_id=name)
    files, problems = expand(paths)
    parsed: list[ParsedFile] = []
    for f in files:
        try:
            parsed.append(parse_file(f))
        except InfxError as exc:
            problems.extend(exc.diagnostics)
    report.problems = problems
    if problems and not skip_bad:
        raise InfxError(problems + [Diagnostic(f"nothing imported: {len(problems)} problem(s) "
                                               "(--skip-bad imports the good files anyway)")])
    if not parsed:
        raise InfxError(problems + [Diagnostic("nothing to import: no aggregated result files")])
    run_dir = results_root / name
    if (run_dir / MANIFEST).is_file():
        raise InfxError(Diagnostic(f"{run_dir} is a measured run: choose another --name for the imported one"))
    if run_dir.exists() and not (run_dir / IMPORT_FILE).is_file():
        raise InfxError(Diagnostic(f"{run_dir} exists and is not an imported run (no {IMPORT_FILE}): "
                                   "choose another --name"))
    store = Store(resolve_store(store_url, results_root))
    try:
        origin = store.origin(name)
        if origin == "measured":
            raise InfxError(Diagnostic(f"run {name!r} in {store.name} is a measured run: choose another --name"))
        points: dict[str, ImportedPoint] = {}
        copies: list[str] = []
        sources: list[ImportSource] = []
        for pf in parsed:
            copy = pf.path.name if pf.path.name.startswith("agg_") else f"agg_{pf.path.name}"
            while copy in copies:
                copy = f"agg_{len(copies)}_{copy[len('agg_'):]}"
            copies.append(copy)
            sources.append(ImportSource(path=str(pf.path), file=f"{FILES_DIR}/{copy}",
                                        sha256=hashlib.sha256(pf.text).hexdigest(), points=len(pf.points)))
            for p in pf.points:
                if p.point_id in points:
                    report.duplicates += 1
                points[p.point_id] = p
        now = time.time()
        imanifest = ImportManifest(run_id=name, imported_at=now, infx_version=__version__, sources=sources)
        manifest = RunManifest(run_id=name, infx_version=__version__, started_at=now, official=False,
                               description=f"imported from InferenceX ({len(points)} point(s) from "
                                           f"{len(parsed)} file(s)); not measured by infx")
        _check_rows(store, name, list(points.values()))  # before anything is written: never a half-imported run
        _write_files(run_dir, imanifest, parsed, copies)
        write_store(store, manifest, list(points.values()))
        # --skip-bad: the refused files are kept in the quarantine, never dropped silently
        store.quarantine([e for d in problems for e in quarantine_entries("import-file", [d], source=d.file or name,
                                                                            run_id=name)])
    finally:
        store.close()
    report.files, report.points = len(parsed), len(points)
    return report


def imported_aggs(store: Store, run_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(point id, export file name, published dict) of an imported run, in import order."""
    return [(pid, name, json.loads(text)) for pid, name, text in store.imported_aggs(run_id)]


def restore_imports(store: Store, results_root: Path) -> list[str]:
    """Re-create the store rows of imported runs from their files (``RESULTS/<name>/import.json``)
    when the database lacks them (e.g. rebuilt from the results directory). Returns the runs restored;
    a run whose files no longer validate is reported and left out."""
    restored: list[str] = []
    if not results_root.is_dir():
        return restored
    for d in sorted(results_root.iterdir()):
        path = d / IMPORT_FILE
        if not path.is_file() or (d / MANIFEST).is_file():
            continue
        from infx.diagnostics import warn
        from infx.results.layout import read_model

        points: dict[str, ImportedPoint] = {}
        try:
            im = read_model(path, ImportManifest)
            if im.run_id != d.name or store.origin(im.run_id) is not None:
                continue
            for src in im.sources:
                for p in parse_file(d / src.file).points:
                    points[p.point_id] = p
        except InfxError as exc:
            for diag in exc.diagnostics:
                warn(Diagnostic(f"imported run not restored: {diag.message}", diag.file, diag.line, diag.col,
                                diag.path, "warning"))
            continue
        manifest = RunManifest(run_id=im.run_id, infx_version=im.infx_version, started_at=im.imported_at,
                               official=False, description=f"imported from InferenceX ({len(points)} point(s) from "
                                                           f"{len(im.sources)} file(s)); not measured by infx")
        write_store(store, manifest, list(points.values()))
        restored.append(im.run_id)
    return restored
