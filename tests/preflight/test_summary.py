"""`infx preflight` ends with one table of verdicts and reasons with their row counts; --json keeps one
record per row."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from rich.console import Console

from infx.preflight.cli import run
from infx.preflight.report import print_report, reason_counts, reason_key
from infx.preflight.verdict import Check, PointVerdict


def _v(name: str, *checks: Check) -> PointVerdict:
    from infx.preflight.verdict import worst

    return PointVerdict(point_id=name, exp_name=name, runner="r", status=worst([c.status for c in checks]),
                        checks=list(checks))


def test_reasons_fold_figures_and_count_rows() -> None:
    a = Check(name="memory", status="fail",
              message="needs 301.2 GB per GPU but the budget is 259.2 GB: short by 42.0 GB; more")
    b = Check(name="memory", status="fail",
              message="needs 290.0 GB per GPU but the budget is 259.2 GB: short by 30.8 GB")
    w = Check(name="memory", status="warn",
              message="memory unverifiable: no card for 'dsv4' (cards/models/dsv4.yaml)")
    w2 = Check(name="memory", status="warn",
               message="memory unverifiable: no card for 'kimik3' (cards/models/kimik3.yaml)")
    ok = Check(name="image-pinned", status="ok", message="pinned")
    rows = reason_counts([_v("p1", a, ok), _v("p2", b), _v("p3", w), _v("p4", w2), _v("p5", ok), _v("p6", w, a)])
    assert rows[0] == ("fail", "memory: needs N per GPU but the budget is N: short by N", 3, "p1")
    # the family stays named
    assert ("warn", "memory: memory unverifiable: no card for 'dsv4' (cards/models/dsv4.yaml)", 2, "p3") in rows
    assert ("warn", "memory: memory unverifiable: no card for 'kimik3' (cards/models/kimik3.yaml)", 1, "p4") in rows
    assert rows[-1] == ("ok", "every check passed", 1, "p5")
    assert reason_key("memory:prefill", "prefill x4 (8 GPU each): KV pool 3.1 GB holds 1,024 tokens") == \
        "memory:prefill: KV pool N holds N tokens"
    no_recipe = "launch does not render: no recipe matches point 0a1b2c3d4e5f (model-prefix=dsr1, hardware=b200)"
    assert reason_key("launch", no_recipe) == "launch: launch does not render: no recipe matches point"


def test_table_lists_verdicts_and_reasons() -> None:
    out = io.StringIO()
    a = Check(name="capacity", status="warn", message="capacity unknown: deployment takes 72 GPU(s) = 18 node(s) x 4")
    print_report([_v("p1", a), _v("p2", a), _v("p3", Check(name="x", status="ok", message="fine"))],
                 Console(file=out, width=200), details=False)
    text = out.getvalue()
    assert "verdicts: 3 rows = 1 ok, 2 warn, 0 fail" in text
    table = text[text.index("verdicts:"):]
    line = next(x for x in table.splitlines() if "capacity unknown" in x)
    assert " 2 " in line and "WARN" in line


def test_whole_catalog_json_one_record_per_row_and_table(compat: Path, tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for f in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
        shutil.copy(compat / f, tmp_path / f)
    monkeypatch.chdir(tmp_path)
    args = ["--config-files", "amd-master.yaml", "nvidia-master.yaml", "--runner-config", "runners.yaml",
            "--config-keys", "*"]
    assert run(args + ["--json"]) == 1  # failing rows exit 1
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 1820 and len({r["point_id"] for r in rows}) == 1820
    assert all(r["status"] in ("ok", "warn", "fail") and (r["status"] == "ok" or r["reason"]) for r in rows)
    assert not [r for r in rows for c in r["checks"] if c["name"] == "capacity" and c["status"] == "fail"]
    assert run(args + ["--brief"]) == 1
    text = capsys.readouterr().out
    total = {s: sum(1 for r in rows if r["status"] == s) for s in ("ok", "warn", "fail")}
    assert f"verdicts: 1820 rows = {total['ok']} ok, {total['warn']} warn, {total['fail']} fail" in text
    assert "capacity unknown" in text
    from infx.preflight.report import memory_coverage
    from infx.preflight.verdict import PointVerdict as PV

    mc = memory_coverage([PV.model_validate({k: v for k, v in r.items() if k != "reason"}) for r in rows])
    assert mc["unverifiable"] == 0 and mc["ok"] + mc["warn"] + mc["fail"] >= 476  # every family has a card now
    assert f"memory: {mc['ok'] + mc['warn'] + mc['fail']} of 1820 rows checked" in text


def test_deployment_rows_print_a_breakdown_per_role(compat: Path) -> None:
    from infx.catalog import load_runners
    from infx.engines.disagg.render import render_deployment
    from infx.matrix.select import select_points
    from infx.preflight.gate import preflight_points

    (p, *_) = select_points([str(compat / "nvidia-master.yaml")], str(compat / "runners.yaml"),
                            ["dsr1-fp4-b200-dynamo-trt"], evals="none", conc=None)
    (v,) = preflight_points([p], runners=load_runners(compat / "runners.yaml"),
                            launches={p.point_id: render_deployment(p)})
    out = io.StringIO()
    print_report([v], Console(file=out, width=220), details=True)
    text = out.getvalue()
    assert "prefill: memory (per GPU, b200 180.0 GB)" in text and "decode: memory (per GPU, b200 180.0 GB)" in text
    assert "routed experts" in text or "weights" in text
