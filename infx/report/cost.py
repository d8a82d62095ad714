"""The report's cost section: the table named (version, source, date; illustrative prices flagged), cost
frontiers ($/Mtok against interactivity, step functions) per workload, and every point's figures with the
input/output bases labelled. Figures come from :mod:`infx.analysis.cost` at read time."""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go

from infx.analysis.cost import Basis, CostView, PointCost, TokenKind, Value, cost_frontier
from infx.analysis.dataset import X_AXES, Measured, series
from infx.report import charts


def _e(v: object) -> str:
    return html.escape("" if v is None else str(v))


def _cell(v: Value, fmt: str = "{:,.4g}", label: str = "", missing: str = "not priced") -> str:
    sub = f"<br><small>{_e(label)}</small>" if label else ""
    if v.value is None:
        return f'<td class="unpriced">{missing}: {_e(v.reason)}{sub}</td>'
    return f"<td class=num>{fmt.format(v.value)}{sub}</td>"


def cost_figure(arms: list[Any], run_id: str, costs: dict[tuple[str, str], PointCost], title: str,
                kind: TokenKind = "total", basis: Basis = "all") -> go.Figure:
    """$/Mtok against interactivity per arm, with each arm's cost frontier (less cost, more interactivity)."""
    fig = go.Figure()
    col = charts.colours(arms)
    for s in arms:
        base = s.run_id != run_id
        c = col[s.arm.label]
        name = s.label if not base else f"{s.label} (run {s.run_id})"
        ys = [costs[(m.run_id, m.point_id)].cost(kind, basis).value for m in s.points]
        fr = cost_frontier(s.points, costs, kind=kind, basis=basis, x_metric=s.x_metric)
        on = set(fr.members.tolist())
        fig.add_trace(go.Scatter(
            x=[m.x(s.x_metric) for m in s.points], y=ys, mode="markers+text", name=name, legendgroup=name,
            text=[f"c{m.conc}" for m in s.points], textposition="top center", textfont=dict(size=9, color=c),
            marker=dict(color=c, size=[11 if i in on else 7 for i in range(len(ys))],
                        symbol="circle-open" if base else "circle", line=dict(width=1.5, color=c)),
            customdata=[[m.point_id, m.conc] for m in s.points],
            hovertemplate="%{customdata[0]}<br>conc %{customdata[1]}<br>%{x:.2f} tok/s/user<br>$%{y:.4g}/Mtok"
                          "<extra></extra>"))
        px, py = fr.step_polyline()
        fig.add_trace(go.Scatter(x=px, y=py, mode="lines", name=f"cost frontier {name}", legendgroup=name,
                                 showlegend=False, hoverinfo="skip",
                                 line=dict(color=c, width=2, dash="dash" if base else "solid")))
    ax = X_AXES[arms[0].x_metric]
    fig.update_layout(title=title, xaxis_title=f"{ax.label} ({ax.unit})", yaxis_title="$ per million tokens",
                      **charts.LAYOUT)
    return fig


def _table_head(view: CostView, mkw: bool, energy: bool) -> str:
    return ("<tr><th>point</th><th>conc</th><th>SKU</th><th>GPUs</th><th>$/GPU-hr</th><th>$/Mtok total</th>"
            "<th>$/Mtok input<br>all GPUs</th><th>$/Mtok input<br>per role</th><th>$/Mtok output<br>all GPUs</th>"
            "<th>$/Mtok output<br>per role</th><th>tokens per $<br>(total)</th><th>tok/s per<br>provisioned MW</th>"
            + ("<th>tok/s per<br>measured kW</th>" if mkw else "")
            + ("<th>energy $/Mtok<br>(all-in kW x $/kWh)</th>" if energy else "") + "<th>cost<br>frontier</th></tr>")


def _row(pc: PointCost, m: Measured, view: CostView, mkw: bool = True, energy: bool = True) -> str:
    gpus = f"{pc.prefill_gpus}P + {pc.decode_gpus}D" if pc.disagg else str(pc.gpus)
    price = _cell(pc.usd_per_gpu_hour, "{:,.4g}", "")
    mkw_label = view.measured_power_what.get(pc.point_id, "")
    cells = [f"<td><code>{_e(pc.point_id)}</code></td>", f"<td class=num>{m.conc}</td>",
             f"<td>{_e(pc.sku or '?')}{' <b>(illustrative)</b>' if pc.illustrative else ''}</td>",
             f"<td class=num>{gpus}</td>", price, _cell(pc.cost("total"), "${:,.4g}", pc.labels["total"])]
    for kind in ("input", "output"):
        for basis in ("all", "role"):
            key = f"{kind}:{basis}"
            cells.append(_cell(pc.usd_per_mtok[key], "${:,.4g}", pc.labels[key]))
    cells += [_cell(pc.tokens_per_usd["total"], "{:,.0f}"), _cell(pc.tok_per_s_per_mw, "{:,.0f}")]
    if mkw:
        cells.append(_cell(pc.tok_per_s_per_measured_kw, "{:,.1f}", mkw_label, missing="not measured"))
    if energy:
        cells.append(_cell(pc.energy_usd_per_mtok, "${:,.4g}"))
    cells.append(f"<td>{'yes' if pc.point_id in view.on_frontier else ''}</td>")
    return f"<tr>{''.join(cells)}</tr>"


def _invariant(pc: PointCost, m: Measured) -> str:
    """For a disaggregated point: the role basis is an allocation (it adds up to the total); the all-GPU basis
    is not. Both written out with the point's own numbers."""
    total, out_tok, in_tok = m.total_tok_per_s, m.output_tok_per_s, m.total_tok_per_s - m.output_tok_per_s
    t, ir, orr = pc.cost("total").value, pc.cost("input", "role").value, pc.cost("output", "role").value
    ia, oa = pc.cost("input", "all").value, pc.cost("output", "all").value
    if None in (t, ir, orr, ia, oa):
        return ""
    assert t is not None and ir is not None and orr is not None and ia is not None and oa is not None
    return (f"<li><code>{_e(pc.point_id)}</code>: per role, ${ir:.4g} x {in_tok:,.0f} input + ${orr:.4g} x "
            f"{out_tok:,.0f} output tok/s = ${(ir * in_tok + orr * out_tok) / 1e6 * 3600:,.4g}/h = total "
            f"${t:.4g} x {total:,.0f} tok/s = ${t * total / 1e6 * 3600:,.4g}/h; on all GPUs, input ${ia:.4g} and "
            f"output ${oa:.4g} per Mtok each carry all {pc.gpus} GPUs "
            f"(sum ${(ia * in_tok + oa * out_tok) / 1e6 * 3600:,.4g}"
            "/h: not an allocation)</li>")


def cost_section(data: Any) -> str:
    view: CostView | None = getattr(data, "cost", None)
    if view is None:
        return ""
    costs = view.by_point()
    parts = ['<h2 id="cost">Cost per token</h2>',
             f'<p id="cost-table">Prices: <b>{_e(view.table)}</b>. Tier <b>{_e(view.tier)}</b> '
             f"({_e(view.tiers.get(view.tier, ''))}); other tiers: "
             f"{_e(', '.join(t for t in view.tiers if t != view.tier)) or 'none'} (<code>infx report --tier T</code>). "
             f"Files: {_e(', '.join(view.files))}. Applied when the results are read, never stored with them.</p>"]
    if view.illustrative:
        parts.append('<div class="note" id="cost-illustrative">Some prices in this table are ILLUSTRATIVE (marked '
                     "below), not a market survey: read the cost figures as an example of the method only.</div>")
    parts.append("<p>$/Mtok = $/GPU-hr / (tok/s per GPU &times; 3600 / 10<sup>6</sup>); tok/s per MW = tok/s per GPU "
                 "&times; 1000 / all-in kW per GPU (InferenceX-app's formulas). Total tokens are divided by all GPUs. "
                 "Input and output costs on two labelled bases: <b>per role</b> (prefill GPUs for input, decode GPUs "
                 "for output; for a disaggregated deployment they add up to the total cost) and <b>all GPUs</b> (every "
                 "GPU of the deployment charged to each token type, as InferenceX does for aggregated configs: the "
                 "basis to compare aggregated and disaggregated deployments on; the two do not add up). "
                 "Per-role figures make a disaggregated config read cheaper than on all GPUs. Measured kW is the "
                 "telemetry's average power over the throughput window (valid windows only).</p>")
    mine = [m for m in data.measured if m.run_id == data.run_id]
    by_workload = series(data.measured)
    for n, (workload, arms) in enumerate(by_workload.items()):
        if not any(s.run_id == data.run_id for s in arms):
            continue
        priced = [s for s in arms if any(costs[(m.run_id, m.point_id)].priced for m in s.points)]
        parts.append(f"<h3>{_e(workload.label)}</h3>")
        if priced:
            fig = cost_figure(priced, data.run_id, costs, f"Cost per million tokens vs interactivity (tier "
                                                          f"{view.tier}; total tokens, all GPUs; step frontiers)")
            parts.append('<div class="chart">' + fig.to_html(full_html=False, include_plotlyjs=False,
                                                             div_id=f"cost-{n}",
                                                             config={"displaylogo": False, "responsive": True})
                         + "</div>")
            if any(costs[(m.run_id, m.point_id)].disagg for s in priced for m in s.points):
                fig = cost_figure(priced, data.run_id, costs, "Output $/Mtok vs interactivity, per role (decode GPUs)",
                                  kind="output", basis="role")
                fig2 = cost_figure(priced, data.run_id, costs, "Output $/Mtok vs interactivity, all GPUs",
                                   kind="output", basis="all")
                for k, f in ((f"cost-{n}-output-role", fig), (f"cost-{n}-output-all", fig2)):
                    parts.append('<div class="chart">' + f.to_html(full_html=False, include_plotlyjs=False, div_id=k,
                                                                   config={"displaylogo": False, "responsive": True})
                                 + "</div>")
        else:
            reasons = sorted({costs[(m.run_id, m.point_id)].cost().reason for s in arms for m in s.points})
            parts.append(f"<p>not priced: {_e('; '.join(reasons))}</p>")
    pcs = [costs[(m.run_id, m.point_id)] for m in mine]
    mkw = any(pc.tok_per_s_per_measured_kw.value is not None for pc in pcs)
    energy = any(pc.energy_usd_per_mtok.value is not None for pc in pcs)
    rows = "".join(_row(costs[(m.run_id, m.point_id)], m, view, mkw, energy)
                   for m in sorted(mine, key=lambda m: (m.arm.label, m.conc)))
    parts.append(f'<table id="cost-points">{_table_head(view, mkw, energy)}{rows}</table>')
    if not mkw:
        parts.append("<p><small>tok/s per measured kW: not measured (no point of this run has valid power "
                     "telemetry).</small></p>")
    if not energy:
        parts.append("<p><small>energy $/Mtok: not priced (the table gives no $/kWh for these SKUs).</small></p>")
    inv = "".join(_invariant(costs[(m.run_id, m.point_id)], m) for m in mine if costs[(m.run_id, m.point_id)].disagg)
    if inv:
        parts.append(f'<h3>Disaggregated deployments: both bases</h3><ul id="cost-disagg">{inv}</ul>')
    if view.slo:
        slo_rows = "".join(f"<tr><td>{_e(s.slo)}</td><td><code>{_e(s.point_id)}</code></td>"
                           f"{_cell(s.usd_per_mtok, '${:,.4g}')}{_cell(s.tokens_per_usd, '{:,.0f}')}</tr>"
                           for s in view.slo)
        parts.append('<h3>Cost at SLO tiers</h3><table id="cost-slo"><tr><th>SLO tier</th><th>point at capacity</th>'
                     f"<th>$/Mtok total</th><th>tokens per $</th></tr>{slo_rows}</table>")
    elif view.slo_note:
        parts.append(f"<p><small>{_e(view.slo_note)}</small></p>")
    return "".join(parts)
