"""``infx compare``: what it is asked (:class:`CompareRequest`), what it reads for that (:func:`gather`: the store
brought up to date, the latest curves as of a date or run, the arms' figures, paired evals, InferenceX's
PR-comparison table against an imported baseline), the comparison itself (:func:`compare`) and the cost at the
SLO tiers capacity searches found (:func:`slo_cost_lines`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from infx.analysis.compare import DEFAULT_MARGIN
from infx.analysis.cost import Basis
from infx.analysis.dataset import XMetric
from infx.analysis.pernode import Normalisation
from infx.diagnostics import Diagnostic, InfxError

if TYPE_CHECKING:
    from infx.analysis.accuracy import AccuracyComparison
    from infx.analysis.compare import ComparisonSet
    from infx.analysis.costmodel import CostModel
    from infx.analysis.dataset import Measured
    from infx.analysis.view import ViewData
    from infx.interop.prtable import PRComparison
    from infx.results.store import IngestReport

CompareMetric = Literal["total", "output", "energy", "cost"]  # cost: tokens per $ (read-time pricing)
Target = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class CompareRequest(BaseModel):
    """What ``infx compare`` is asked: two arms of one run (``arm_a``/``arm_b``), or a run against a baseline
    (``arm``: only that arm), or aggregated against disaggregated deployments, read off step frontiers at equal
    interactivity (``at``: the targets; None: a ladder of ``ladder_points`` across the measured range). With
    ``as_of``: the latest curves as of then stand in for the run (or, given ``run``, for the baseline)."""

    model_config = ConfigDict(extra="forbid")

    results: Path | None = None  # None: the workspace's results/
    run: str | None = None  # None: the latest measured run
    baseline: str | None = None
    arm_a: str | None = None
    arm_b: str | None = None
    arm: str | None = None
    per: Normalisation = "node"
    metric: CompareMetric = "total"
    x: XMetric = "interactivity"
    at: list[Target] | None = None
    ladder_points: int = Field(10, ge=2)
    margin: float = DEFAULT_MARGIN
    gpus_per_node: int | None = Field(None, ge=1)
    runners: Path | None = None
    agg_vs_disagg: bool = False
    tier: str | None = None  # the cost table's price tier (None: its default)
    basis: Basis = "all"
    as_of: str | None = None
    store: str | None = None

    @field_validator("at", mode="before")
    @classmethod
    def _targets(cls, v: object) -> object:
        """``--at 10,20,40``: comma-separated interactivity targets (tok/s/user)."""
        return parse_targets(v) if isinstance(v, str) else v

    @field_validator("margin")
    @classmethod
    def _fraction(cls, v: float) -> float:
        if not 0 < v < 1:
            raise ValueError(f"--margin must be a fraction in (0, 1) such as 0.05, not {v:g}")
        return v

    @model_validator(mode="after")
    def _shape(self) -> CompareRequest:
        if self.as_of is not None and self.run and self.baseline:
            raise ValueError("--as-of compares the curves as of then with --run or --baseline, not both")
        return self


def parse_targets(text: str) -> list[float] | None:
    """``10,20,40`` as numbers (spaces and empty items ignored; an empty text: None). A token that is not a
    number, or not a positive finite one, is refused naming it."""
    if not text:
        return None
    out = []
    for tok in text.replace(" ", "").split(","):
        if not tok:
            continue
        try:
            value = float(tok)
        except ValueError:
            raise ValueError(f"--at: not a number: {tok!r} (expected e.g. 10,20,40)") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"--at: {tok!r} is not a positive interactivity target (tok/s/user)")
        out.append(value)
    return out


@dataclass
class CompareInputs:
    """What a comparison reads: the runs compared, their measured figures (the view's curves included), the
    paired evals, and InferenceX's PR table when the baseline is an imported run."""

    root: Path  # the results directory
    run_id: str
    baseline: str | None
    measured: list[Measured]
    ingested: IngestReport
    cost_model: CostModel | None = None  # --metric cost: the table in use
    view: ViewData | None = None  # --as-of: the latest curves as of then
    published: PRComparison | None = None
    accuracy: list[AccuracyComparison] = field(default_factory=list)

    @property
    def searched(self) -> list[str]:
        """The runs whose capacity searches the comparison reports."""
        return [self.run_id] + ([self.baseline] if self.baseline else [])


def gather(req: CompareRequest) -> CompareInputs:
    """Read what ``req`` compares. The cost table comes first (a bad table stops before the store is touched);
    an unknown run is one line naming the runs there are."""
    from infx.analysis.dataset import gpus_per_node_resolver, load_measured
    from infx.analysis.evals import compare_arm_accuracy, load_evals
    from infx.report.data import latest_run
    from infx.report.inputs import cost_model_for, open_results
    from infx.results.layout import results_root

    cost_model = cost_model_for(req.tier) if req.metric == "cost" else None
    run, baseline = req.run, req.baseline
    with open_results(results_root(req.results), req.store) as opened:
        st = opened.store
        resolve = gpus_per_node_resolver(st, override=req.gpus_per_node, runners_path=req.runners)
        view = None
        if req.as_of is not None:
            from infx.analysis.view import load_view

            view = load_view(st, req.as_of, gpus_per_node=resolve)
            if run:
                baseline = view.view_id
            else:
                run = view.view_id
        run_id = run or latest_run(st)
        known = st.run_ids()
        in_view = {view.view_id} if view is not None else set()
        for r in (run_id, baseline):
            if r is not None and r not in known and r not in in_view:
                raise InfxError(Diagnostic(f"run {r!r} not found (runs: {', '.join(known) or 'none'})"))
        stored = [r for r in [run_id] + ([baseline] if baseline else []) if r not in in_view]
        measured = load_measured(st, stored, gpus_per_node=resolve) if stored else []
        if view is not None:
            measured += view.measured
        published = None
        if baseline and baseline not in in_view and st.origin(baseline) == "imported":  # its PR table too
            from infx.interop.prtable import pr_comparison

            published = pr_comparison(st, opened.root, run_id, baseline)
        accuracy = []
        if run_id not in in_view and (baseline is None or baseline not in in_view):
            accuracy = compare_arm_accuracy(st, load_evals(st, stored), run_id, req.arm if baseline else req.arm_a,
                                            None if baseline else req.arm_b, baseline)
    return CompareInputs(opened.root, run_id, baseline, measured, opened.ingested, cost_model, view, published,
                         accuracy)


def compare(req: CompareRequest, inputs: CompareInputs) -> ComparisonSet:
    """The comparison ``req`` asks for, on what :func:`gather` read. An arm selector that matches no arm is
    bad input (one line naming the option)."""
    from infx.analysis.compare import compare_arms, compare_runs

    measured, run_id, baseline = inputs.measured, inputs.run_id, inputs.baseline
    if inputs.cost_model is not None:  # read-time pricing (infx.analysis.cost): tokens per $ at equal interactivity
        from infx.analysis.cost import compare_cost

        cs = compare_cost(measured, inputs.cost_model, run_id, baseline=baseline, a=req.arm_a, b=req.arm_b,
                          arm=req.arm, tier=req.tier, basis=req.basis, x_metric=req.x, at=req.at,
                          ladder_points=req.ladder_points)
    elif req.agg_vs_disagg:
        from infx.analysis.aggdisagg import compare_agg_disagg

        cs = compare_agg_disagg(measured, run_id, x_metric=req.x, y_metric=req.metric, norm=req.per, at=req.at,
                                ladder_points=req.ladder_points, margin=req.margin)
    elif baseline:
        cs = compare_runs(measured, run_id, baseline, arm=req.arm, x_metric=req.x, y_metric=req.metric,
                          norm=req.per, at=req.at, ladder_points=req.ladder_points, margin=req.margin)
    else:
        cs = compare_arms(measured, run_id, req.arm_a, req.arm_b, x_metric=req.x, y_metric=req.metric,
                          norm=req.per, at=req.at, ladder_points=req.ladder_points, margin=req.margin)
        if (req.arm_a or req.arm_b) and not cs.comparisons:  # a selector that matches no arm is bad input
            raise InfxError(Diagnostic(cs.notes[0] if cs.notes else f"no arm matches in run {run_id}",
                                       path=("--arm-a" if req.arm_a else "--arm-b",)))
    cs.accuracy = inputs.accuracy
    return cs


def slo_cost_lines(req: CompareRequest, inputs: CompareInputs) -> list[str]:
    """``--metric cost``: the cost at each SLO tier the compared runs' capacity searches found."""
    from infx.analysis.capacity import capacity_results
    from infx.analysis.cost import cost_view

    if inputs.cost_model is None:
        return []
    searched = inputs.searched
    found = capacity_results(inputs.root, searched, inputs.measured)
    if not found:
        return []
    costs = cost_view([m for m in inputs.measured if m.run_id in searched], inputs.cost_model, req.tier,
                      capacity=found)
    lines = []
    for c, sc in zip(found, costs.slo, strict=True):
        v = sc.usd_per_mtok
        price = f"${v.value:,.4g}/Mtok" if v.value is not None else f"n/a ({v.reason})"
        lines.append(f"{c.run_id} cost at SLO tier {c.slo!r} (price tier {costs.tier}): {price} at {sc.point_id} "
                     f"(conc {c.conc}; max users at tier {c.max_conc})")
    return lines
