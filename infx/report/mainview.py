"""The main view's page section (dashboard and report): the controls, the chart slots and the script that draws
them (``mainview_page.js``). The report embeds the view's data once (one JSON script element); the dashboard
fetches it from ``/api/mainview``. The verdict table of two curves is ``infx.report.html.verdict_html``."""

from __future__ import annotations

import html
import json
from functools import lru_cache
from importlib import resources

from infx.analysis.mainview import MainView

DATA_ID = "mv-data"

CSS = """
#mainview .mv-controls{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-start;background:#fff;
border:1px solid #e3e3e3;border-radius:6px;padding:8px;font-size:13px}
#mainview .mv-controls label{display:flex;flex-direction:column;gap:2px}
#mainview select[multiple]{min-height:4.5em}
#mainview .mv-tools{font-size:12px;padding:2px 4px} #mainview .mv-notes{color:#8a5a00}
#mv-summary{font-size:12px;color:#555;margin:6px 0}
"""


@lru_cache(maxsize=1)
def script() -> str:
    return resources.files("infx.report").joinpath("mainview_page.js").read_text(encoding="utf-8")


def section(*, api: str | None = None, data: MainView | None = None, verdicts: dict[str, str] | None = None,
            as_of_box: bool = False, reliability: list[dict[str, object]] | None = None) -> str:
    """The main view's HTML: with ``data`` (the report) the view's JSON is embedded once; with ``api`` (the
    dashboard) the page fetches it."""
    e = html.escape
    if data is not None:
        payload = data.model_dump(mode="json")
        payload["verdicts"] = verdicts or {}
        payload["reliability"] = reliability or []
        text = json.dumps(payload, separators=(",", ":")).replace("</", "<\\/")
        embedded = f'<script type="application/json" id="{DATA_ID}">{text}</script>'
        config = {"embedded": DATA_ID}
    else:
        embedded = ""
        config = {"api": api or "/api"}
    asof = ('<label>as of (date or run)<input id="mv-asof" placeholder="latest" size="12"></label>'
            '<label>runs overlaid (ids, comma-separated)<input id="mv-runs" placeholder="the latest curves" size="20">'
            '</label>' if as_of_box else "")
    return f"""<section id="mainview" data-config="{e(json.dumps(config))}">
<style>{CSS}</style>
<div class="mv-controls">
<label>y<select id="mv-y"></select></label>
<label>x<select id="mv-x"></select></label>
<label>$/GPU-hr (custom)<input id="mv-custom" size="6" placeholder="e.g. 2.5"></label>
<label>model<select id="mv-model" multiple></select></label>
<label>scenario<select id="mv-scen" multiple></select></label>
<label>precision<select id="mv-prec" multiple></select></label>
<label>chart<select id="mv-chart" multiple></select></label>
<label>hardware<select id="mv-hw" multiple></select></label>
<label>framework<select id="mv-fw" multiple></select></label>
<label>run<select id="mv-run" multiple></select></label>
{asof}
</div>
<p>Each curve is one hardware, framework, spec method and agg/disagg in one run: the best-config envelope over all
its topologies and concurrencies (a step function through measured points, labelled by parallelism). Hollow
markers are dominated within their curve; x markers are invalid points (kept off the envelope); open diamonds
have a synthetic acceptance rate; dashed curves come from unofficial runs; bands are 95 % intervals. Click two
curves for their verdict table.</p>
<div id="mv-summary"></div>
<div id="mv-charts"></div>
<div id="mv-verdict"></div>
<h3 id="mv-calculator">Calculator</h3>
<p>Every curve of the chart at one target interactivity: tok/s per GPU, $/Mtok and tok/s per provisioned MW,
interpolated between the two measured envelope points around it (none outside the measured range). Click two bars
for their verdict.</p>
<div class="mv-controls"><label>target interactivity (tok/s/user)<input id="mv-at" size="8" placeholder="e.g. 30">
</label><span class="mv-tools"><button id="mv-calc-csv">CSV</button> <button id="mv-calc-png">PNG</button></span></div>
<div id="mv-calc" class="chart"></div>
<h3 id="mv-historical">Historical</h3>
<p>The picked curve's y at the target interactivity as of each run's end (the store's snapshots), with 95 %
intervals; a star marks a new image or launch recipe.</p>
<div id="mv-history"></div>
<h3 id="mv-reliability-heading">Reliability</h3>
<div id="mv-reliability" style="min-height:40px"></div>
{embedded}
<script>{script()}</script>
</section>"""
