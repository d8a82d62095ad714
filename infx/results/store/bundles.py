"""A point as ingest takes it: read from its directory (or built in memory by ``infx run``), validated in full,
with the digest of the files it came from. Nothing is written here; :mod:`infx.results.store.writes` turns
bundles into rows.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Any

from infx.diagnostics import Diagnostic, InfxError
from infx.matrix.point import Point
from infx.metrics import cipack
from infx.metrics.result import BenchResult
from infx.results.evalrows import EvalBundle, read_eval_bundle
from infx.results.layout import (
    POINT_FILE,
    RESULT_FILE,
    STATUS_FILE,
    PointFile,
    PointStatus,
    ResultsDir,
)
from infx.results.receipt import RECEIPT_FILE, has_receipt, verify_point_dir
from infx.results.store.quarantine import Refused
from infx.results.store.snapshots import recipe_fingerprint


@dataclass(frozen=True)
class PointBundle:
    """Everything one point directory holds that goes into the database, already validated
    (``point_json``: the PointFile text, stored verbatim; ``recipe``: its curve scope's recipe fingerprint)."""

    run_id: str
    point: Point
    status: PointStatus
    result: BenchResult | None
    launch_fingerprint: str | None
    digest: str
    point_json: str
    evaluation: EvalBundle | None = None  # the point's accuracy eval, when it ran
    recipe: str = ""


def bundle_digest(*parts: bytes | str | None) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = b"" if part is None else part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def make_bundle(run_id: str, point: Point, status: PointStatus, result: BenchResult | None,
                launch_fingerprint: str | None = None) -> PointBundle:
    """Build a bundle from objects in memory (what ``infx run`` has after a point)."""
    lf = launch_fingerprint or status.launch_fingerprint
    pf = PointFile.of(point, lf)
    point_json = pf.model_dump_json()
    status_json = status.model_dump_json()
    result_json = result.model_dump_json() if result is not None else None
    return PointBundle(run_id, point, status, result, lf, bundle_digest(point_json, status_json, result_json),
                       point_json, recipe=recipe_fingerprint(pf.point))


def in_flight(results: ResultsDir, run_id: str, point_id: str) -> bool:
    """The point is not final: no ``status.json`` yet (being measured), or ``interrupted`` (Ctrl-C or SIGTERM
    stopped it mid-point; its partial result is never a measurement). Ingest counts it pending."""
    path = results.point_dir(run_id, point_id) / STATUS_FILE
    if not path.is_file():
        return True
    try:
        return results.read_status(run_id, point_id).state == "interrupted"
    except InfxError:
        return False  # unreadable: read_bundle refuses it with the file and field


def read_bundle(results: ResultsDir, run_id: str, point_id: str) -> PointBundle:
    """Read and validate one point directory; raises :class:`Refused` (an InfxError naming its quarantine rule;
    nothing written) when bad."""
    d = results.point_dir(run_id, point_id)
    if has_receipt(d):  # a bundle's receipt must verify; points without one (older results) still ingest
        check = verify_point_dir(d)
        if not check.ok:
            raise Refused("receipt", Diagnostic(f"point {point_id} refused: {check.reason()}", str(d / RECEIPT_FILE)))
    try:
        pf = results.read_point(run_id, point_id)
        status = results.read_status(run_id, point_id)
        evaluation = read_eval_bundle(d)
    except InfxError as exc:
        raise Refused("unreadable", exc.diagnostics) from None
    result: BenchResult | None = None
    result_text: str | None = None
    eval_only = pf.typed().eval_only and not (d / RESULT_FILE).is_file()
    if status.state == "done" and not eval_only:
        try:
            result = results.read_result(run_id, point_id)
        except InfxError as exc:
            missing = not (d / RESULT_FILE).exists()
            raise Refused("missing-result" if missing else "unreadable", exc.diagnostics) from None
        if not result.complete:
            raise Refused("partial-result", Diagnostic("partial result (complete: false): not ingested",
                                                       str(d / RESULT_FILE), path=("complete",)))
        result_text = (d / RESULT_FILE).read_text(encoding="utf-8")
    point_text = (d / POINT_FILE).read_text(encoding="utf-8")
    status_text = (d / STATUS_FILE).read_text(encoding="utf-8")
    lf = pf.launch_fingerprint or status.launch_fingerprint
    digest = bundle_digest(point_text, status_text, result_text, *(evaluation.texts if evaluation else ()))
    return PointBundle(run_id, pf.typed(), status, result, lf, digest, point_text, evaluation,
                       recipe=recipe_fingerprint(pf.point))


def pack_ci(r: BenchResult) -> bytes | None:
    """The intervals the analysis reads, packed (:mod:`infx.metrics.cipack`); None without ``stats``."""
    return r.packed_ci()


def unpack_ci(blob: bytes) -> tuple[str, float | None, list[tuple[float, float] | None]]:
    """(method, df, bounds relative to the mean per ``CI_KEYS``) of :func:`pack_ci`."""
    return cipack.unpack(blob)


# --------------------------------------------------------------------------- identity


@functools.lru_cache(maxsize=1024)
def hardware_of(runner: str) -> str:
    """``cluster:mi355x-amds`` -> ``mi355x``; ``h200-multinode`` -> ``h200``."""
    name = runner.split(":", 1)[-1]
    return name.split("-", 1)[0].split("_", 1)[0] or name


def role_gpus_of(point: Point) -> tuple[int | None, int | None, int]:
    """(prefill GPUs, decode GPUs, disaggregated) of a multinode point; (None, None, 0) single-node.
    A row of a disagg entry with an empty pool (``num-worker: 0``) is aggregated."""
    if point.prefill is None or point.decode is None:
        return None, None, 0
    p, d = point.prefill.gpus, point.decode.gpus
    return p, d, int(point.disagg and p > 0 and d > 0)


def topology_label(point: Point) -> str:
    """A short, stable name for a point's parallel layout: ``TP=4``, ``TP=8 EP=8 DP-attn``,
    ``1xP(TP=4)+2xD(TP=8)``. Only non-default dimensions appear."""
    if point.multinode and point.prefill is not None and point.decode is not None:
        def worker(tag: str, w: Any) -> str:
            inner = [f"TP={w.tp}"] + ([f"EP={w.ep}"] if w.ep > 1 else []) + (["DP-attn"] if w.dp_attn else [])
            if w.pp > 1:
                inner.append(f"PP={w.pp}")
            return f"{w.num_worker}x{tag}({' '.join(inner)})"
        return f"{worker('P', point.prefill)}+{worker('D', point.decode)}"
    parts = [f"TP={point.tp or 1}"]
    if point.pp > 1:
        parts.append(f"PP={point.pp}")
    if point.ep > 1:
        parts.append(f"EP={point.ep}")
    if point.dp_attn:
        parts.append("DP-attn")
    if point.pcp_size > 1:
        parts.append(f"PCP={point.pcp_size}")
    if point.dcp_size > 1:
        parts.append(f"DCP={point.dcp_size}")
    return " ".join(parts)


def point_conc(point: Point, result: BenchResult | None) -> int:
    """The concurrency of a measured point: the single ``conc`` of its row, else what the bench ran."""
    if isinstance(point.conc, int):
        return point.conc
    if result is not None and result.config.concurrency is not None:
        return result.config.concurrency
    return point.concs[0]


# --------------------------------------------------------------------------- ingest report


@dataclass
class IngestReport:
    ingested: int = 0
    unchanged: int = 0
    skipped: int = 0
    pending: int = 0  # point directories without status.json yet (in progress)
    runs: int = 0
    problems: list[Diagnostic] = field(default_factory=list)

    def merge(self, other: IngestReport) -> None:
        self.ingested += other.ingested
        self.unchanged += other.unchanged
        self.skipped += other.skipped
        self.pending += other.pending
        self.runs += other.runs
        self.problems.extend(other.problems)

    def summary(self) -> str:
        return (f"{self.runs} run(s): {self.ingested} point(s) ingested, {self.unchanged} unchanged, "
                f"{self.skipped} skipped, {self.pending} in progress")
