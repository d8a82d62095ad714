"""The report's InferenceX section: a measured run next to published (imported) InferenceX
points, as InferenceX's PR comment tabulates them (infx.interop.prtable)."""

from __future__ import annotations

from html import escape

from infx.interop.prtable import PRComparison, Row, fmt

_COLOUR = {"better": "#1a7f37", "worse": "#cf222e"}


def _ci(r: Row) -> str:
    lo, hi, unit = r.ci_lo, r.ci_hi, r.unit
    return "&ndash;" if lo is None or hi is None else f"{fmt(lo, unit)} &ndash; {fmt(hi, unit)}"


def published_html(cmp: PRComparison) -> str:
    parts = [f'<section id="inferencex-comparison"><h3>{escape(cmp.run_id)} (measured) vs '
             f"{escape(cmp.published_run)} (published InferenceX results, imported)</h3>",
             "<p>Points matched on hardware, model prefix, framework, precision, speculative decoding, disagg, "
             "topology, ISL/OSL and concurrency. Deltas are measured &minus; published; green is better, red worse "
             "(higher is better for throughput and interactivity, lower for TTFT and E2EL), and only when the "
             "published value lies outside the measured point's 95% interval across trials (\"same\": within "
             "&plusmn;5%; \"inconclusive\": measured once, or neither).</p>"]
    for pair in cmp.pairs:
        rows = []
        for r in pair.rows:
            style = f' style="color:{_COLOUR[r.verdict]}"' if r.verdict in _COLOUR else ""
            delta = "&ndash;" if r.delta is None else ("+" if r.delta > 0 else "") + fmt(r.delta, r.unit)
            pct = "&ndash;" if r.delta_pct is None else f"{r.delta_pct:+.1f}%"
            rows.append(f"<tr><td>{escape(r.metric)}</td><td>{escape(r.unit)}</td>"
                        f"<td class=num>{fmt(r.measured, r.unit)}</td><td class=num>{fmt(r.published, r.unit)}</td>"
                        f"<td class=num{style}>{delta}</td><td class=num{style}>{pct}</td>"
                        f"<td class=num>{_ci(r)}</td><td{style}>{escape(r.verdict)}</td></tr>")
        parts.append(f"<h4>{escape(pair.label)}</h4><table class=\"published\"><tr><th>metric</th><th>unit</th>"
                     f"<th>measured</th><th>published</th><th>delta</th><th>delta %</th><th>measured 95% CI</th>"
                     f"<th>verdict</th></tr>{''.join(rows)}</table>")
    for title, items in (("Measured points with no published match", cmp.unmatched_measured),
                         ("Published points with no measured match", cmp.unmatched_published),
                         ("Measured points without an InferenceX form", cmp.not_exported)):
        if items:
            lis = "".join(f"<li>{escape(i)}</li>" for i in items)
            parts.append(f'<h4>{title} ({len(items)})</h4><ul class="unmatched">{lis}</ul>')
    parts.append("</section>")
    return "".join(parts)
