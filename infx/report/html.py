"""One self-contained HTML report for a run: plotly's JS inlined (opens offline), no external
script, style sheet or font. The dashboard serves the same page with plotly loaded from itself."""

from __future__ import annotations

import datetime as dt
import html
import itertools
from collections.abc import Sequence
from typing import Literal

import plotly.graph_objects as go

from infx.analysis.compare import Comparison, ComparisonSet, compare_frontiers
from infx.analysis.dataset import NORM_UNITS, ArmSeries, Measured, series
from infx.analysis.mainview import MainView, group_frontier
from infx.report import charts
from infx.report.cost import cost_section
from infx.report.data import ReportData
from infx.results.layout import RunManifest

MAIN_CHART_ID = "chart-main"

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
main{max-width:1280px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.5em;margin:.4em 0} h2{border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:1.8em}
h3{margin-top:1.4em}
.banner{background:#b00020;color:#fff;padding:10px 24px;font-weight:600}
.banner a{color:#fff}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:6px 12px;margin:8px 0}
.chart{background:#fff;border:1px solid #e3e3e3;border-radius:6px;margin:12px 0;padding:4px}
table{border-collapse:collapse;background:#fff;font-size:13px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0} td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.failed td{background:#fdecea} tr.skipped td{background:#f4f4f4;color:#666}
pre{background:#1e1e1e;color:#ddd;padding:8px;overflow-x:auto;font-size:12px;max-height:240px}
ul.verdict li{margin:3px 0} nav a{margin-right:12px}
"""


def _e(v: object) -> str:
    return html.escape("" if v is None else str(v))


def _num(v: float | None, digits: int = 1) -> str:
    if v is None:
        return "&ndash;"
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:,.{digits}f}"


def _time(ts: float | None) -> str:
    if ts is None:
        return "&ndash;"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def banner(manifest: RunManifest) -> str:
    if manifest.official:
        return ""
    pr = manifest.pr
    bits = ["UNOFFICIAL RUN"]
    if pr is not None:
        if pr.number is not None:
            bits.append(f"pull request #{pr.number}")
        if pr.branch:
            bits.append(f"branch {_e(pr.branch)}")
        if pr.sha:
            bits.append(f"commit {_e(pr.sha[:12])}")
    text = " &middot; ".join(bits)
    if pr is not None and pr.url:
        text += f' &middot; <a href="{_e(pr.url)}">{_e(pr.url)}</a>'
    if pr is not None and pr.title:
        text += f" &middot; {_e(pr.title)}"
    return f'<div class="banner" id="unofficial-banner">{text} &mdash; not an official result</div>'


def manifest_table(m: RunManifest) -> str:
    rows = [
        ("run id", _e(m.run_id)), ("official", "yes" if m.official else "no (pull request / branch run)"),
        ("infx version", _e(m.infx_version)), ("git commit", _e(m.git_commit)),
        ("catalog hash", _e(m.catalog_hash)), ("recipe hash", _e(m.recipe_hash)),
        ("config keys", _e(", ".join(m.config_keys))),
        ("images", "<br>".join(f"{_e(i.image)}" + (f" <small>({_e(i.digest)})</small>" if i.digest else "")
                               for i in m.images)),
        ("engine version", _e(m.engine_version)),
        ("host", _e(", ".join(f"{k}={v}" for k, v in m.host.model_dump(exclude_none=True).items()
                              if v not in ([], "")))),
        ("GPUs per node", _e(", ".join(f"{k}: {v}" for k, v in m.gpus_per_node.items()))),
        ("started", _time(m.started_at)), ("ended", _time(m.ended_at)),
        ("baseline run", _e(m.baseline_run)), ("description", _e(m.description)),
    ]
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table id="manifest-table">{body}</table>'


def comparison_html(cs: ComparisonSet, anchor: str) -> str:
    parts = [f'<section id="{anchor}"><h3>{_e(cs.title)}</h3>']
    for note in cs.notes:
        parts.append(f'<div class="note">{_e(note)}</div>')
    for c in cs.comparisons:
        parts.append(_one_comparison(c))
    if not cs.comparisons and not cs.notes:
        parts.append("<p>Nothing to compare.</p>")
    parts.append("</section>")
    return "".join(parts)


def _one_comparison(c: Comparison) -> str:
    head = f"<h4>{_e(c.workload)}: {_e(c.a_label)} vs {_e(c.b_label)}</h4>"
    verdict = "".join(f"<li>{_e(v)}</li>" for v in c.verdict)
    unit = f"<br><small>{_e(c.y_label)}</small>"
    x_head, evidence = c.evidence()
    if evidence:  # the verdicts' own evidence: each ratio with its 95 % interval and what it decides
        rows = "".join(
            f"<tr><td class=num>{f'{v.x:g}' if x_head == 'concurrency' else _num(v.x, 2)}</td>"
            f"<td class=num>{_num(v.a)}</td><td class=num>{_num(v.b)}</td>"
            f"<td class=num>{_ratio_ci(v.ratio, v.ratio_lo, v.ratio_hi)}</td><td>{_e(v.decision)}</td></tr>"
            for v in evidence)
        table = (f'<table class="ladder"><tr><th>{_e(x_head)}</th><th>A: {_e(c.a_label)}{unit}</th>'
                 f"<th>B: {_e(c.b_label)}{unit}</th><th>ratio A/B [95% CI]</th><th>verdict</th></tr>{rows}</table>")
    else:  # no common range: the ladder's point estimates, labelled as such
        rows = "".join(
            f"<tr><td class=num>{_num(e.x, 2)}</td><td class=num>{_num(e.a)}</td><td class=num>{_num(e.b)}</td>"
            f"<td class=num>{'&ndash;' if e.ratio is None else f'{e.ratio:.2f}x'}</td><td>{_e(e.note)}</td></tr>"
            for e in c.ladder)
        table = (f'<p class="shape"><small>point estimates only (no interval, no verdict)</small></p>'
                 f'<table class="ladder"><tr><th>{_e(c.x_label)} ({_e(c.x_unit)})</th><th>A: {_e(c.a_label)}{unit}</th>'
                 f"<th>B: {_e(c.b_label)}{unit}</th><th>ratio A/B</th><th>note</th></tr>{rows}</table>")
    shape = [r.text for r in c.ranges] + [x.text for x in c.crossovers]
    # the step shape reads as a winner ("A gives 1.1x-2.1x"): shown only where no verdict weighs the noise
    shape_html = (f'<p class="shape"><small>point estimates only (step frontiers, noise not weighed): '
                  f'{_e("; ".join(shape))}</small></p>' if shape and not evidence else "")
    return f'{head}<ul class="verdict">{verdict}</ul>{shape_html}{table}'


def _ratio_ci(ratio: float | None, lo: float | None, hi: float | None) -> str:
    """``1.21x [0.95, 1.54]``: a ratio is not shown without its interval when it has one."""
    if ratio is None:
        return "&ndash;"
    return f"{ratio:.2f}x" + ("" if lo is None or hi is None else f" [{lo:.2f}, {hi:.2f}]")


def _ci_note(m: Measured) -> str:
    """The 95 % interval of a point's total throughput, as +-% of it, and what it rests on."""
    e = m.estimate("total_tok_per_s")
    if e is None or not e.mean:
        return ""
    half = (e.hi - e.lo) / 2 / abs(e.mean) * 100
    basis = f"{e.n} trials" if e.method == "trials" else "within-run"
    return f'<br><small class="ci">&plusmn;{half:.1f}% ({basis})</small>'


def point_table(data: ReportData, files_url: str | None = None) -> str:
    norm_node = data.per_node_known
    head = ("<tr><th>point</th><th>state</th><th>topology</th><th>conc</th><th>GPUs/server</th>"
            "<th>interactivity<br>median</th><th>interactivity<br>P90</th><th>total tok/s<br>per GPU</th>"
            + ("<th>total tok/s<br>per node</th>" if norm_node else "")
            + "<th>output tok/s<br>per GPU</th><th>TTFT ms<br>median / P90</th><th>ITL ms<br>median / P90</th>"
              "<th>success</th><th>KV cache<br>tokens</th><th>launch</th></tr>")
    rows = []
    for p in data.points:
        m = data.measured_at(p.point_id)
        name = _e(p.point_id)
        if files_url is not None:
            base = f"{files_url}/{_e(data.run_id)}/points/{name}"
            links = [f'<a href="{base}/status.json">status</a>', f'<a href="{base}/engine.log">log</a>']
            if m is not None:
                links.insert(0, f'<a href="{base}/result.json">result</a>')
            name += f"<br><small>{' '.join(links)}</small>"
        cells = [f"<td>{name}</td>", f"<td>{_e(p.state)}</td>", f"<td>{_e(p.topology)}</td>",
                 f"<td class=num>{p.conc}</td>", f"<td class=num>{p.gpus_per_server}</td>"]
        if m is not None:
            cells += [f"<td class=num>{_num(m.interactivity_median, 2)}</td>",
                      f"<td class=num>{_num(m.interactivity_p90, 2)}</td>",
                      f"<td class=num>{_num(m.throughput('total', 'gpu'))}{_ci_note(m)}</td>"]
            if norm_node:
                cells.append(f"<td class=num>{_num(m.throughput('total', 'node'))}</td>")
            cells += [f"<td class=num>{_num(m.throughput('output', 'gpu'))}</td>",
                      f"<td class=num>{_num(m.ttft_median)} / {_num(m.ttft_p90)}</td>",
                      f"<td class=num>{_num(m.itl_median, 2)} / {_num(m.itl_p90, 2)}</td>",
                      f"<td class=num>{_num(None if m.success_rate is None else 100 * m.success_rate)}%</td>"]
        else:
            span = 8 if norm_node else 7
            cells.append(f"<td colspan={span}>{_e(p.failure_class or '')} {_e(p.reason)}</td>")
        cells += [f"<td class=num>{_num(p.kv_cache_tokens)}</td>",
                  f"<td><small>{_e(p.launch_fingerprint)}</small></td>"]
        rows.append(f'<tr class="{_e(p.state)}">{"".join(cells)}</tr>')
    return f'<table id="points-table">{head}{"".join(rows)}</table>'


def failures_html(data: ReportData) -> str:
    failed = [p for p in data.points if p.state != "done"]
    if not failed:
        return "<p>No failed or skipped points.</p>"
    out = []
    for p in failed:
        out.append(f"<h4>{_e(p.point_id)}: {_e(p.state)}"
                   + (f" ({_e(p.failure_class)})" if p.failure_class else "") + "</h4>"
                   + f"<p>{_e(p.reason) or 'no reason recorded'}</p>"
                   + (f"<pre>{_e(p.log_tail)}</pre>" if p.log_tail else ""))
    return f'<div id="failures">{"".join(out)}</div>'


def _figure_div(fig: go.Figure, div_id: str) -> str:
    return ('<div class="chart">'
            + str(fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                              config={"displaylogo": False, "responsive": True}))
            + "</div>")


FIGURES_ID = "infx-figures"
#: Draws the figures of ``FIGURES_ID`` (one JSON object: div id -> figure, and the shared template) when their
#: slot comes into view.
LAZY_JS = """
(function(){const el=document.getElementById("infx-figures");if(!el)return;const F=JSON.parse(el.textContent);
function draw(d){const f=F.figures[d.id];if(!f||d.dataset.drawn)return;d.dataset.drawn="1";
const layout=Object.assign({},f.layout||{},{template:F.template});
Plotly.newPlot(d,f.data||[],layout,{displaylogo:false,responsive:true});}
const slots=document.querySelectorAll(".infx-lazy");
if(!("IntersectionObserver" in window)){slots.forEach(draw);return;}
const io=new IntersectionObserver((es)=>{for(const e of es)if(e.isIntersecting){io.unobserve(e.target);
draw(e.target);}},{rootMargin:"300px"});slots.forEach((d)=>io.observe(d));})();
"""


def _lazy_div(fig: go.Figure, div_id: str) -> str:
    height = fig.layout.height or 480
    return f'<div class="chart"><div id="{div_id}" class="infx-lazy" style="min-height:{height}px"></div></div>'


def lazy_figures(figs: Sequence[tuple[str, go.Figure]]) -> str:
    """The figures' JSON, once, and the script that draws each when it comes into view."""
    import json

    import plotly.io as pio

    from infx.report.charts import SHARED_TEMPLATE

    if not figs:
        return ""
    parts = ",".join(f"{json.dumps(div_id)}:{fig.to_json()}" for div_id, fig in figs)
    template = pio.templates[SHARED_TEMPLATE].to_plotly_json()
    text = (f'{{"template":{json.dumps(template)},"figures":{{{parts}}}}}').replace("</", "<\\/")
    return f'<script type="application/json" id="{FIGURES_ID}">{text}</script><script>{LAZY_JS}</script>'


#: At most this many workloads get their own detail charts (six each); the main view holds every point.
DETAIL_WORKLOADS = 12


def workload_charts(data: ReportData, limit: int | None = DETAIL_WORKLOADS
                    ) -> tuple[str, list[tuple[str, go.Figure]]]:
    """HTML of every chart, and the figures by div id (the first is the main chart); detail charts for the first
    ``limit`` workloads (None: all), a note naming the rest."""
    parts: list[str] = []
    figs: list[tuple[str, go.Figure]] = []
    from infx.report.accuracy import below_threshold

    below = below_threshold(data.evals, data.run_id)
    by_gpu = series(data.measured, norm="gpu")
    by_node = series(data.measured, norm="node") if data.per_node_known else {}
    shown = 0
    rest: list[str] = []
    for n, (workload, arms) in enumerate(by_gpu.items()):
        arms = _ordered(arms, data.run_id)
        if not any(s.run_id == data.run_id for s in arms):
            continue
        if limit is not None and shown >= limit:
            rest.append(workload.label)
            continue
        shown += 1
        parts.append(f"<h3>{_e(workload.label)}</h3>")
        plan: list[tuple[str, go.Figure]] = []
        if workload in by_node:
            plan.append(("node", charts.frontier_figure(_ordered(by_node[workload], data.run_id), data.run_id,
                                                        f"Throughput {NORM_UNITS['node']} vs interactivity "
                                                        "(step frontiers)", below)))
        plan.append(("gpu", charts.frontier_figure(arms, data.run_id,
                                                   f"Throughput {NORM_UNITS['gpu']} vs interactivity (step frontiers)",
                                                   below)))
        energy = series([m for m in data.measured if m.workload == workload], y_metric="energy", norm="gpu")
        e_arms = _ordered(energy.get(workload, []), data.run_id)
        if any(m.output_tok_per_j is not None for s in e_arms for m in s.points):
            plan.append(("energy", charts.frontier_figure(e_arms, data.run_id, "Output tokens per joule vs "
                                                          "interactivity (GPU energy, step frontiers)")))
        plan.append(("conc", charts.concurrency_figure(arms, data.run_id,
                                                       "Throughput and interactivity vs concurrency")))
        plan.append(("latency", charts.latency_figure(arms, data.run_id, "TTFT and ITL vs concurrency")))
        if any(m.point_id in data.samples for s in arms if s.run_id == data.run_id for m in s.points):
            plan.append(("dist", charts.samples_figure(arms, data.run_id, "Latency distributions (per request)",
                                                       data.samples)))
        else:
            plan.append(("dist", charts.distribution_figure(arms, data.run_id,
                                                            "Latency distributions (summary percentiles)")))
        for k, (kind, fig) in enumerate(plan):
            div_id = MAIN_CHART_ID if (n == 0 and k == 0) else f"chart-{n}-{kind}"
            figs.append((div_id, fig))
            parts.append(_lazy_div(fig, div_id))
    if rest:
        parts.append(f'<div class="note" id="more-workloads">{len(rest)} more workload(s) have no detail charts here '
                     f'(their points are all in the main view above): {_e(", ".join(rest))}</div>')
    if not figs:
        parts.append("<p>No measured points in this run.</p>")
    return "".join(parts), figs


def telemetry_section(data: ReportData) -> str:
    """Energy and engine-state figures per point, and their time series (folded per point)."""
    if not data.telemetry:
        return ""
    from infx.report.telemetry import figures_table, point_figure

    parts = ['<h2 id="telemetry">Telemetry: energy and engine state</h2>',
             "<p>GPU energy is integrated over exactly the throughput window with InferenceX's rules (trapezoid, "
             "interpolated boundaries, 3 s max gap, expected device count); an invalid stream gives no number, "
             "only its reasons. Counters are deltas over the window.</p>", figures_table(data.telemetry)]
    for i, pt in enumerate(data.telemetry):
        parts.append(f"<details><summary>{_e(pt.point_id)} (conc {pt.conc}): power and engine state over time"
                     f"</summary>{_figure_div(point_figure(pt), f'telemetry-{i}')}</details>")
    return "".join(parts)


def _ordered(arms: Sequence[ArmSeries], run_id: str) -> list[ArmSeries]:
    return sorted(arms, key=lambda s: (s.run_id != run_id, s.points[0].gpus_per_server, s.label))


#: Charts with at most this many curves get their verdict tables precomputed into the report (every pair).
REPORT_VERDICT_CURVES = 6


def verdict_html(view: MainView, a: int, b: int, x: str = "interactivity", y: str = "tput_gpu_total") -> str:
    """The verdict table of curves ``a`` and ``b`` on the axes ``x``/``y`` (:func:`compare_frontiers`)."""
    ga, gb = view.groups[a], view.groups[b]
    xm, ym = view.metric(x), view.metric(y)
    fa, fb = group_frontier(view, a, x, y), group_frontier(view, b, x, y)
    if fa.empty or fb.empty:
        return f"<p>{_e(ga.label)} vs {_e(gb.label)}: a curve has no points with these figures.</p>"
    c = compare_frontiers(fa, fb, a_label=ga.label, b_label=gb.label, x_label=xm.label, x_unit=xm.unit,
                          y_label=f"{ym.label} ({ym.unit})", workload=view.charts[ga.chart].label)
    return f'<div class="mv-verdict">{_one_comparison(c)}</div>'


def report_verdicts(view: MainView) -> dict[str, str]:
    """Every pair's verdict on the default axes, for charts with few enough curves (the report is offline)."""
    out: dict[str, str] = {}
    for chart in view.charts:
        ids = [g.id for g in view.groups if g.chart == chart.id]
        if len(ids) > REPORT_VERDICT_CURVES:
            continue
        for a, b in itertools.combinations(ids, 2):
            out[f"{a}-{b}"] = verdict_html(view, a, b)
    return out


def main_view_section(data: ReportData) -> str:
    """Every hardware of the report on one chart per model, scenario and precision (infx.report.mainview)."""
    if data.main_view is None or not data.main_view.points.group:
        return ""
    from infx.report.mainview import section

    return ('<h2 id="main-view">Main view: hardware compared</h2>'
            + section(data=data.main_view, verdicts=report_verdicts(data.main_view),
                      reliability=[r.model_dump(mode="json") for r in data.reliability]))


def render_report(data: ReportData, *, plotly_js: Literal["inline"] | str = "inline",
                  nav: str = "", files_url: str | None = None) -> str:
    """The report page. ``plotly_js="inline"`` embeds plotly (self-contained file); any other
    value is the URL of plotly.min.js (the dashboard serves it itself). ``files_url``: where the
    points' files are served (the dashboard), to link each point's result, status and log."""
    if plotly_js == "inline":
        from plotly.offline import get_plotlyjs

        script = f'<script type="text/javascript">{get_plotlyjs()}</script>'
    else:
        script = f'<script src="{_e(plotly_js)}"></script>'
    m = data.manifest
    charts_html, figs = workload_charts(data)
    notes = "".join(f'<div class="note">{_e(n)}</div>' for n in data.notes)
    comparisons = ""
    if data.arm_comparison is not None:
        comparisons += comparison_html(data.arm_comparison, "arm-comparison")
    if data.baseline_comparison is not None:
        comparisons += comparison_html(data.baseline_comparison, "baseline-comparison")
    if data.published is not None:
        from infx.report.published import published_html

        comparisons += published_html(data.published)
    if data.agg_disagg_comparison is not None:
        comparisons += comparison_html(data.agg_disagg_comparison, "agg-disagg-comparison")
    baseline_line = (f"<p>Compared against baseline run <b>{_e(data.baseline)}</b> (dashed lines, open markers).</p>"
                     if data.baseline else "")
    title = f"infx report: {m.run_id}"
    from infx.report.acceptance import acceptance_html
    from infx.report.accuracy import accuracy_html

    tput = {m.point_id: m.throughput("total", "gpu") for m in data.measured if m.run_id == data.run_id}
    accuracy_section = accuracy_html(data.evals, data.run_id, data.accuracy, tput, files_url)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title><style>{CSS}</style>{script}</head>
<body>{banner(m)}<main>
{nav}
<h1>{_e(title)}</h1>
<p>{sum(p.state == 'done' for p in data.points)} measured, {sum(p.state == 'failed' for p in data.points)} failed,
{sum(p.state == 'skipped' for p in data.points)} skipped point(s). Started {_time(m.started_at)}.</p>
{baseline_line}{notes}
{main_view_section(data)}
<h2 id="charts">Throughput vs interactivity</h2>
<p>Frontiers are step functions through measured points (never smoothed): the value at an interactivity is the
best throughput measured at that interactivity or better. Per-node figures are per-server throughput &times; whole
servers per node (GPUs per node // GPUs per server), assuming replicas do not interfere.</p>
{charts_html}
{lazy_figures(figs)}
{telemetry_section(data)}
{acceptance_html(data.acceptance, data.measured, data.run_id, {m.workload.model_prefix for m in data.measured})}
{cost_section(data)}
<h2 id="accuracy">Accuracy</h2>
{accuracy_section}
<h2 id="comparisons">Comparisons</h2>
{comparisons or '<p>No comparisons.</p>'}
<h2 id="points">Points</h2>
{point_table(data, files_url)}
<h2 id="failures-heading">Failures</h2>
{failures_html(data)}
<h2 id="manifest">Run manifest</h2>
{manifest_table(m)}
<p><small>Generated by infx {_e(m.infx_version)}.</small></p>
</main></body></html>
"""


def main_chart_page(data: ReportData) -> str:
    """A page with only the main chart (for the PNG export)."""
    from plotly.offline import get_plotlyjs

    from infx.report.charts import SHARED_TEMPLATE

    _, figs = workload_charts(data)
    if not figs:
        body = "<p>No measured points.</p>"
    else:
        div_id, fig = figs[0]
        fig = go.Figure(fig)
        fig.update_layout(width=1200, height=640, template=SHARED_TEMPLATE)
        body = fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config={"staticPlot": True})
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><script>{get_plotlyjs()}</script>'
            f"<style>body{{margin:0;background:#fff}}</style></head><body>{body}</body></html>")
