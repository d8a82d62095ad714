"""The report's speculative-decoding section: each spec-decoding point's acceptance beside the throughput it
explains (measured from the engine's counters, or synthetic: a length the launch forced), with its interval
across trials, the acceptance rate and the acceptance per draft position."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

from infx.analysis.dataset import Measured
from infx.results.store.reads import AcceptanceRow

#: Why the embedded engine's tiny model accepts drafts at all (the report says it in one line).
TINY_MODEL_WHY = ("Why the tiny model accepts drafts: its weights are random, so greedy decoding soon falls into "
                  "repeating cycles, and n-gram prompt lookup drafts exactly the tokens that repeat; a real model's "
                  "acceptance depends on its text.")


def _e(v: object) -> str:
    return html.escape(str(v))


def _al(a: AcceptanceRow) -> str:
    if a.acceptance == "synthetic":
        forced = f"{a.synthetic_al:g}" if a.synthetic_al is not None else "?"
        return f"synthetic: AL {forced} forced via {_e(a.via or '?')}"
    if a.state == "not_reported":
        return "not reported by this engine"
    if a.state == "invalid":
        return f"invalid: {_e(a.reason)}"
    if a.acceptance_length is None:
        return "no drafts in the window"
    ci = (f" [{a.acceptance_length_lo:.2f}, {a.acceptance_length_hi:.2f}]"
          if a.acceptance_length_lo is not None and a.acceptance_length_hi is not None else "")
    return f"{a.acceptance_length:.2f}{ci}" + (" (engine gauge)" if a.state == "gauge" else "")


def acceptance_html(rows: Sequence[AcceptanceRow], measured: Sequence[Measured], run_id: str,
                    model_prefixes: set[str]) -> str:
    """The section (empty when the run has no speculative-decoding point)."""
    mine = {m.point_id: m for m in measured if m.run_id == run_id}
    rows = [a for a in rows if a.run_id == run_id]
    if not rows:
        return ""
    body = []
    for a in sorted(rows, key=lambda a: (mine[a.point_id].conc if a.point_id in mine else 0, a.point_id, a.role)):
        m = mine.get(a.point_id)
        per_pos = json.loads(a.per_position_json or "[]")
        tput = f"{m.throughput('total', 'gpu'):,.1f}" if m is not None else "&ndash;"
        body.append(
            f"<tr><td>{_e(a.point_id)}</td><td>{_e(m.arm.label if m else '')}</td>"
            f"<td class=num>{m.conc if m else ''}</td><td>{_e(a.role)}</td>"
            f"<td>{_e(a.acceptance or 'measured')}</td><td class=num>{_al(a)}</td>"
            f"<td class=num>{'&ndash;' if a.acceptance_rate is None else f'{a.acceptance_rate:.0%}'}</td>"
            f"<td class=num>{' / '.join(f'{p:.0%}' for p in per_pos) or '&ndash;'}</td>"
            f"<td class=num>{tput}</td></tr>")
    why = f"<p>{_e(TINY_MODEL_WHY)}</p>" if "tinyllama" in model_prefixes and any(
        a.method == "ngram" for a in rows) else ""
    synthetic = sum(a.acceptance == "synthetic" for a in rows)
    warn = (f'<div class="note">{synthetic} point(s) ran with a synthetic (forced) acceptance length: their '
            "throughput is what that length gives, not what real drafts achieve.</div>" if synthetic else "")
    return ('<h2 id="acceptance">Speculative decoding: acceptance</h2>'
            "<p>Acceptance length (AL) = 1 + accepted / drafts: tokens one target step emits, from the engine's "
            "<code>/metrics</code> counter deltas over each point's measured window (95% interval across trials). "
            "Rate = accepted / drafted tokens; per position = accepted at that draft position / drafts.</p>"
            f"{why}{warn}<table id=\"acceptance-table\"><tr><th>point</th><th>arm</th><th>conc</th><th>role</th>"
            "<th>acceptance</th><th>AL [95% CI]</th><th>rate</th><th>per position</th>"
            f"<th>total tok/s<br>per GPU</th></tr>{''.join(body)}</table>")
