"""The report's plotly figures. Frontiers are drawn as staircases between measured points
(exactly what the comparisons read), never as smoothed curves."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from infx.analysis.dataset import NORM_UNITS, X_AXES, ArmSeries, y_axis
from infx.report.samples import LatencySamples

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]
BOTTOM_LEGEND = dict(legend=dict(orientation="h", yanchor="top", y=-0.2, x=0), margin=dict(l=70, r=20, t=90, b=120),
                     height=520)
#: The look of every chart: the page applies it once (the figures carry the empty "none" template, so building
#: hundreds of them does not copy a template into each, and the report holds it once).
SHARED_TEMPLATE = "plotly_white"
LAYOUT = dict(template="none", height=480, margin=dict(l=70, r=20, t=90, b=60),
              title_y=0.97, legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))


def new_figure() -> go.Figure:
    return go.Figure(layout={"template": "none"})


def colours(series: Sequence[ArmSeries]) -> dict[str, str]:
    """One colour per arm label (the same arm in the baseline gets the same colour, dashed)."""
    out: dict[str, str] = {}
    for s in series:
        key = s.arm.label
        if key not in out:
            out[key] = PALETTE[len(out) % len(PALETTE)]
    return out


def _name(s: ArmSeries, run_id: str) -> str:
    return s.label if s.run_id == run_id else f"{s.label} (run {s.run_id})"


def frontier_figure(series: Sequence[ArmSeries], run_id: str, title: str,
                    below: set[str] | frozenset[str] = frozenset()) -> go.Figure:
    """Throughput (series' normalisation) vs interactivity: points per arm and the arm's step frontier.
    ``below``: point ids whose accuracy eval fell below its threshold (drawn as red crosses)."""
    fig = new_figure()
    flagged = [(s, m) for s in series if s.run_id == run_id for m in s.points if m.point_id in below]
    col = colours(series)
    for s in series:
        base = s.run_id != run_id
        c = col[s.arm.label]
        xs, ys = s.xs.tolist(), s.ys.tolist()
        fr = s.frontier()
        on = set(fr.members.tolist())
        bars = _error_bars(s, xs, ys)
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="markers+text", name=_name(s, run_id), legendgroup=_name(s, run_id), **bars,
            text=[f"c{m.conc}" for m in s.points], textposition="top center", textfont=dict(size=9, color=c),
            marker=dict(color=c, size=[11 if i in on else 7 for i in range(len(xs))],
                        symbol="circle-open" if base else "circle", line=dict(width=1.5, color=c)),
            customdata=[[m.point_id, m.conc] for m in s.points],
            hovertemplate="%{customdata[0]}<br>conc %{customdata[1]}<br>%{x:.2f} tok/s/user<br>%{y:.1f}"
                          "<extra></extra>"))
        px, py = fr.step_polyline()
        fig.add_trace(go.Scatter(
            x=px, y=py, mode="lines", name=f"frontier {_name(s, run_id)}", legendgroup=_name(s, run_id),
            showlegend=False, line=dict(color=c, width=2, dash="dash" if base else "solid", shape="linear"),
            hoverinfo="skip"))
    if flagged:
        fig.add_trace(go.Scatter(
            x=[m.x(s.x_metric) for s, m in flagged], y=[m.throughput(s.y_metric, s.norm) for s, m in flagged],
            mode="markers", name="below accuracy threshold",
            marker=dict(symbol="x-thin-open", size=18, color="#d62728", line=dict(width=3, color="#d62728")),
            customdata=[[m.point_id] for _, m in flagged],
            hovertemplate="%{customdata[0]}<br>below accuracy threshold<extra></extra>"))
    s0 = series[0]
    fig.update_layout(title=title, xaxis_title=f"{X_AXES[s0.x_metric].label} ({X_AXES[s0.x_metric].unit})",
                      yaxis_title=y_axis(s0.y_metric, s0.norm).label, **LAYOUT)
    return fig


def _error_bars(s: ArmSeries, xs: Sequence[float], ys: Sequence[float]) -> dict[str, object]:
    """95 % intervals of each point as plotly error bars on y (throughput, scaled to the
    series' normalisation) and x (interactivity); nothing for points measured without them."""
    ykey = {"total": "total_tok_per_s", "output": "output_tok_per_s", "energy": "output_tok_per_j"}.get(s.y_metric)
    xkey = "interactivity_median" if s.x_metric == "interactivity" else "interactivity_p90"
    out: dict[str, object] = {}
    for axis, key, values in (("y", ykey, ys), ("x", xkey, xs)):
        bar = _bar(s, key, values)
        if bar:
            out[f"error_{axis}"] = bar
    return out


def _bar(s: ArmSeries, key: str | None, values: Sequence[float | None]) -> dict[str, object] | None:
    if key is None:
        return None
    plus, minus, any_ci = [], [], False
    for m, v in zip(s.points, values, strict=True):
        e = m.estimate(key)
        if e is None or not e.mean or v is None or v != v:
            plus.append(0.0)
            minus.append(0.0)
            continue
        any_ci = True  # every figure drawn here is a rate: its interval ends at zero (a two-trial one can reach below)
        plus.append(v * (max(e.hi, 0.0) / e.mean - 1))
        minus.append(v * (1 - max(e.lo, 0.0) / e.mean))
    return dict(type="data", symmetric=False, array=plus, arrayminus=minus, thickness=1, width=3) if any_ci else None


def concurrency_figure(series: Sequence[ArmSeries], run_id: str, title: str) -> go.Figure:
    """Throughput per GPU and interactivity against concurrency."""
    fig = make_subplots(rows=1, cols=2, figure=new_figure(),
                        subplot_titles=(f"{series[0].y_metric.capitalize()} tok/s {NORM_UNITS['gpu']}",
                                        "Interactivity (tok/s/user)"))
    col = colours(series)
    for s in series:
        dash = "dash" if s.run_id != run_id else "solid"
        c = col[s.arm.label]
        conc = [m.conc for m in s.points]
        tput = [m.throughput(s.y_metric, "gpu") for m in s.points]
        inter = [m.interactivity_median for m in s.points]
        yb = _bar(s, {"total": "total_tok_per_s", "output": "output_tok_per_s",
                      "energy": "output_tok_per_j"}.get(s.y_metric), tput)
        ib = _bar(s, "interactivity_median", inter)
        fig.add_trace(go.Scatter(x=conc, y=tput, mode="lines+markers",
                                 name=_name(s, run_id), legendgroup=_name(s, run_id),
                                 line=dict(color=c, dash=dash), **({"error_y": yb} if yb else {})), row=1, col=1)
        fig.add_trace(go.Scatter(x=conc, y=inter, mode="lines+markers",
                                 name=_name(s, run_id), legendgroup=_name(s, run_id), showlegend=False,
                                 line=dict(color=c, dash=dash), **({"error_y": ib} if ib else {})), row=1, col=2)
    fig.update_xaxes(type="log", dtick=0.30103, title_text="concurrency")
    fig.update_layout(title=title, **LAYOUT)
    fig.update_layout(**BOTTOM_LEGEND)
    return fig


def latency_figure(series: Sequence[ArmSeries], run_id: str, title: str) -> go.Figure:
    """TTFT and ITL (median solid, P90 dotted) against concurrency."""
    fig = make_subplots(rows=1, cols=2, figure=new_figure(), subplot_titles=("TTFT (ms)", "ITL (ms)"))
    col = colours(series)
    for s in series:
        c = col[s.arm.label]
        base = s.run_id != run_id
        conc = [m.conc for m in s.points]
        for i, (med, p90) in enumerate((("ttft_median", "ttft_p90"), ("itl_median", "itl_p90")), start=1):
            fig.add_trace(go.Scatter(x=conc, y=[getattr(m, med) for m in s.points], mode="lines+markers",
                                     name=f"{_name(s, run_id)} median", legendgroup=_name(s, run_id),
                                     showlegend=i == 1, line=dict(color=c, dash="dash" if base else "solid")),
                          row=1, col=i)
            fig.add_trace(go.Scatter(x=conc, y=[getattr(m, p90) for m in s.points], mode="lines",
                                     name=f"{_name(s, run_id)} P90", legendgroup=_name(s, run_id),
                                     showlegend=i == 1, line=dict(color=c, dash="dot", width=1)), row=1, col=i)
    fig.update_xaxes(type="log", dtick=0.30103, title_text="concurrency")
    fig.update_yaxes(type="log", dtick="D2")
    fig.update_layout(title=title, **LAYOUT)
    fig.update_layout(**BOTTOM_LEGEND)
    return fig


def samples_figure(series: Sequence[ArmSeries], run_id: str, title: str,
                   samples: dict[str, LatencySamples]) -> go.Figure:
    """Latency distributions per point from the raw per-request records (box plots of TTFT,
    ITL and end-to-end latency; each distribution kept as a quantile grid)."""
    fig = make_subplots(rows=1, cols=3, figure=new_figure(),
                        subplot_titles=("TTFT (ms)", "ITL (ms)", "End-to-end latency (ms)"))
    col = colours(series)
    for s in series:
        if s.run_id != run_id:
            continue
        c = col[s.arm.label]
        for m in s.points:
            got = samples.get(m.point_id)
            if got is None:
                continue
            name = f"{s.label} c{m.conc}"
            for j, values in enumerate((got.ttft_ms, got.itl_ms, got.e2el_ms), start=1):
                if values.size:
                    fig.add_trace(go.Box(y=values.tolist(), name=name, marker_color=c, boxpoints=False,
                                         legendgroup=s.label, showlegend=False), row=1, col=j)
    fig.update_yaxes(type="log", dtick="D2")
    fig.update_layout(title=title, **LAYOUT)
    return fig


def distribution_figure(series: Sequence[ArmSeries], run_id: str, title: str) -> go.Figure:
    """Latency distributions per point: TTFT and end-to-end latency at P50 / P90 / P99."""
    fig = make_subplots(rows=1, cols=2, figure=new_figure(),
                        subplot_titles=("TTFT percentiles (ms)", "End-to-end latency percentiles (ms)"))
    labels: list[str] = []
    rows: dict[str, list[float | None]] = {k: [] for k in ("ttft50", "ttft90", "ttft99", "e2e50", "e2e90", "e2e99")}
    for s in series:
        if s.run_id != run_id:
            continue
        for m in s.points:
            labels.append(f"{s.label} c{m.conc}")
            rows["ttft50"].append(m.ttft_median)
            rows["ttft90"].append(m.ttft_p90)
            rows["ttft99"].append(m.ttft_p99)
            rows["e2e50"].append(m.e2el_median)
            rows["e2e90"].append(m.e2el_p90)
            rows["e2e99"].append(None)
    for j, (prefix, pcts) in enumerate((("ttft", ("50", "90", "99")), ("e2e", ("50", "90"))), start=1):
        for k, p in enumerate(pcts):
            fig.add_trace(go.Bar(x=labels, y=rows[prefix + p], name=f"P{p}", legendgroup=f"P{p}",
                                 showlegend=j == 1, marker_color=["#9ecae1", "#4292c6", "#08519c"][k]), row=1, col=j)
    fig.update_yaxes(type="log", dtick="D2")
    fig.update_layout(title=title, barmode="group", **LAYOUT)
    fig.update_layout(**BOTTOM_LEGEND)
    return fig
