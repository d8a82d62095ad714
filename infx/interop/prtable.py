"""Measured points next to published InferenceX points: matching and the PR-comparison table.

Matching follows InferenceX's ``compare_results.py`` (§3): hardware (runner label without its
``-multinode``/``-trt``/``-disagg`` suffix; infx also reduces ``cluster:mi355x-amds`` to ``mi355x``),
model prefix (the published prefix starts with ours, SQL ``LIKE prefix%``), framework, precision,
speculative decoding, disagg, multi-node, prefill/decode TP, EP and DP-attention (a single-node
point's tp/ep/dp stand for both roles), ISL, OSL and concurrency. Several published matches: the
last one imported wins (newest). The table holds tput_per_gpu and the median/P90/P99/P99.9 of
TTFT (shown in ms), interactivity and E2EL (s), with absolute and % deltas; better/worse follows
each metric's direction (higher is better for throughput and interactivity, lower for TTFT/E2EL).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from infx.diagnostics import Diagnostic, InfxError
from infx.interop.export import agg, refusal
from infx.interop.formats import AggResult
from infx.results.layout import ResultsDir
from infx.results.store import hardware_of

PERCENTILES = ("median", "p90", "p99", "p99.9")
# (agg key, label, unit, scale for display, higher is better)
METRICS: list[tuple[str, str, str, float, bool]] = [("tput_per_gpu", "tput_per_gpu", "tok/s/GPU", 1.0, True)]
METRICS += [(f"{p}_ttft", f"{p}_ttft", "ms", 1000.0, False) for p in PERCENTILES]
METRICS += [(f"{p}_intvty", f"{p}_intvty", "tok/s/user", 1.0, True) for p in PERCENTILES]
METRICS += [(f"{p}_e2el", f"{p}_e2el", "s", 1.0, False) for p in PERCENTILES]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Row(_Model):
    metric: str
    unit: str
    measured: float | None
    published: float | None
    delta: float | None  # measured - published, in the shown unit
    delta_pct: float | None  # 100 * delta / published
    # better/worse only when the published value lies outside the measured point's 95 %
    # interval across trials; "same": the interval and the delta fit within +-5 % of the published
    # value; "inconclusive": no interval (one trial) or neither holds. The published value's own
    # spread is unknown (InferenceX measures once), so this is the measured side's noise only.
    verdict: Literal["better", "worse", "same", "inconclusive", "n/a"]
    ci_lo: float | None = None  # the measured value's 95 % interval (trials), in the shown unit
    ci_hi: float | None = None


class Pair(_Model):
    label: str
    measured_point: str
    published_point: str
    rows: list[Row]


class PRComparison(_Model):
    run_id: str
    published_run: str
    pairs: list[Pair]
    unmatched_measured: list[str]  # labels of measured points with no published match
    unmatched_published: list[str]
    not_exported: list[str]  # measured points without an InferenceX form, with the reason


def _hw(hw: str) -> str:
    for suffix in ("-multinode", "-trt", "-disagg"):
        if hw.endswith(suffix):
            hw = hw[: -len(suffix)]
    return hardware_of(hw)


def _dp(value: str | bool | None) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "1", "yes"))


def match_key(a: Any) -> tuple[Any, ...]:
    """Everything but the model: (hw, framework, precision, spec, disagg, multinode, roles, isl, osl, conc)."""
    if a.is_multinode:
        roles = (a.prefill_tp, a.prefill_ep, _dp(a.prefill_dp_attention), a.decode_tp, a.decode_ep,
                 _dp(a.decode_dp_attention))
    else:
        roles = (a.tp, a.ep, _dp(a.dp_attention)) * 2
    return (_hw(a.hw), a.framework, a.precision, a.spec_decoding, a.disagg, a.is_multinode, *roles, a.isl, a.osl,
            a.conc)


def label(a: Any) -> str:
    if a.is_multinode:
        topo = (f"P {a.prefill_num_workers}x(TP={a.prefill_tp} EP={a.prefill_ep}) + "
                f"D {a.decode_num_workers}x(TP={a.decode_tp} EP={a.decode_ep})")
    else:
        topo = f"TP={a.tp} EP={a.ep}" + (" DP-attn" if _dp(a.dp_attention) else "")
    spec = "" if a.spec_decoding in ("", "none") else f" spec={a.spec_decoding}"
    return (f"{a.infmax_model_prefix} {a.precision} {_hw(a.hw)} {a.framework} {a.isl}/{a.osl} {topo}{spec} "
            f"conc={a.conc}")


def measured_aggs(results_root: Path, run_id: str) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """(point id, agg dict) of every exportable measured point of a run, and the refusals."""
    results = ResultsDir(results_root)
    out: list[tuple[str, dict[str, Any]]] = []
    refused: list[str] = []
    for point_id in results.points(run_id):
        try:
            if results.read_status(run_id, point_id).state != "done":
                continue
            point = results.read_point(run_id, point_id).typed()
            result = results.read_result(run_id, point_id)
        except InfxError:
            continue  # ingest reports bad point files
        why = refusal(point, result)
        if why:
            refused.append(f"{point_id}: {why}")
            continue
        out.append((point_id, agg(point, result)))
    return out, refused


# agg key -> result.json ``stats`` figure whose relative interval it carries
_STATS_OF = {"tput_per_gpu": "total_tok_per_s", **{f"{p}_ttft": f"ttft_{q}" for p, q in
             (("median", "median"), ("p90", "p90"), ("p99", "p99"))},
             **{f"{p}_intvty": f"interactivity_{q}" for p, q in (("median", "median"), ("p90", "p90"))},
             **{f"{p}_e2el": f"e2el_{q}" for p, q in (("median", "median"), ("p90", "p90"), ("p99", "p99"))}}
MARGIN = 0.05


def _row(key: str, unit: str, scale: float, higher: bool, mine: Any, theirs: Any,
         rel: tuple[float, float] | None = None) -> Row:
    """``rel``: the measured interval as factors of the measured value (lo/mean, hi/mean), from trials."""
    m = None if mine is None else float(mine) * scale
    t = None if theirs is None else float(theirs) * scale
    if m is None or t is None:
        return Row(metric=key, unit=unit, measured=m, published=t, delta=None, delta_pct=None, verdict="n/a")
    delta = m - t
    pct = None if t == 0 else 100.0 * delta / t
    lo = hi = None
    verdict: Any = "inconclusive"
    if rel is not None:
        lo, hi = m * rel[0], m * rel[1]
        if t < lo or t > hi:
            verdict = "better" if (delta > 0) == higher else "worse"
        elif t and max(abs(lo - t), abs(hi - t)) <= MARGIN * abs(t):
            verdict = "same"
    return Row(metric=key, unit=unit, measured=m, published=t, delta=delta, delta_pct=pct, verdict=verdict,
               ci_lo=lo, ci_hi=hi)


def measured_intervals(results_root: Path, run_id: str) -> dict[str, dict[str, tuple[float, float]]]:
    """point id -> agg key -> (lo/mean, hi/mean) of the points measured with trials."""
    results = ResultsDir(results_root)
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for point_id in results.points(run_id):
        try:
            result = results.read_result(run_id, point_id)
        except (InfxError, OSError):
            continue
        if result is None:
            continue
        rel = {}
        for key, figure in _STATS_OF.items():
            e = result.stats.get(figure)
            if e is not None and e.method == "trials" and e.n >= 2 and e.mean:
                rel[key] = (e.lo / e.mean, e.hi / e.mean)
        if rel:
            out[point_id] = rel
    return out


def compare_published(measured: Sequence[tuple[str, dict[str, Any]]], published: Sequence[tuple[str, dict[str, Any]]],
                      *, run_id: str, published_run: str, not_exported: Sequence[str] = (),
                      intervals: dict[str, dict[str, tuple[float, float]]] | None = None) -> PRComparison:
    mine = [(pid, AggResult.model_validate(d), d) for pid, d in measured]
    theirs = [(pid, AggResult.model_validate(d), d) for pid, d in published]
    index: dict[tuple[Any, ...], list[tuple[str, Any, dict[str, Any]]]] = {}
    for t in theirs:
        index.setdefault(match_key(t[1]), []).append(t)
    pairs: list[Pair] = []
    unmatched: list[str] = []
    used: set[str] = set()
    for pid, a, d in sorted(mine, key=lambda m: label(m[1])):
        cands = [t for t in index.get(match_key(a), []) if t[1].infmax_model_prefix.startswith(a.infmax_model_prefix)]
        if not cands:
            unmatched.append(f"{label(a)} ({pid})")
            continue
        tpid, _, td = cands[-1]
        used.add(tpid)
        ci = (intervals or {}).get(pid, {})
        rows = [_row(key, unit, scale, higher, d.get(key), td.get(key), ci.get(key))
                for key, _, unit, scale, higher in METRICS]
        pairs.append(Pair(label=label(a), measured_point=pid, published_point=tpid, rows=rows))
    unpublished = [f"{label(a)} ({pid})" for pid, a, _ in theirs if pid not in used]
    return PRComparison(run_id=run_id, published_run=published_run, pairs=pairs, unmatched_measured=unmatched,
                        unmatched_published=sorted(unpublished), not_exported=list(not_exported))


def pr_comparison(store: Any, results_root: Path, run_id: str, published_run: str) -> PRComparison:
    """A measured run of ``results_root`` against an imported run of its store."""
    from infx.interop.ingest import imported_aggs

    if store.origin(published_run) != "imported":
        raise InfxError(Diagnostic(f"run {published_run!r} is not an imported run "
                                   "(infx ingest --format inferencex ... --name NAME)"))
    if store.origin(run_id) != "measured":
        raise InfxError(Diagnostic(f"run {run_id!r} is not a measured run"))
    measured, refused = measured_aggs(results_root, run_id)
    published = [(pid, d) for pid, _, d in imported_aggs(store, published_run)]
    return compare_published(measured, published, run_id=run_id, published_run=published_run, not_exported=refused,
                             intervals=measured_intervals(results_root, run_id))


def fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    return f"{v:,.1f}" if unit in ("tok/s/GPU", "ms", "tok/s/user") else f"{v:,.3f}"


def print_table(cmp: PRComparison) -> None:
    """The table as InferenceX's PR comment shows it, coloured by metric direction."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"\n[bold]InferenceX comparison: {cmp.run_id} (measured) vs {cmp.published_run} (published)[/bold]")
    for pair in cmp.pairs:
        table = Table(title=pair.label, show_edge=False, title_justify="left")
        for col in ("metric", "unit", "measured", "published", "delta", "delta %", "measured 95% CI", "verdict"):
            table.add_column(col, justify="left" if col in ("metric", "unit") else "right")
        for r in pair.rows:
            style = {"better": "green", "worse": "red"}.get(r.verdict, "")
            pct = "-" if r.delta_pct is None else f"{r.delta_pct:+.1f}%"
            delta = "-" if r.delta is None else ("+" if r.delta > 0 else "") + fmt(r.delta, r.unit)
            table.add_row(r.metric, r.unit, fmt(r.measured, r.unit), fmt(r.published, r.unit),
                          f"[{style}]{delta}[/{style}]" if style else delta,
                          f"[{style}]{pct}[/{style}]" if style else pct,
                          "-" if r.ci_lo is None or r.ci_hi is None
                          else f"{fmt(r.ci_lo, r.unit)} - {fmt(r.ci_hi, r.unit)}",
                          r.verdict)
        console.print(table)
    for title, items in (("measured points with no published match", cmp.unmatched_measured),
                         ("published points with no measured match", cmp.unmatched_published),
                         ("measured points without an InferenceX form", cmp.not_exported)):
        if items:
            console.print(f"\n[bold]{title}[/bold] ({len(items)})")
            for item in items:
                console.print(f"  - {item}")
