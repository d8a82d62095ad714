"""The cross-hardware main view: one chart per (model, scenario and ISL/OSL, precision); on it, each (hardware,
framework, spec method, agg/disagg, run) is its own best-config step frontier over every topology and concurrency
it measured (the *envelope*), every point labelled by its parallelism.

The data goes out once, as columns (:class:`MainView`): every point's x figures (interactivity, E2EL, TTFT) and y
figures (tok/s per GPU total/input/output, per node, per provisioned MW, $/Mtok per cost tier, measured J/output
token), with the why of every missing figure ("not priced: ..." is never a $0). The page switches axes without
asking the server again; :func:`envelope_mask` is the envelope the page draws, computed here for the API, the CSV
export and the tests.

Never misleading:
- a group holds the points of one run (the group key has the run), so an envelope never mixes runs;
- a point whose interactivity is not real (the streaming check warned) is drawn, marked invalid, and kept off
  every envelope; ``acceptance`` says whether a point's acceptance rate was measured or synthetic (default
  measured) and such points are marked in the page;
- J/token has a value only where the point's power telemetry was valid; the rest are counted, not drawn.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from infx.analysis.frontier import Direction, StepFrontier, grouped_pareto_mask

if TYPE_CHECKING:
    from infx.analysis.costmodel import CostModel
    from infx.analysis.dataset import Measured
    from infx.results.store import Store

Acceptance = Literal["measured", "synthetic"]


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Metric(_M):
    """One axis choice: its key, label, unit and which way is better. ``basis``: the throughput its value is
    proportional to (the page scales the point's interval with it); ``inverse``: the value goes as 1/throughput."""

    key: str
    label: str
    unit: str
    direction: Direction
    basis: Literal["total", "input", "output", "none"] = "none"
    inverse: bool = False
    input_metric: bool = False  # an input-token metric: the interactivity chart switches x to TTFT
    missing: int = 0  # points without a value (not priced, no valid power, ...)
    missing_reason: str = ""


class Chart(_M):
    id: int
    label: str
    model: str
    scenario: str
    isl: int | None
    osl: int | None
    precision: str


class Group(_M):
    """One envelope: what is served on which hardware, how (framework, spec method, agg/disagg), in which run."""

    id: int
    chart: int
    hardware: str
    framework: str
    spec: str
    disagg: bool
    run_id: str
    official: bool
    label: str
    not_priced: dict[str, str] = {}  # tier -> why this hardware has no price (absent: priced)


class Run(_M):
    run_id: str
    official: bool
    started_at: float | None = None
    ended_at: float | None = None


class Points(_M):
    """The points, one list entry each per column (index i is one point in every column)."""

    group: list[int] = []
    run_id: list[str] = []
    point_id: list[str] = []
    parallelism: list[str] = []
    conc: list[int] = []
    gpus: list[int] = []
    image: list[str] = []
    launch: list[str | None] = []  # the launch fingerprint (the recipe the point was served with)
    acceptance: list[Acceptance] = []
    invalid: list[str | None] = []  # why the point is off every envelope (None: valid)
    ci_total: list[tuple[float, float] | None] = []  # relative 95 % interval of total / output tok/s
    ci_output: list[tuple[float, float] | None] = []
    x: dict[str, list[float | None]] = {}
    y: dict[str, list[float | None]] = {}


class MainView(_M):
    """Everything the main view draws, sent once."""

    view: str  # "latest", "as-of:...", or the runs' ids
    runs: list[Run]
    charts: list[Chart]
    groups: list[Group]
    x_metrics: list[Metric]
    y_metrics: list[Metric]
    tiers: dict[str, str]
    cost_table: str
    points: Points
    notes: list[str] = []

    def metric(self, key: str) -> Metric:
        for m in (*self.x_metrics, *self.y_metrics):
            if m.key == key:
                return m
        raise KeyError(key)


X_METRICS = (
    Metric(key="interactivity", label="Interactivity (median)", unit="tok/s/user", direction=Direction.MAX),
    Metric(key="e2el", label="End-to-end latency (median)", unit="s", direction=Direction.MIN),
    Metric(key="ttft", label="TTFT (P99)", unit="s", direction=Direction.MIN),
)


def parallelism_label(m: Measured) -> str:
    """``TP8``, ``DEP8`` (topology names as the matrix writes them, upper-cased), ``1P+2D`` style for disagg."""
    if m.disagg and m.prefill_gpus and m.decode_gpus:
        return f"{m.arm.topology.upper()} ({m.prefill_gpus}P+{m.decode_gpus}D GPUs)"
    return m.arm.topology.upper()


def _gpus(m: Measured) -> int:
    if m.disagg and m.prefill_gpus and m.decode_gpus:
        return m.prefill_gpus + m.decode_gpus
    return m.gpus_per_server


def _per_gpu(m: Measured, kind: str) -> float | None:
    """InferenceX's per-GPU normalisation: total / all GPUs; disagg output / decode GPUs, input / prefill GPUs."""
    total, out = m.total_tok_per_s, m.output_tok_per_s
    rate = {"total": total, "output": out, "input": max(total - out, 0.0)}[kind]
    if rate <= 0:
        return None
    if m.disagg and m.prefill_gpus and m.decode_gpus and kind != "total":
        return rate / (m.decode_gpus if kind == "output" else m.prefill_gpus)
    return rate / _gpus(m)


def _rel_ci(m: Measured, key: str) -> tuple[float, float] | None:
    e = m.estimate(key)
    if e is None or not e.mean:
        return None
    return (round(e.lo / e.mean, 6), round(e.hi / e.mean, 6))


def _s(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


@dataclass
class _Price:
    usd_per_gpu_hour: float | None
    reason: str
    all_in_kw: float | None


def _price(m: Measured, run: str, tier: str, model: CostModel, sku_of: Callable[[str], str | None]) -> _Price:
    """A runner's $/GPU-hr in a tier and its all-in kW (for tok/s per MW), as the cost table gives them."""
    from infx.analysis.cost import Inputs, point_cost

    pc = point_cost(Inputs(run_id=run, point_id=m.point_id, runner=m.runner, total_tok_per_s=1.0,
                           output_tok_per_s=1.0, gpus_per_server=1, gpus_per_node=m.gpus_per_node),
                    model, tier, sku_of=sku_of)
    sc = model.skus.get(pc.sku) if pc.sku else None
    return _Price(pc.usd_per_gpu_hour.value, pc.usd_per_gpu_hour.reason, sc.all_in_kw.value if sc is not None else None)


def _y_metrics(tiers: Sequence[str], *, no_node: int, no_mw: int, unpriced: dict[str, int],
               no_power: int) -> list[Metric]:
    """The y metrics of the view, each with how many points lack it and why."""
    ym = [
        Metric(key="tput_gpu_total", label="Total tok/s per GPU", unit="tok/s/GPU", direction=Direction.MAX,
               basis="total"),
        Metric(key="tput_gpu_input", label="Input tok/s per GPU (prefill GPUs when disaggregated)",
               unit="tok/s/GPU", direction=Direction.MAX, basis="input", input_metric=True),
        Metric(key="tput_gpu_output", label="Output tok/s per GPU (decode GPUs when disaggregated)",
               unit="tok/s/GPU", direction=Direction.MAX, basis="output"),
        Metric(key="tput_node_total", label="Total tok/s per node", unit="tok/s/node", direction=Direction.MAX,
               basis="total", missing=no_node, missing_reason="GPUs per node unknown for the runner"),
        Metric(key="tput_mw_total", label="Total tok/s per provisioned MW (all-in)", unit="tok/s/MW",
               direction=Direction.MAX, basis="total", missing=no_mw,
               missing_reason="no all-in power figure for the hardware in the cost table"),
    ]
    kinds: tuple[Literal["total", "input", "output"], ...] = ("total", "input", "output")
    for t in tiers:
        for k in kinds:
            ym.append(Metric(key=f"usd_mtok_{k}:{t}", label=f"$ per million {k} tokens ({t})", unit="$/Mtok",
                             direction=Direction.MIN, basis=k, inverse=True, input_metric=k == "input",
                             missing=unpriced.get(t, 0), missing_reason="not priced"))
    ym.append(Metric(key="j_per_tok_output", label="Joules per output token (measured GPU energy)", unit="J/tok",
                     direction=Direction.MIN, missing=no_power,
                     missing_reason="no valid power telemetry: left out of J/token"))
    return ym


def _notes(model: CostModel, *, n: int, no_power: int, unpriced: dict[str, int], invalid: int) -> list[str]:
    """What the view leaves out, said once under the charts."""
    notes = []
    if no_power:
        notes.append(f"J/token: {no_power} of {n} point(s) have no valid power telemetry and are left out")
    for t in model.tiers:
        if unpriced.get(t):
            notes.append(f"$/Mtok ({t}): {unpriced[t]} point(s) not priced (their hardware has no {t} price in "
                         f"cost table {model.version})")
    if invalid:
        notes.append(f"{invalid} point(s) drawn as invalid (x marker) and kept off every envelope")
    return notes


def build_main_view(measured: Sequence[Measured], *, view: str, runs: Sequence[Run], model: CostModel,
                    sku_of: Callable[[str], str | None] | None = None,
                    acceptance_of: Callable[[Measured], Acceptance] | None = None) -> MainView:
    """The main view of ``measured`` (each point keeps the run that measured it: ``Measured.measured_in``)."""
    from infx.analysis.cost import sku_resolver, tok_per_s_per_mw, usd_per_mtok

    sku_of = sku_of or sku_resolver()
    official = {r.run_id: r.official for r in runs}
    tiers = list(model.tiers)
    charts: dict[tuple[object, ...], int] = {}
    chart_rows: list[Chart] = []
    groups: dict[tuple[object, ...], int] = {}
    group_rows: list[Group] = []
    prices: dict[tuple[str, int | None, str], _Price] = {}
    pts = Points()
    xs: dict[str, list[float | None]] = {m.key: [] for m in X_METRICS}
    ykeys = ["tput_gpu_total", "tput_gpu_input", "tput_gpu_output", "tput_node_total", "tput_mw_total",
             *(f"usd_mtok_{k}:{t}" for t in tiers for k in ("total", "input", "output")), "j_per_tok_output"]
    ys: dict[str, list[float | None]] = {k: [] for k in ykeys}
    unpriced: dict[str, int] = defaultdict(int)
    no_power = no_mw = no_node = 0
    order = sorted(measured, key=lambda m: (m.workload.model_prefix, m.workload.scenario, m.workload.isl or 0,
                                            m.workload.osl or 0, m.workload.precision, m.workload.hardware,
                                            m.workload.framework, m.measured_in, m.arm.topology, m.conc))
    for m in order:
        w = m.workload
        ck = (w.model_prefix, w.scenario, w.isl, w.osl, w.precision)
        if ck not in charts:
            charts[ck] = len(chart_rows)
            seq = "agentic" if w.scenario == "agentic-coding" else f"{w.isl}/{w.osl}"
            chart_rows.append(Chart(id=len(chart_rows), label=f"{w.model_prefix} {seq} {w.precision}",
                                    model=w.model_prefix, scenario=w.scenario, isl=w.isl, osl=w.osl,
                                    precision=w.precision))
        run = m.measured_in
        spec = m.arm.spec_decoding or "none"
        gk = (ck, w.hardware, w.framework, spec, m.disagg, run)
        if gk not in groups:
            groups[gk] = len(group_rows)
            bits = [w.hardware, w.framework] + ([] if spec in ("", "none") else [spec]) + \
                (["disagg"] if m.disagg else [])
            group_rows.append(Group(id=len(group_rows), chart=charts[ck], hardware=w.hardware, framework=w.framework,
                                    spec=spec, disagg=m.disagg, run_id=run, official=official.get(run, True),
                                    label=f"{' '.join(bits)} [{run}]"))
        g = group_rows[groups[gk]]
        pts.group.append(g.id)
        pts.run_id.append(run)
        pts.point_id.append(m.point_id)
        pts.parallelism.append(parallelism_label(m))
        pts.conc.append(m.conc)
        pts.gpus.append(_gpus(m))
        pts.image.append(m.image)
        pts.launch.append(m.launch_fingerprint)
        pts.acceptance.append(acceptance_of(m) if acceptance_of is not None else "measured")
        invalid = None
        if m.buffered_stream:
            invalid = "streaming check failed: TPOT and interactivity are not real"
        elif m.total_tok_per_s <= 0:
            invalid = "no tokens measured"
        pts.invalid.append(invalid)
        pts.ci_total.append(_rel_ci(m, "total_tok_per_s"))
        pts.ci_output.append(_rel_ci(m, "output_tok_per_s"))
        xs["interactivity"].append(m.interactivity_median)
        xs["e2el"].append(_s(m.e2el_median))
        xs["ttft"].append(_s(m.ttft_p99))
        per = {k: _per_gpu(m, k) for k in ("total", "input", "output")}
        ys["tput_gpu_total"].append(per["total"])
        ys["tput_gpu_input"].append(per["input"])
        ys["tput_gpu_output"].append(per["output"])
        node = m.throughput("total", "node") if m.gpus_per_node else None
        no_node += node is None
        ys["tput_node_total"].append(node)
        pk = (m.runner, m.gpus_per_node, "")
        for t in tiers:
            key = (m.runner, m.gpus_per_node, t)
            if key not in prices:
                prices[key] = _price(m, run, t, model, sku_of)
            price = prices[key]
            pk = key
            if price.usd_per_gpu_hour is None:
                g.not_priced[t] = price.reason or "no price"
                unpriced[t] += 1
            for k in ("total", "input", "output"):
                v = per[k]
                ys[f"usd_mtok_{k}:{t}"].append(None if price.usd_per_gpu_hour is None or v is None
                                               else usd_per_mtok(price.usd_per_gpu_hour, v))
        kw = prices[pk].all_in_kw if tiers else None
        mw = None if kw is None or per["total"] is None else tok_per_s_per_mw(per["total"], kw)
        no_mw += mw is None
        ys["tput_mw_total"].append(mw)
        j = m.joules_per_output_token
        if j is None or j <= 0:
            j = None
            no_power += 1
        ys["j_per_tok_output"].append(j)
    pts.x, pts.y = xs, ys
    n = len(order)
    ym = _y_metrics(tiers, no_node=no_node, no_mw=no_mw, unpriced=unpriced, no_power=no_power)
    notes = _notes(model, n=n, no_power=no_power, unpriced=unpriced, invalid=sum(v is not None for v in pts.invalid))
    return MainView(view=view, runs=list(runs), charts=chart_rows, groups=group_rows, x_metrics=list(X_METRICS),
                    y_metrics=ym, tiers=dict(model.tiers), cost_table=model.label, points=pts, notes=notes)


def _arr(values: Sequence[float | None]) -> np.ndarray:
    return np.array([math.nan if v is None else v for v in values], dtype=float)


def envelope_mask(view: MainView, x: str, y: str) -> np.ndarray:
    """Which points are on their group's envelope for the axes ``x`` and ``y`` (the directions the metrics
    declare). Invalid points and points missing either figure are never on it."""
    xm, ym = view.metric(x), view.metric(y)
    xa = _arr(view.points.x[x])
    ya = _arr(view.points.y[y])
    bad = np.array([v is not None for v in view.points.invalid], dtype=bool)
    xa[bad] = math.nan
    return grouped_pareto_mask(np.asarray(view.points.group, dtype=np.int64), xa, ya, xm.direction, ym.direction)


def group_frontier(view: MainView, group: int, x: str, y: str) -> StepFrontier:
    """One group's envelope as a step frontier (with the intervals of the throughput it scales with)."""
    xm, ym = view.metric(x), view.metric(y)
    idx = [i for i, g in enumerate(view.points.group) if g == group and view.points.invalid[i] is None]
    xa = _arr([view.points.x[x][i] for i in idx])
    ya = _arr([view.points.y[y][i] for i in idx])
    ci = view.points.ci_output if ym.basis == "output" else view.points.ci_total
    rel = []
    for i in idx:
        c = ci[i]
        rel.append(math.nan if c is None or ym.basis == "none" else (c[1] - c[0]) / 2 / 1.96)
    return StepFrontier.build(xa, ya, xm.direction, ym.direction, rel_se=rel)


# ----------------------------------------------------------------------------------------------- loading


def load_main_view(store: Store, *, runs: Sequence[str] | None = None, as_of: str | None = None,
                   model: CostModel | None = None, gpus_per_node: int | None = None) -> MainView:
    """The main view of ``runs`` (their points, each group one run), or of the latest curves as of ``as_of``
    (each curve from its one snapshot; a group whose topologies were last measured by different runs is one
    envelope per run, never one stitched across them)."""
    from infx.analysis.costmodel import load_cost_model
    from infx.analysis.dataset import gpus_per_node_resolver, load_measured

    model = model or load_cost_model()
    resolve = gpus_per_node_resolver(store, override=gpus_per_node)
    facts = store.run_facts()
    overview = {r.run_id: r for r in store.runs_overview()}
    if runs:
        measured = load_measured(store, list(runs), gpus_per_node=resolve)
        name = ",".join(runs)
        used = list(runs)
    else:
        from infx.analysis.view import load_view

        data = load_view(store, as_of, gpus_per_node=resolve)
        measured = data.measured
        name = data.view_id
        used = data.runs
    run_rows = [Run(run_id=r, official=bool(overview[r].official) if r in overview else True,
                    started_at=facts[r].started_at if r in facts else None,
                    ended_at=facts[r].ended_at if r in facts else None) for r in used]
    return build_main_view(measured, view=name, runs=run_rows, model=model)


def csv_rows(view: MainView, chart: int | None, x: str, y: str) -> list[dict[str, object]]:
    """The rows the page's CSV export writes for one chart (all charts: None), in the same columns."""
    on = envelope_mask(view, x, y)
    out = []
    for i, gid in enumerate(view.points.group):
        g = view.groups[gid]
        if chart is not None and g.chart != chart:
            continue
        out.append({"chart": view.charts[g.chart].label, "group": g.label, "hardware": g.hardware,
                    "framework": g.framework, "spec": g.spec, "disagg": g.disagg, "run_id": view.points.run_id[i],
                    "point_id": view.points.point_id[i], "parallelism": view.points.parallelism[i],
                    "conc": view.points.conc[i], x: view.points.x[x][i], y: view.points.y[y][i],
                    "on_envelope": bool(on[i]), "acceptance": view.points.acceptance[i],
                    "invalid": view.points.invalid[i] or ""})
    return out
