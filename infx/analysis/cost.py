"""Cost per token, applied when results are read: $/Mtok, tokens per $, tok/s per provisioned MW and per
measured kW, cost frontiers and cost comparisons. The table comes from :mod:`infx.analysis.costmodel`;
nothing here is ever written to the store.

Formulas (InferenceX-app, chart-utils): with ``p`` the tier's $/GPU-hour and ``t`` tok/s per GPU,

* $/Mtok = p / (t x 3600 / 1e6); tokens per $ = t x 3600 / p;
* tok/s per provisioned MW = t x 1000 / (all-in kW per GPU).

Total tokens are divided by **all** GPUs of the deployment. Input and output tokens have two bases, both
labelled wherever they are shown:

* ``role``: per-role GPUs. Output tokens carry the decode GPUs' cost, input tokens the prefill GPUs' (what
  InferenceX shows for disaggregated configs). For a disaggregated deployment this is an allocation: input
  $/Mtok x input tokens + output $/Mtok x output tokens = the deployment's cost. An aggregated deployment
  has no roles, so its role basis is its all-GPU basis.
* ``all``: all GPUs of the deployment are charged to each token type (InferenceX's figures for aggregated
  configs). Comparable between aggregated and disaggregated deployments; not an allocation (the two do not
  add up). Read against an aggregated config's figures, the role basis makes a disaggregated config look
  cheaper than it is (by a median 2x, up to 18x, in InferenceX's run history).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from infx.analysis.costmodel import CostModel, Price
from infx.analysis.frontier import Direction, StepFrontier

if TYPE_CHECKING:
    from pathlib import Path

    from infx.analysis.compare import Comparison, ComparisonSet
    from infx.analysis.dataset import ArmSeries, Measured
    from infx.results.store import Store

Basis = Literal["all", "role"]
TokenKind = Literal["total", "input", "output"]
BASES: tuple[Basis, ...] = ("all", "role")
SECONDS_PER_HOUR = 3600.0


# ----------------------------------------------------------------------------------------------- formulas


def usd_per_mtok(usd_per_gpu_hour: float, tok_per_s_per_gpu: float) -> float:
    """InferenceX-app: $/Mtok = $/GPU-hr / (tok/s/GPU x 3600 / 1e6)."""
    return usd_per_gpu_hour / (tok_per_s_per_gpu * SECONDS_PER_HOUR / 1e6)


def tokens_per_usd(usd_per_gpu_hour: float, tok_per_s_per_gpu: float) -> float:
    """Tokens bought by one dollar: tok/s/GPU x 3600 / $/GPU-hr."""
    return tok_per_s_per_gpu * SECONDS_PER_HOUR / usd_per_gpu_hour


def tok_per_s_per_mw(tok_per_s_per_gpu: float, all_in_kw_per_gpu: float) -> float:
    """InferenceX-app: tok/s/MW = tok/s/GPU x 1000 / kW (all-in provisioned kW per GPU)."""
    return tok_per_s_per_gpu * 1000.0 / all_in_kw_per_gpu


# ----------------------------------------------------------------------------------------------- per point


class Inputs(BaseModel):
    """What a point's cost is computed from (all read from the stored result, never the other way)."""

    model_config = ConfigDict(frozen=True)

    run_id: str = ""
    point_id: str
    runner: str
    total_tok_per_s: float
    output_tok_per_s: float
    gpus_per_server: int
    prefill_gpus: int | None = None  # disaggregated deployments only
    decode_gpus: int | None = None
    gpus_per_node: int | None = None
    measured_power_w: float | None = None  # telemetry, valid windows only (whole deployment)
    measured_power_what: str = ""

    @property
    def input_tok_per_s(self) -> float:
        return max(self.total_tok_per_s - self.output_tok_per_s, 0.0)

    @property
    def disagg(self) -> bool:
        return bool(self.prefill_gpus) and bool(self.decode_gpus)

    @property
    def gpus(self) -> int:
        if self.disagg:
            assert self.prefill_gpus and self.decode_gpus
            return self.prefill_gpus + self.decode_gpus
        return self.gpus_per_server

    def role_gpus(self, kind: TokenKind, basis: Basis) -> int:
        if basis == "all" or kind == "total" or not self.disagg:
            return self.gpus
        assert self.prefill_gpus and self.decode_gpus
        return self.decode_gpus if kind == "output" else self.prefill_gpus

    def tok_per_s(self, kind: TokenKind) -> float:
        return {"total": self.total_tok_per_s, "output": self.output_tok_per_s, "input": self.input_tok_per_s}[kind]


class Value(BaseModel):
    """A derived figure, or why there is none ("not priced: <reason>"); never a stand-in 0."""

    model_config = ConfigDict(frozen=True)

    value: float | None = None
    reason: str = ""

    def text(self, fmt: str = "{:,.4g}") -> str:
        return fmt.format(self.value) if self.value is not None else f"not priced: {self.reason}"


def basis_label(kind: TokenKind, basis: Basis, inp: Inputs | None = None) -> str:
    """``output $/Mtok (decode GPUs)``-style labels, with the GPU counts when a point is given."""
    if kind == "total":
        return "all GPUs" + (f" ({inp.gpus})" if inp else "")
    if basis == "all":
        return f"{kind}, all GPUs" + (f" ({inp.gpus})" if inp else "")
    if inp is not None and not inp.disagg:
        return f"{kind}, per role (aggregated: all {inp.gpus} GPUs)"
    role = "decode" if kind == "output" else "prefill"
    return f"{kind}, {role} GPUs" + (f" ({inp.role_gpus(kind, basis)})" if inp else "")


class PointCost(BaseModel):
    """Every cost figure of one point in one tier."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    point_id: str
    sku: str | None
    tier: str
    disagg: bool
    gpus: int
    prefill_gpus: int | None = None
    decode_gpus: int | None = None
    usd_per_gpu_hour: Value  # effective price (a node-hour price / GPUs per node)
    price_note: str = ""  # "1.17 $/GPU-hr, source (date)"
    usd_per_mtok: dict[str, Value]  # "total", "input:all", "input:role", "output:all", "output:role"
    tokens_per_usd: dict[str, Value]  # same keys
    tok_per_s_per_mw: Value  # total tok/s per provisioned (all-in) MW
    tok_per_s_per_measured_kw: Value  # total tok/s per measured kW (telemetry)
    energy_usd_per_mtok: Value  # provisioned all-in kW x $/kWh, per Mtok (a component, not added to the total)
    labels: dict[str, str]
    illustrative: bool = False

    @property
    def priced(self) -> bool:
        return self.usd_per_mtok["total"].value is not None

    def cost(self, kind: TokenKind = "total", basis: Basis = "all") -> Value:
        return self.usd_per_mtok[_key(kind, basis)]


def _key(kind: TokenKind, basis: Basis) -> str:
    return "total" if kind == "total" else f"{kind}:{basis}"


SkuOf = Callable[[str], str | None]  # runner label -> hardware SKU


def sku_resolver(cards_dirs: Iterable[str | Path] | None = None, *, kind: bool = False) -> SkuOf:
    """Runner label -> SKU through the hardware cards' token match (``cluster:mi355x-amds`` -> mi355x,
    ``local`` -> cpu); with ``kind``, runner label -> the card's kind (``gpu`` / ``cpu``)."""
    from infx.preflight.cards import load_cards

    cards = load_cards(list(cards_dirs) if cards_dirs is not None else None)
    memo: dict[str, str | None] = {}

    def resolve(runner: str) -> str | None:
        if runner not in memo:
            card = cards.hardware_for_runner(runner)
            memo[runner] = None if card is None else (card.kind if kind else card.name)
        return memo[runner]

    return resolve


def _effective_price(price: Price, inp: Inputs, sku: str) -> tuple[float | None, str]:
    if price.value is None:
        return None, price.unpriced or "no price"
    if price.unit == "gpu-hour":
        return price.value, ""
    if not inp.gpus_per_node:
        return None, (f"{sku} is priced per node-hour and the GPUs per node of runner {inp.runner!r} are unknown "
                      "(pass --gpus-per-node or --runners)")
    return price.value / inp.gpus_per_node, ""


def point_cost(inp: Inputs, model: CostModel, tier: str | None = None, *, sku_of: SkuOf) -> PointCost:
    """The cost figures of one point in ``tier`` (default: the table's default tier)."""
    t = model.tier(tier)
    sku = sku_of(inp.runner)
    labels = {_key(k, b): basis_label(k, b, inp) for k in ("total", "input", "output") for b in BASES}
    keys = list(dict.fromkeys(labels))
    reason = ""
    sc = model.skus.get(sku) if sku else None
    if sku is None:
        reason = f"runner {inp.runner!r} maps to no hardware SKU (cards/hardware)"
    elif sc is None:
        reason = f"SKU {sku} is not in {model.version} ({model.files[-1]})"
    price: float | None = None
    note = ""
    if sc is not None:
        p = sc.prices[t]
        price, reason = _effective_price(p, inp, sc.sku)
        if price is not None:
            unit = "GPU-hr" if p.unit == "gpu-hour" else f"node-hr / {inp.gpus_per_node} GPUs"
            note = f"{p.value:g} $/{unit}, {p.source} ({p.date})"
        elif p.value is None:
            reason = f"{sc.sku} {t}: {reason}"

    def priced(kind: TokenKind, basis: Basis, inverse: bool = False) -> Value:
        if price is None:
            return Value(reason=reason)
        rate = inp.tok_per_s(kind)
        if rate <= 0:
            return Value(reason=f"no {kind} tokens measured (0 tok/s)")
        per_gpu = rate / inp.role_gpus(kind, basis)
        return Value(value=tokens_per_usd(price, per_gpu) if inverse else usd_per_mtok(price, per_gpu))

    costs = {k: priced(*_split(k)) for k in keys}
    per_usd = {k: priced(*_split(k), inverse=True) for k in keys}
    per_gpu_total = inp.total_tok_per_s / inp.gpus
    if sc is None:
        mw = Value(reason=reason)
    elif sc.all_in_kw.value is None:
        mw = Value(reason=f"{sc.sku}: no all-in power figure ({sc.all_in_kw.unpriced})")
    elif per_gpu_total <= 0:
        mw = Value(reason="no tokens measured (0 tok/s)")
    else:
        mw = Value(value=tok_per_s_per_mw(per_gpu_total, sc.all_in_kw.value))
    if inp.measured_power_w and inp.measured_power_w > 0:
        mkw = Value(value=inp.total_tok_per_s / (inp.measured_power_w / 1000.0))
    else:
        mkw = Value(reason="no valid power telemetry for this point")
    kwh = sc.usd_per_kwh if sc is not None else None
    if kwh is None or kwh.value is None:
        energy = Value(reason=(kwh.unpriced or "") if kwh is not None else "no $/kWh in the table for this SKU")
    elif sc is None or sc.all_in_kw.value is None or per_gpu_total <= 0:
        energy = Value(reason="no all-in power figure or no tokens")
    else:
        energy = Value(value=usd_per_mtok(sc.all_in_kw.value * kwh.value, per_gpu_total))
    return PointCost(run_id=inp.run_id, point_id=inp.point_id, sku=sku, tier=t, disagg=inp.disagg, gpus=inp.gpus,
                     prefill_gpus=inp.prefill_gpus, decode_gpus=inp.decode_gpus,
                     usd_per_gpu_hour=Value(value=price, reason=reason), price_note=note, usd_per_mtok=costs,
                     tokens_per_usd=per_usd, tok_per_s_per_mw=mw, tok_per_s_per_measured_kw=mkw,
                     energy_usd_per_mtok=energy, labels=labels, illustrative=bool(sc and sc.illustrative))


_KINDS: dict[str, TokenKind] = {"total": "total", "input": "input", "output": "output"}
_BASES: dict[str, Basis] = {"all": "all", "role": "role"}


def _split(key: str) -> tuple[TokenKind, Basis]:
    """``total`` / ``input:role`` ... (the keys :func:`_key` writes) as (kind, basis)."""
    if key == "total":
        return "total", "all"
    kind, basis = key.split(":")
    return _KINDS[kind], _BASES[basis]


def inputs_of(m: Measured, measured_power_w: float | None = None, what: str = "") -> Inputs:
    return Inputs(run_id=m.run_id, point_id=m.point_id, runner=m.runner, total_tok_per_s=m.total_tok_per_s,
                  output_tok_per_s=m.output_tok_per_s, gpus_per_server=m.gpus_per_server,
                  prefill_gpus=m.prefill_gpus, decode_gpus=m.decode_gpus, gpus_per_node=m.gpus_per_node,
                  measured_power_w=measured_power_w, measured_power_what=what)


def inputs_of_result(point_row: dict[str, object], result: object, gpus_per_node: int | None = None) -> Inputs:
    """Inputs from a point's files (``point.json`` row and ``result.json``), for readers without the store
    (``infx status``); the same numbers the store keeps."""
    from infx.matrix.point import Point
    from infx.metrics.result import BenchResult
    from infx.results.store import role_gpus_of

    assert isinstance(result, BenchResult)
    point = Point.from_row(point_row)
    pg, dg, disagg = role_gpus_of(point)
    thr = result.metrics.throughput
    return Inputs(point_id=point.point_id, runner=point.runner, total_tok_per_s=thr.total_tok_per_s,
                  output_tok_per_s=thr.output_tok_per_s, gpus_per_server=point.gpus_per_server,
                  prefill_gpus=pg if disagg else None, decode_gpus=dg if disagg else None, gpus_per_node=gpus_per_node)


def measured_power(store: Store, run_ids: Sequence[str] | None = None,
                   sku_kind: Callable[[str], str | None] | None = None) -> dict[tuple[str, str], tuple[float, str]]:
    """(run, point) -> (measured W, what was measured): GPU board power for GPU SKUs, CPU package power
    (RAPL) for the ``cpu`` SKU; only windows the telemetry stage judged valid."""
    out: dict[tuple[str, str], tuple[float, str]] = {}
    for row in store.power(run_ids):
        kind = sku_kind(row.runner) if sku_kind else None
        if kind == "cpu":
            if row.cpu_energy_valid and row.cpu_avg_power_w:
                out[(row.run_id, row.point_id)] = (float(row.cpu_avg_power_w), "CPU package power (RAPL)")
        elif row.power_valid and row.avg_total_gpu_power_w:
            out[(row.run_id, row.point_id)] = (float(row.avg_total_gpu_power_w), "GPU board power")
    return out


# ----------------------------------------------------------------------------------------------- the view


class SloCost(BaseModel):
    """Cost at an SLO tier: the cost of the highest load a deployment serves within the tier's SLO."""

    slo: str
    point_id: str
    label: str
    usd_per_mtok: Value
    tokens_per_usd: Value


class CapacityResult(Protocol):
    """What the SLO/capacity search is expected to hand over; the hook
    :func:`cost_at_slo` prices it. Any object with these attributes will do."""

    @property
    def slo(self) -> str: ...  # the SLO tier's name

    @property
    def point_id(self) -> str: ...  # the measured point at capacity

    @property
    def run_id(self) -> str: ...


def cost_at_slo(capacity: Iterable[CapacityResult], costs: dict[tuple[str, str], PointCost], tier: str,
                basis: Basis = "all") -> list[SloCost]:
    """Price capacity results (the highest load meeting each SLO tier) with the point costs already computed.
    Empty until the SLO/capacity search produces results; nothing here searches for capacity."""
    out: list[SloCost] = []
    for c in capacity:
        pc = costs.get((c.run_id, c.point_id))
        if pc is None:
            out.append(SloCost(slo=c.slo, point_id=c.point_id, label="",
                               usd_per_mtok=Value(reason="point not measured in this view"),
                               tokens_per_usd=Value(reason="point not measured in this view")))
            continue
        out.append(SloCost(slo=c.slo, point_id=c.point_id, label=pc.labels["total"], usd_per_mtok=pc.cost(),
                           tokens_per_usd=pc.tokens_per_usd["total"]))
    return out


class CostView(BaseModel):
    """What the report and the dashboard show about cost: the table named, every point priced in one tier,
    frontier membership, and cost at SLO tiers when capacity results exist."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    table: str  # CostModel.label
    version: str
    files: list[str]
    tier: str
    tiers: dict[str, str]
    illustrative: bool
    points: list[PointCost]
    on_frontier: list[str]  # point ids on their arm's cost frontier ($/Mtok total vs interactivity)
    slo: list[SloCost] = []
    slo_note: str = ""
    measured_power_what: dict[str, str] = {}  # point id -> what the measured kW is

    def by_point(self) -> dict[tuple[str, str], PointCost]:
        return {(p.run_id, p.point_id): p for p in self.points}


def cost_view(measured: Sequence[Measured], model: CostModel, tier: str | None = None, *,
              sku_of: SkuOf | None = None, power: dict[tuple[str, str], tuple[float, str]] | None = None,
              capacity: Iterable[CapacityResult] | None = None, x_metric: str = "interactivity") -> CostView:
    sku_of = sku_of or sku_resolver()
    t = model.tier(tier)
    power = power or {}
    costs = []
    what: dict[str, str] = {}
    for m in measured:
        pw = power.get((m.run_id, m.point_id))
        costs.append(point_cost(inputs_of(m, *(pw or (None, ""))), model, t, sku_of=sku_of))
        if pw:
            what[m.point_id] = pw[1]
    on = cost_frontier_members(measured, {(c.run_id, c.point_id): c for c in costs}, x_metric=x_metric)
    slo: list[SloCost] = []
    note = ("cost at an SLO tier: no capacity results in this view (they come from the SLO/capacity search)"
            if capacity is None else "")
    if capacity is not None:
        slo = cost_at_slo(capacity, {(c.run_id, c.point_id): c for c in costs}, t)
    return CostView(table=model.label, version=model.version, files=model.files, tier=t, tiers=model.tiers,
                    illustrative=model.illustrative or any(c.illustrative for c in costs), points=costs,
                    on_frontier=sorted(on), slo=slo, slo_note=note, measured_power_what=what)


def load_cost_view(store: Store, measured: Sequence[Measured], run_ids: Sequence[str] | None = None, *,
                   model: CostModel | None = None, tier: str | None = None,
                   capacity: Iterable[CapacityResult] | None = None) -> CostView:
    """The cost view of stored points: the workspace's table (or ``model``), measured power from the
    telemetry table. Read-only: the store is only queried."""
    from infx.analysis.costmodel import load_cost_model

    model = model or load_cost_model()
    power = measured_power(store, run_ids, sku_kind=sku_resolver(kind=True))
    return cost_view(measured, model, tier, power=power, capacity=capacity)


# ----------------------------------------------------------------------------------------------- frontiers


def cost_frontier(points: Sequence[Measured], costs: dict[tuple[str, str], PointCost], *,
                  kind: TokenKind = "total", basis: Basis = "all", x_metric: str = "interactivity") -> StepFrontier:
    """$/Mtok against interactivity: more interactivity is better, less cost is better; a step function
    through measured points (no value outside the measured range)."""
    from infx.analysis.dataset import x_metric_of

    xm = x_metric_of(x_metric)
    xs = [_nan(m.x(xm)) for m in points]
    ys = [_nan(costs[(m.run_id, m.point_id)].cost(kind, basis).value) for m in points]
    return StepFrontier.build(xs, ys, Direction.MAX, Direction.MIN)


def cost_frontier_members(measured: Sequence[Measured], costs: dict[tuple[str, str], PointCost], *,
                          x_metric: str = "interactivity") -> set[str]:
    from infx.analysis.dataset import group

    out: set[str] = set()
    for arms in group(measured).values():
        for pts in arms.values():
            fr = cost_frontier(pts, costs, x_metric=x_metric)
            out.update(pts[i].point_id for i in fr.members.tolist())
    return out


def _nan(v: float | None) -> float:
    return math.nan if v is None else float(v)


# ----------------------------------------------------------------------------------------------- compare


def _pair(sa: ArmSeries, sb: ArmSeries, costs: dict[tuple[str, str], PointCost], kind: TokenKind, basis: Basis,
          tier: str, at: Sequence[float] | None, ladder_points: int) -> Comparison:
    """Tokens per $ (more is better) of two arms at equal interactivity; each ladder step's note gives both
    arms' $/Mtok."""
    from infx.analysis.compare import compare_frontiers
    from infx.analysis.dataset import X_AXES

    def frontier(s: ArmSeries) -> StepFrontier:
        xs = [_nan(m.x(s.x_metric)) for m in s.points]
        ys = [_nan(costs[(m.run_id, m.point_id)].tokens_per_usd[_key(kind, basis)].value) for m in s.points]
        return StepFrontier.build(xs, ys, Direction.MAX, Direction.MAX)

    xa = X_AXES[sa.x_metric]
    gpus = "" if kind == "total" else " on " + basis_label(kind, basis).split(", ", 1)[1]
    c = compare_frontiers(frontier(sa), frontier(sb), a_label=sa.label, b_label=sb.label, x_label=xa.label.lower(),
                          x_unit=xa.unit, y_label=f"{kind} tokens per ${gpus} ({tier})", workload=sa.workload.label,
                          at=at, ladder_points=ladder_points)
    ladder = []
    for e in c.ladder:
        bits = [f"{name} ${1e6 / v:,.4g}/Mtok" for name, v in (("A", e.a), ("B", e.b)) if v]
        note = "; ".join(([", ".join(bits)] if bits else []) + ([e.note] if e.note else []))
        ladder.append(e.model_copy(update={"note": note}))
    reasons = sorted({costs[(m.run_id, m.point_id)].cost(kind, basis).reason for s in (sa, sb) for m in s.points
                      if costs[(m.run_id, m.point_id)].cost(kind, basis).value is None})
    verdict = c.verdict + [f"not priced: {r}" for r in reasons]
    mixed = {m.disagg for m in sa.points} ^ {m.disagg for m in sb.points}
    if kind != "total" and basis == "role" and mixed:
        verdict.append(f"caution: per-role {kind} figures of a disaggregated arm read cheaper than an aggregated arm's "
                       "(which carry all its GPUs); compare them with --basis all")
    return c.model_copy(update={"ladder": ladder, "verdict": verdict})


def compare_cost(measured: Sequence[Measured], model: CostModel, run_id: str, *, baseline: str | None = None,
                 a: str | None = None, b: str | None = None, arm: str | None = None, tier: str | None = None,
                 basis: Basis = "all", kinds: Sequence[TokenKind] = ("total", "output", "input"),
                 x_metric: str = "interactivity", at: Sequence[float] | None = None, ladder_points: int = 10,
                 sku_of: SkuOf | None = None) -> ComparisonSet:
    """``infx compare --metric cost``: arms of a run (or each arm against the same arm of ``baseline``) in
    tokens per $ at equal interactivity, for total tokens and input/output tokens on ``basis``."""
    from infx.analysis.compare import ComparisonSet
    from infx.analysis.dataset import match_arm, series, x_metric_of

    t = model.tier(tier)
    runs = (run_id,) + ((baseline,) if baseline else ())
    pts = [m for m in measured if m.run_id in runs]
    sku_of = sku_of or sku_resolver()
    costs = {(m.run_id, m.point_id): point_cost(inputs_of(m), model, t, sku_of=sku_of) for m in pts}
    bases = "per-role GPUs: prefill for input, decode for output" if basis == "role" else "all GPUs of the deployment"
    notes = [model.label, f"tier {t}: {model.tiers[t]}; input/output basis: {basis} ({bases})"]
    out = []
    for workload, arms in series(pts, x_metric=x_metric_of(x_metric)).items():
        arms.sort(key=lambda s: (s.points[0].gpus_per_server, s.label))
        if baseline:
            mine = {s.arm: s for s in arms if s.run_id == run_id and (arm is None or match_arm(arm, s.arm))}
            base = {s.arm: s for s in arms if s.run_id == baseline and (arm is None or match_arm(arm, s.arm))}
            pairs = []
            for key in sorted(set(mine) & set(base), key=lambda k: k.label):
                sa, sb = mine[key], base[key]
                sa.label, sb.label = f"{sa.label} ({run_id})", f"{sb.label} ({baseline})"
                pairs.append((sa, sb))
            for key in sorted(set(mine) ^ set(base), key=lambda k: k.label):
                where = run_id if key in mine else baseline
                notes.append(f"{workload.label}: {key.label} only in {where}")
        else:
            mine_arms = [s for s in arms if s.run_id == run_id]
            if a or b:
                left = [s for s in mine_arms if a and match_arm(a, s.arm)]
                right = [s for s in mine_arms if b and match_arm(b, s.arm)]
                pairs = [(x, y) for x in left for y in right if x is not y]
                if not pairs:
                    notes.append(f"{workload.label}: no arm pair matches {a!r} / {b!r} "
                                 f"(arms: {', '.join(s.label for s in mine_arms)})")
            else:
                pairs = [(mine_arms[i], mine_arms[j]) for i in range(len(mine_arms))
                         for j in range(i + 1, len(mine_arms))]
                if len(mine_arms) == 1:
                    notes.append(f"{workload.label}: only one arm ({mine_arms[0].label}) in run {run_id}; "
                                 "nothing to compare")
        for sa, sb in pairs:
            for kind in kinds:
                out.append(_pair(sa, sb, costs, kind, basis, t, at, ladder_points))
    title = (f"cost: run {run_id} vs baseline {baseline}" if baseline else f"cost: arms of run {run_id}")
    return ComparisonSet(title=f"{title} (tier {t}, basis {basis})", norm="gpu", comparisons=out, notes=notes)
