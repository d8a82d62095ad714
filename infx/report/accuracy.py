"""The report's accuracy section: evals per point and per arm next to throughput, points below their
threshold listed (and drawn as red crosses on the frontier charts), and the paired accuracy verdicts."""

from __future__ import annotations

from html import escape

from infx.analysis.accuracy import AccuracyComparison
from infx.analysis.evals import EvalPoint


def _e(v: object) -> str:
    return escape("" if v is None else str(v))


def _pct(v: float | None, se: float | None = None) -> str:
    if v is None:
        return "&ndash;"
    return f"{100 * v:.2f}%" + (f" &plusmn;{100 * se:.2f}%" if se is not None else "")


def _links(files_url: str | None, run_id: str, e: EvalPoint) -> str:
    if files_url is None:
        return ""
    base = f"{files_url}/{_e(run_id)}/points/{_e(e.point_id)}"
    names = ("eval-status.json", "lm-eval.log") if e.state == "failed" else (
        "eval.json", "eval-samples.jsonl", "eval-status.json")
    return "<br><small>" + " ".join(f'<a href="{base}/{n}">{n.split(".")[0]}</a>' for n in names) + "</small>"


def below_threshold(evals: list[EvalPoint], run_id: str) -> set[str]:
    return {e.point_id for e in evals if e.run_id == run_id and e.state == "accuracy-fail"}


def accuracy_html(evals: list[EvalPoint], run_id: str, comparisons: list[AccuracyComparison],
                  throughput: dict[str, float | None], files_url: str | None = None) -> str:
    mine = [e for e in evals if e.run_id == run_id]
    if not mine:
        return '<p id="accuracy-none">No accuracy evals in this run (`infx run --evals default|evals-only`).</p>'
    rows = []
    for e in mine:
        tput = throughput.get(e.point_id)
        rows.append(
            f'<tr class="{_e(e.state)}"><td>{_e(e.point_id)}{_links(files_url, run_id, e)}</td>'
            f'<td>{_e(e.workload.label)}</td><td>{_e(e.arm.label)}</td>'
            f"<td class=num>{e.conc}</td><td>{_e(e.task)}</td><td class=num>{_e(e.n)}</td>"
            f"<td class=num>{_pct(e.score_strict, e.stderr_strict)}</td>"
            f"<td class=num>{_pct(e.score_flexible, e.stderr_flexible)}</td>"
            f"<td class=num>{'&ndash;' if e.threshold is None else f'{100 * e.threshold:.0f}%'}</td>"
            f"<td class=num>{'&ndash;' if tput is None else f'{tput:,.1f}'}</td>"
            f"<td><b>{_e(e.state)}</b> {_e(e.reason)}</td></tr>")
    table = ('<table id="accuracy-table"><tr><th>point</th><th>workload</th><th>arm</th><th>conc</th><th>task</th>'
             "<th>n</th><th>exact match<br>strict</th><th>exact match<br>flexible</th><th>threshold</th>"
             "<th>total tok/s<br>per GPU</th><th>state</th></tr>" + "".join(rows) + "</table>")
    arms: dict[tuple[str, str], list[EvalPoint]] = {}
    for e in mine:
        arms.setdefault((e.workload.label, e.arm.label), []).append(e)
    arm_rows = "".join(
        f"<tr><td>{_e(w)}</td><td>{_e(a)}</td><td class=num>{len(es)}</td>"
        f"<td class=num>{_pct(max((x.score_strict for x in es if x.score_strict is not None), default=None))}</td>"
        f"<td>{_e(', '.join(sorted({x.state for x in es})))}</td></tr>"
        for (w, a), es in sorted(arms.items()))
    arm_table = ('<table id="accuracy-arms"><tr><th>workload</th><th>arm</th><th>evals</th><th>best strict</th>'
                 "<th>states</th></tr>" + arm_rows + "</table>")
    below = [e for e in mine if e.state == "accuracy-fail"]
    failed = [e for e in mine if e.state == "failed"]
    listing = ""
    if below:
        listing += ('<div class="note" id="accuracy-below"><b>Below threshold (accuracy-fail):</b> '
                    + ", ".join(f"{_e(e.point_id)} ({_pct(e.score_strict)} &lt; {100 * (e.threshold or 0):.0f}%)"
                                for e in below) + "</div>")
    if failed:
        listing += ('<div class="note" id="accuracy-failed"><b>Evals without a score:</b> '
                    + ", ".join(f"{_e(e.point_id)} ({_e(e.reason)})" for e in failed) + "</div>")
    verdicts = "".join(f'<li class="acc-{_e(c.verdict.replace(" ", "-"))}">{_e(c.a_label)} vs {_e(c.b_label)}: '
                       f"<b>{_e(c.verdict)}</b>. {_e(c.text)}</li>" for c in comparisons)
    return (listing + table + "<h3>Per arm</h3>" + arm_table
            + (f'<h3>Paired accuracy comparisons</h3><ul id="accuracy-verdicts">{verdicts}</ul>' if verdicts else ""))
