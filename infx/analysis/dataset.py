"""Measured points as the analysis sees them: typed rows read from the store, grouped into
*workloads* (what is being served: model, precision, hardware, framework, scenario, sequence
lengths) and *arms* (how: topology, speculative decoding, KV offloading) whose frontiers compete.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from infx.analysis.frontier import Axis, Direction, StepFrontier
from infx.analysis.pernode import Normalisation, node_factor
from infx.analysis.perrole import is_disagg
from infx.analysis.perrole import per_gpu as role_per_gpu
from infx.analysis.perrole import per_node as role_per_node
from infx.diagnostics import Diagnostic, InfxError
from infx.metrics.cipack import CI_KEYS, unpack
from infx.results.store.reads import Arm, Figures, Workload

if TYPE_CHECKING:
    from infx.metrics.uncertainty import Estimate
    from infx.results.store import Store
    from infx.results.store.reads import AcceptanceRow, MeasuredRow

XMetric = Literal["interactivity", "interactivity_p90"]
YMetric = Literal["total", "output", "energy"]  # energy: output tokens per joule (whole deployment)

X_AXES: dict[str, Axis] = {
    "interactivity": Axis("interactivity_median", "Interactivity (median)", "tok/s/user", Direction.MAX),
    "interactivity_p90": Axis("interactivity_p90", "Interactivity (P90 TPOT)", "tok/s/user", Direction.MAX),
}
Y_COLUMNS: dict[str, str] = {"total": "total_tok_per_s", "output": "output_tok_per_s", "energy": "output_tok_per_j"}
NORM_UNITS: dict[str, str] = {"gpu": "per GPU", "node": "per node", "server": "per server"}


_X_METRICS: dict[str, XMetric] = {"interactivity": "interactivity", "interactivity_p90": "interactivity_p90"}
_Y_METRICS: dict[str, YMetric] = {"total": "total", "output": "output", "energy": "energy"}
_NORMS: dict[str, Normalisation] = {"gpu": "gpu", "node": "node", "server": "server"}


def x_metric_of(value: str) -> XMetric:
    """``value`` as an x metric (the commands check their options first: a bad one here is a bug)."""
    if value not in _X_METRICS:
        raise ValueError(f"x metric: expected one of {', '.join(_X_METRICS)}, got {value!r}")
    return _X_METRICS[value]


def y_metric_of(value: str) -> YMetric:
    if value not in _Y_METRICS:
        raise ValueError(f"y metric: expected one of {', '.join(_Y_METRICS)}, got {value!r}")
    return _Y_METRICS[value]


def norm_of(value: str) -> Normalisation:
    if value not in _NORMS:
        raise ValueError(f"normalisation: expected one of {', '.join(_NORMS)}, got {value!r}")
    return _NORMS[value]


def y_axis(metric: YMetric, norm: Normalisation) -> Axis:
    if metric == "energy":  # whole-deployment energy: no per-GPU/per-node normalisation applies
        return Axis("output_tok_per_j", "Output tokens per joule", "tok/J", Direction.MAX)
    return Axis(f"{Y_COLUMNS[metric]}_{norm}", f"{metric.capitalize()} tok/s {NORM_UNITS[norm]}",
                f"tok/s/{norm}", Direction.MAX)


#: What is served (model, precision, hardware, framework, scenario, ISL/OSL) and how (topology, speculative
#: decoding, KV offloading): the store's identity types, which the analysis groups by.
WorkloadKey = Workload
ArmKey = Arm


@dataclass(frozen=True, slots=True)
class Measured:
    """One measured (done) point with the metrics the analysis and the report use."""

    run_id: str
    point_id: str
    workload: WorkloadKey
    arm: ArmKey
    runner: str
    image: str
    conc: int
    gpus_per_server: int
    gpus_per_node: int | None
    launch_fingerprint: str | None
    # the figures as stored; interactivity is None where the streaming check warned (see ``buffered_stream``)
    figures: Figures
    # The load generator's ``streaming`` check warned: responses arrived in one burst (buffered by the server,
    # or a starved client), so TPOT and interactivity are not real; they are left out (None) of frontiers
    buffered_stream: bool = False
    # disaggregated deployments: GPUs per role; per-GPU figures are normalised per role
    prefill_gpus: int | None = None
    decode_gpus: int | None = None

    @property
    def disagg(self) -> bool:
        return is_disagg(self.prefill_gpus, self.decode_gpus)
    # telemetry: InferenceX's joules_per_output_token (GPU energy); None unless the point's power was valid
    joules_per_output_token: float | None = None
    # trials behind the figures and result.json ``stats`` (mean + 95 % interval per figure), as JSON
    trials: int = 1
    # the packed intervals (infx.metrics.cipack): method, df, bounds of output/total tok/s and
    # interactivity median/P90
    ci: bytes | None = None
    # in a view of the latest curves (infx.analysis.view): the run that measured the point, when ``run_id`` names
    # the snapshot it is drawn in instead
    source_run: str | None = None
    # speculative decoding: "measured" or "synthetic" (a forced acceptance length, ``synthetic_al``); None: no spec
    # decoding recorded. ``acceptance_length``: the measured mean (counter deltas), None when not reported
    acceptance: str | None = None
    synthetic_al: float | None = None
    acceptance_length: float | None = None

    @property
    def measured_in(self) -> str:
        """The run that measured this point."""
        return self.source_run or self.run_id

    # the figures, read through (``m.ttft_median``...)
    @property
    def interactivity_median(self) -> float | None:
        return self.figures.interactivity_median

    @property
    def interactivity_p90(self) -> float | None:
        return self.figures.interactivity_p90

    @property
    def output_tok_per_s(self) -> float:
        return self.figures.output_tok_per_s

    @property
    def total_tok_per_s(self) -> float:
        return self.figures.total_tok_per_s

    @property
    def ttft_median(self) -> float | None:
        return self.figures.ttft_median

    @property
    def ttft_p90(self) -> float | None:
        return self.figures.ttft_p90

    @property
    def ttft_p99(self) -> float | None:
        return self.figures.ttft_p99

    @property
    def tpot_median(self) -> float | None:
        return self.figures.tpot_median

    @property
    def itl_median(self) -> float | None:
        return self.figures.itl_median

    @property
    def itl_p90(self) -> float | None:
        return self.figures.itl_p90

    @property
    def itl_p99(self) -> float | None:
        return self.figures.itl_p99

    @property
    def e2el_median(self) -> float | None:
        return self.figures.e2el_median

    @property
    def e2el_p90(self) -> float | None:
        return self.figures.e2el_p90

    @property
    def success_rate(self) -> float | None:
        return self.figures.success_rate

    @property
    def kv_cache_tokens(self) -> int | None:
        return self.figures.kv_cache_tokens

    def estimate(self, key: str) -> Estimate | None:
        """The interval of one headline figure (``output_tok_per_s``, ``total_tok_per_s``,
        ``interactivity_median``, ``interactivity_p90``, ``joules_per_output_token`` and its inverse
        ``output_tok_per_j``), if the result carried one (results
        from before trials were recorded did not)."""
        if key == "output_tok_per_j":  # energy's y axis: the interval of J/token, inverted
            e = self.estimate("joules_per_output_token")
            if e is None or not e.mean or e.lo <= 0:
                return None
            se = None if e.se is None else e.se / e.mean / e.mean  # delta method: se(1/x) = se(x) / x^2
            return type(e)(mean=1.0 / e.mean, lo=1.0 / e.hi, hi=1.0 / e.lo, n=e.n, method=e.method, se=se,
                           df=e.df)
        if self.ci is None or key not in CI_KEYS:
            return None
        method, df, bounds = unpack(self.ci)
        b = bounds[CI_KEYS.index(key)]
        if b is None:
            return None
        rlo, rhi = b
        mean = {"output_tok_per_s": self.output_tok_per_s, "total_tok_per_s": self.total_tok_per_s,
                "interactivity_median": self.interactivity_median, "interactivity_p90": self.interactivity_p90,
                "joules_per_output_token": self.joules_per_output_token}[key]
        if mean is None:
            return None
        lo, hi = mean * rlo, mean * rhi
        from infx.metrics.uncertainty import CONFIDENCE, Estimate, t_critical

        kind: Literal["trials", "within-run"] = "trials" if method == "trials" else "within-run"

        # the standard error behind the interval: half-width / t (trials) or / z (within-run bootstrap)
        se = (hi - lo) / 2 / t_critical(df if df else math.inf, CONFIDENCE)
        return Estimate(mean=mean, lo=lo, hi=hi, n=self.trials, method=kind, se=se, df=df)

    @property
    def output_tok_per_j(self) -> float | None:
        j = self.joules_per_output_token
        return 1.0 / j if j else None

    def throughput(self, metric: YMetric, norm: Normalisation) -> float | None:
        if metric == "energy":
            return self.output_tok_per_j
        per_server = self.total_tok_per_s if metric == "total" else self.output_tok_per_s
        if norm == "server":
            return per_server
        if self.disagg:
            assert self.prefill_gpus is not None and self.decode_gpus is not None
            if norm == "gpu":
                return role_per_gpu(per_server, metric, self.prefill_gpus, self.decode_gpus)
            if self.gpus_per_node is None:
                return None
            return role_per_node(per_server, self.prefill_gpus, self.decode_gpus, self.gpus_per_node)
        if norm == "gpu":
            return per_server / self.gpus_per_server
        if self.gpus_per_node is None:
            return None
        return per_server * node_factor(self.gpus_per_node, self.gpus_per_server)

    def x(self, metric: XMetric) -> float | None:
        return self.interactivity_median if metric == "interactivity" else self.interactivity_p90


GpusPerNode = Callable[[str, str], int | None]  # (run_id, runner) -> GPUs per node


def gpus_per_node_resolver(store: Store, *, override: int | None = None,
                           runners_path: str | Path | None = None) -> GpusPerNode:
    """GPUs per node for a (run, runner): ``override`` > the run manifest's snapshot >
    ``runners.yaml`` (``infx.catalog.load_runners``) > unknown (None: no per-node numbers)."""
    from_runners: dict[str, int] = {}
    if runners_path is not None:
        from infx.catalog import load_runners

        rc = load_runners(runners_path)
        from_runners = {label: facts.gpus_per_node for label, facts in rc.hardware.items()
                        if getattr(facts, "gpus_per_node", None)}
    manifests: dict[str, dict[str, int]] = {}
    for run_id in store.run_ids():
        m = store.manifest(run_id)
        manifests[run_id] = dict(m.gpus_per_node) if m else {}

    def resolve(run_id: str, runner: str) -> int | None:
        if override is not None:
            return override
        value = manifests.get(run_id, {}).get(runner)
        if value is None:
            value = from_runners.get(runner)
        return value

    return resolve


def load_measured(store: Store, run_ids: Sequence[str] | None = None, *,
                  gpus_per_node: GpusPerNode | None = None) -> list[Measured]:
    """Every measured point of the given runs (all runs when None)."""
    resolve = gpus_per_node or gpus_per_node_resolver(store)
    return with_acceptance(measured_from_rows(store.measured(run_ids), resolve), store.acceptance(run_ids))


def with_acceptance(measured: list[Measured], rows: Iterable[AcceptanceRow]) -> list[Measured]:
    """The points with their speculative-decoding acceptance (the first role's figure; the label is the point's)."""
    by: dict[tuple[str, str], AcceptanceRow] = {}
    for row in rows:
        by.setdefault((row.run_id, row.point_id), row)
    if not by:
        return measured
    out = []
    for m in measured:
        a = by.get((m.measured_in, m.point_id))
        out.append(m if a is None else dataclasses.replace(
            m, acceptance=a.acceptance, synthetic_al=a.synthetic_al,
            acceptance_length=a.acceptance_length if a.state in ("measured", "gauge") else None))
    return out


def measured_from_rows(rows: Iterable[MeasuredRow], resolve: GpusPerNode,
                       run_of: Callable[[MeasuredRow], str] | None = None) -> list[Measured]:
    """:class:`Measured` points from the store's rows; ``run_of`` names the run a point is grouped under (a
    view groups each curve under its snapshot)."""
    nodes: dict[tuple[str, str], int | None] = {}
    out: list[Measured] = []
    for row in rows:
        key = (row.run_id, row.runner)
        if key not in nodes:
            nodes[key] = resolve(row.run_id, row.runner)
        buffered = streaming_warned(row.checks_json)
        figures = row.figures._replace(interactivity_median=None, interactivity_p90=None) if buffered else row.figures
        pg, dg = (row.prefill_gpus, row.decode_gpus) if row.disagg else (None, None)
        run_id = run_of(row) if run_of is not None else row.run_id
        out.append(Measured(
            run_id, row.point_id, row.workload, row.arm, row.runner, row.image, row.conc, row.gpus_per_server,
            nodes[key], row.launch_fingerprint, figures, buffered_stream=buffered, prefill_gpus=pg, decode_gpus=dg,
            joules_per_output_token=row.joules_per_output_token, trials=row.trials or 1, ci=row.ci,
            source_run=None if run_id == row.run_id else row.run_id))
    return out


def streaming_warned(checks_json: str | None) -> bool:
    """Whether a result's ``streaming`` integrity check did not pass (multi-token responses that
    arrived in a single chunk): its per-token timings measure the buffering, not the engine."""
    if not checks_json:
        return False
    try:
        checks = json.loads(checks_json)
    except ValueError:
        return False
    return any(isinstance(c, dict) and c.get("name") == "streaming" and c.get("status") in ("warn", "fail")
               for c in checks)


def frontier_membership(measured: Sequence[Measured], *, x_metric: XMetric = "interactivity",
                        y_metric: YMetric = "total", norm: Normalisation = "gpu") -> np.ndarray:
    """Frontier membership of every point within its (run, workload, arm), all at once."""
    from infx.analysis.frontier import grouped_pareto_mask

    n = len(measured)
    ids: dict[tuple[str, WorkloadKey, ArmKey], int] = {}
    groups = np.fromiter((ids.setdefault((m.run_id, m.workload, m.arm), len(ids)) for m in measured),
                         dtype=np.int64, count=n)
    xs = np.fromiter((_nan(m.x(x_metric)) for m in measured), dtype=float, count=n)
    if y_metric == "energy":
        ys = np.fromiter((_nan(m.output_tok_per_j) for m in measured), dtype=float, count=n)
        return grouped_pareto_mask(groups, xs, ys, X_AXES[x_metric].direction, Direction.MAX)
    per_server = np.fromiter((m.total_tok_per_s if y_metric == "total" else m.output_tok_per_s for m in measured),
                             dtype=float, count=n)
    gps = np.fromiter((m.gpus_per_server for m in measured), dtype=float, count=n)
    if norm == "server":
        ys = per_server
    elif norm == "gpu":
        ys = per_server / gps
    else:
        gpn = np.fromiter((math.nan if m.gpus_per_node is None else m.gpus_per_node for m in measured),
                          dtype=float, count=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            spn = np.floor(gpn / gps)
            factor = np.where(spn >= 1, spn, 1.0 / np.maximum(1.0, np.ceil(gps / gpn)))
        ys = per_server * factor
    for i, m in enumerate(measured):  # disaggregated points: per-role normalisation
        if m.disagg and norm != "server":
            ys[i] = _nan(m.throughput(y_metric, norm))
    return grouped_pareto_mask(groups, xs, ys, X_AXES[x_metric].direction, Direction.MAX)


@dataclass
class ArmSeries:
    """The measured points of one arm in one run, with its frontier in one normalisation."""

    run_id: str
    workload: WorkloadKey
    arm: ArmKey
    points: list[Measured]
    x_metric: XMetric
    y_metric: YMetric
    norm: Normalisation
    label: str = ""

    def __post_init__(self) -> None:
        self.points.sort(key=lambda m: (m.conc, m.point_id))
        if not self.label:
            self.label = self.arm.label

    @property
    def xs(self) -> np.ndarray:
        return np.array([_nan(m.x(self.x_metric)) for m in self.points], dtype=float)

    @property
    def ys(self) -> np.ndarray:
        return np.array([_nan(m.throughput(self.y_metric, self.norm)) for m in self.points], dtype=float)

    def errors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per point: relative standard error of y (NaN: no interval), its degrees of freedom
        (inf: within-run bootstrap, normal) and the trials behind it."""
        key = Y_COLUMNS.get(self.y_metric)  # energy: output_tok_per_j, from the interval of J/token
        n = len(self.points)
        rel, df, tr = np.full(n, np.nan), np.full(n, np.inf), np.ones(n)
        for i, m in enumerate(self.points):
            e = m.estimate(key) if key else None
            tr[i] = m.trials
            if e is None or e.se is None or not e.mean:
                continue
            rel[i] = e.se / abs(e.mean)
            df[i] = e.df if e.df else math.inf
            tr[i] = e.n
        return rel, df, tr

    def x_errors(self) -> np.ndarray:
        """Relative standard error of each point's x (interactivity); 0 where none is known."""
        key = "interactivity_median" if self.x_metric == "interactivity" else "interactivity_p90"
        out = np.zeros(len(self.points))
        for i, m in enumerate(self.points):
            e = m.estimate(key)
            if e is not None and e.se is not None and e.mean:
                out[i] = e.se / abs(e.mean)
        return out

    def frontier(self) -> StepFrontier:
        rel, df, tr = self.errors()
        return StepFrontier.build(self.xs, self.ys, X_AXES[self.x_metric].direction, Direction.MAX,
                                  rel_se=rel, df=df, trials=tr, x_rel_se=self.x_errors())

    def by_conc(self) -> dict[int, tuple[float, float, float, float]]:
        """conc -> (y, relative se, df, trials) of the arm's points (first point of each conc)."""
        rel, df, tr = self.errors()
        out: dict[int, tuple[float, float, float, float]] = {}
        for i, (m, y) in enumerate(zip(self.points, self.ys.tolist(), strict=True)):
            if not math.isnan(y):
                out.setdefault(m.conc, (y, float(rel[i]), float(df[i]), float(tr[i])))
        return out


def _nan(v: float | None) -> float:
    return math.nan if v is None else float(v)


def group(measured: Iterable[Measured]) -> dict[WorkloadKey, dict[tuple[str, ArmKey], list[Measured]]]:
    """workload -> (run_id, arm) -> points, in first-seen order."""
    out: dict[WorkloadKey, dict[tuple[str, ArmKey], list[Measured]]] = defaultdict(lambda: defaultdict(list))
    for m in measured:
        out[m.workload][(m.run_id, m.arm)].append(m)
    return {w: dict(arms) for w, arms in out.items()}


def series(measured: Iterable[Measured], *, x_metric: XMetric = "interactivity", y_metric: YMetric = "total",
           norm: Normalisation = "gpu") -> dict[WorkloadKey, list[ArmSeries]]:
    """Arm series per workload; labels name only what varies between the workload's arms."""
    out: dict[WorkloadKey, list[ArmSeries]] = {}
    for w, arms in group(measured).items():
        keys = [arm for _, arm in arms]
        spec = len({k.spec_decoding for k in keys}) > 1
        kv = len({k.kv_offloading for k in keys}) > 1
        out[w] = [ArmSeries(run_id, w, arm, pts, x_metric, y_metric, norm, label=arm.label_with(spec=spec, kv=kv))
                  for (run_id, arm), pts in arms.items()]
    return out


def match_arm(selector: str, arm: ArmKey) -> bool:
    """``tp=2`` matches ``TP=2``; every token of the selector must be a token of the arm label."""
    want = {t for t in selector.lower().replace(",", " ").split() if t}
    have = set(arm.label.lower().split()) | set(arm.topology.lower().split())
    return bool(want) and want <= have


def require_nodes(items: Iterable[Measured]) -> None:
    missing = sorted({m.runner for m in items if m.gpus_per_node is None})
    if missing:
        raise InfxError(Diagnostic(
            f"GPUs per node unknown for runner(s) {', '.join(missing)}: pass --gpus-per-node N or "
            "--runners runners.yaml (or record gpus_per_node in the run manifest)"))
