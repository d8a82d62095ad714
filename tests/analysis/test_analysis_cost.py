"""Cost per token (issue 24): the cost table as data (shipped, workspace, ``extends: builtin``), strict
validation, InferenceX-app's formulas reproduced to 1e-9 on hand-computed cases, the disaggregation bases,
"not priced" instead of 0, and read-time application (the store never changes, the report does)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from infx.analysis.cost import Inputs, compare_cost, cost_view, point_cost, sku_resolver
from infx.analysis.costmodel import BUILTIN_COST_MODEL, load_cost_model
from infx.diagnostics import InfxError
from infx.matrix.point import Point
from infx.metrics.sections import ResultExtra, TelemetrySummary
from infx.results.layout import PointStatus, ResultsDir, write_point_outcome
from infx.results.synthetic import Arm, make_manifest, make_point, make_result
from infx.workspace import SCAFFOLD_DIR

SKU_OF = sku_resolver()


@pytest.fixture(scope="module")
def table():  # type: ignore[no-untyped-def]
    return load_cost_model(BUILTIN_COST_MODEL)


def agg(runner: str, total: float, output: float, gpus: int, **kw: object) -> Inputs:
    return Inputs(point_id="p", runner=runner, total_tok_per_s=total, output_tok_per_s=output, gpus_per_server=gpus,
                  **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------- golden values

# (runner, tier, tok/s per server, GPUs, hand-computed $/Mtok, tokens per $, tok/s per MW)
#   h100 hyperscaler 1.17 $/GPU-hr, 1.37 kW: 8000 tok/s on 8 GPUs = 1000 tok/s/GPU
#     $/Mtok = 1.17 / (1000 * 3600 / 1e6) = 1.17 / 3.6 = 0.325; tokens per $ = 3.6e6 / 1.17; MW: 1e6 / 1.37
#   b200 retail 2.60 $/GPU-hr, 1.71 kW: 2500 tok/s on 1 GPU -> 2.6 / 9 ; 9e6 / 2.6 ; 2.5e6 / 1.71
#   mi300x neocloud 1.16 $/GPU-hr, 1.39 kW: 600 tok/s on 4 GPUs = 150 -> 1.16 / 0.54 ; 5.4e5 / 1.16 ; 1.5e5 / 1.39
GOLDEN = [
    ("h100-cw", "hyperscaler", 8000.0, 8, 0.325, 3.6e6 / 1.17, 1e6 / 1.37),
    ("b200-nv", "retail", 2500.0, 1, 2.6 / 9, 9e6 / 2.6, 2.5e6 / 1.71),
    ("cluster:mi300x-amd", "neocloud", 600.0, 4, 1.16 / 0.54, 5.4e5 / 1.16, 1.5e5 / 1.39),
]


@pytest.mark.parametrize(("runner", "tier", "tps", "gpus", "usd_mtok", "tok_usd", "tok_mw"), GOLDEN)
def test_golden_values_reproduce_the_inferencex_formulas(table, runner, tier, tps, gpus, usd_mtok, tok_usd,
                                                         tok_mw) -> None:  # type: ignore[no-untyped-def]
    pc = point_cost(agg(runner, tps, tps / 4, gpus), table, tier, sku_of=SKU_OF)
    assert pc.cost().value == pytest.approx(usd_mtok, abs=1e-9, rel=0)
    assert pc.tokens_per_usd["total"].value == pytest.approx(tok_usd, rel=1e-12)
    assert pc.tok_per_s_per_mw.value == pytest.approx(tok_mw, abs=1e-9, rel=0)
    # aggregated: no roles, so both bases of input and output are the all-GPU figure
    assert pc.cost("output", "role").value == pc.cost("output", "all").value == pytest.approx(usd_mtok * 4, abs=1e-9)


def test_the_shipped_table_is_the_july_2026_three_tier_table(table) -> None:  # type: ignore[no-untyped-def]
    assert table.version == "inferencex-2026-07" and "July 2026" in table.source
    assert set(table.tiers) == {"hyperscaler", "neocloud", "retail"} and table.default_tier == "hyperscaler"
    h200 = table.skus["h200"]
    assert (h200.all_in_kw.value, *(h200.prices[t].value for t in ("hyperscaler", "neocloud", "retail"))) == \
        (1.37, 1.22, 1.59, 2.05)
    assert "All-In W" in h200.all_in_kw.source and h200.prices["retail"].date == "2026-07"


# ------------------------------------------------------------------------------------------- disaggregation


def test_disaggregated_bases_differ_by_hand_and_the_role_basis_adds_up(table) -> None:  # type: ignore[no-untyped-def]
    # mi355x hyperscaler 1.50 $/GPU-hr; prefill 2 GPUs + decode 6 GPUs; 12000 tok/s total, 2000 output, 10000 input
    inp = agg("cluster:mi355x-amds", 12000.0, 2000.0, 8, prefill_gpus=2, decode_gpus=6)
    pc = point_cost(inp, table, sku_of=SKU_OF)
    hand = {"total": 1.5 / (12000 / 8 * 0.0036),  # 0.2777...
            "output:role": 1.5 / (2000 / 6 * 0.0036),  # 1.25
            "output:all": 1.5 / (2000 / 8 * 0.0036),  # 1.666...
            "input:role": 1.5 / (10000 / 2 * 0.0036),  # 0.08333...
            "input:all": 1.5 / (10000 / 8 * 0.0036)}  # 0.3333...
    assert hand["output:role"] == pytest.approx(1.25, abs=1e-12)
    for key, value in hand.items():
        assert pc.usd_per_mtok[key].value == pytest.approx(value, abs=1e-9, rel=0), key
    assert pc.cost("input", "role").value != pc.cost("input", "all").value
    # role basis: an allocation. Weighted by token counts it is the total cost ($/h here)
    role = pc.cost("input", "role").value * 10000 + pc.cost("output", "role").value * 2000  # type: ignore[operator]
    total = pc.cost("total").value * 12000  # type: ignore[operator]
    assert role == pytest.approx(total, rel=1e-12)
    # all basis: every GPU charged to each token type, so it counts the deployment twice
    both = pc.cost("input", "all").value * 10000 + pc.cost("output", "all").value * 2000  # type: ignore[operator]
    assert both == pytest.approx(2 * total, rel=1e-12)
    assert pc.labels["input:role"] == "input, prefill GPUs (2)"
    assert pc.labels["output:role"] == "output, decode GPUs (6)"
    assert pc.labels["output:all"] == "output, all GPUs (8)"


def _disagg_point(conc: int) -> Point:
    worker = {"ep": 1, "dp-attn": False}
    return Point.from_row({
        "image": "img", "model": "deepseek-ai/DeepSeek-V4.1-Flash", "model-prefix": "dsv41flash", "precision": "fp4",
        "framework": "vllm", "runner": "cluster:mi355x-amds", "isl": 1024, "osl": 1024,
        "max-model-len": 2304, "prefill": {"num-worker": 1, "tp": 2, **worker},
        "decode": {"num-worker": 1, "tp": 6, **worker}, "conc": [conc], "disagg": True, "kv-p2p-transfer": "nixl",
        "exp-name": f"pd_c{conc}", "point-id": f"pd_c{conc}"})


def _write_run(root: Path, *, power_w: float | None = None, runner: str = "cluster:mi355x-amds") -> ResultsDir:
    results = ResultsDir(root)
    results.write_manifest(make_manifest("r1"))
    rng = random.Random(0)
    for c in (4, 16, 64):
        for point, arm in ((make_point(8, c, isl=1024, osl=1024, runner=runner), Arm(tp=8, t_max=3000.0, c_half=40.0)),
                           (_disagg_point(c), Arm(tp=8, t_max=4000.0, c_half=40.0))):
            result = make_result(point, arm, rng=rng)
            update: dict[str, object] = {}
            if point.multinode:
                update["config"] = result.config.model_copy(update={"max_concurrency": c})
            if power_w is not None:
                update["extra"] = ResultExtra(telemetry=TelemetrySummary(power={
                    "power_valid": 1, "avg_total_gpu_power_w": power_w, "joules_per_output_token": 0.5}))
            write_point_outcome(results, "r1", point, PointStatus(state="done", launch_fingerprint=point.point_id),
                                result.model_copy(update=update))
    return results


def _report(root: Path, **kw: object) -> str:
    from infx.report.data import load_report_data
    from infx.report.html import render_report
    from infx.results.store import Store

    with Store(root / "infx.db") as st:
        st.ingest_dir(root)
        data = load_report_data(st, "r1", gpus_per_node=lambda run, runner: 8, **kw)  # type: ignore[arg-type]
    return render_report(data, plotly_js="/x.js")


def test_report_labels_both_bases_of_a_disaggregated_deployment(tmp_path: Path) -> None:
    _write_run(tmp_path)
    page = _report(tmp_path)
    assert 'id="cost"' in page and "cost table inferencex-2026-07" in page
    assert "input, prefill GPUs (2)" in page and "output, decode GPUs (6)" in page
    assert "output, all GPUs (8)" in page and "per role (aggregated: all 8 GPUs)" in page
    assert 'id="cost-disagg"' in page and "not an allocation" in page
    assert "cost-0-output-role" in page and "cost-0-output-all" in page  # the disaggregated workload's frontiers


def test_measured_kw_comes_from_valid_telemetry(tmp_path: Path) -> None:
    from infx.analysis.cost import load_cost_view
    from infx.analysis.dataset import load_measured
    from infx.results.store import Store

    _write_run(tmp_path, power_w=4000.0)
    with Store(tmp_path / "infx.db") as st:
        st.ingest_dir(tmp_path)
        measured = load_measured(st)
        view = load_cost_view(st, measured, model=load_cost_model(BUILTIN_COST_MODEL))
    m = measured[0]
    pc = view.by_point()[(m.run_id, m.point_id)]
    assert pc.tok_per_s_per_measured_kw.value == pytest.approx(m.total_tok_per_s / 4.0, rel=1e-12)
    assert view.measured_power_what[m.point_id] == "GPU board power"


# ------------------------------------------------------------------------------------------- nothing faked


def test_a_sku_without_a_price_or_power_is_not_priced_never_zero(table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cpu = point_cost(agg("local", 100.0, 20.0, 1), table, sku_of=SKU_OF)
    assert cpu.sku == "cpu" and not cpu.priced
    assert all(v.value is None
               for v in (*cpu.usd_per_mtok.values(), *cpu.tokens_per_usd.values(), cpu.tok_per_s_per_mw))
    assert cpu.cost().text() == f"not priced: SKU cpu is not in inferencex-2026-07 ({BUILTIN_COST_MODEL})"
    retail = point_cost(agg("cluster:mi355x-amds", 100.0, 20.0, 1), table, "retail", sku_of=SKU_OF)
    assert retail.cost().value is None and retail.cost().reason.startswith("mi355x retail: the three-tier table's")
    assert retail.tok_per_s_per_mw.value == pytest.approx(100.0 * 1000 / 2.09)  # power is known: still shown
    nobody = point_cost(agg("cluster:tpu-x", 100.0, 20.0, 1), table, sku_of=SKU_OF)
    assert nobody.cost().reason == "runner 'cluster:tpu-x' maps to no hardware SKU (cards/hardware)"
    f = tmp_path / "cost-model.yaml"
    f.write_text(_TABLE.replace("all-in-kw: 1.37", 'all-in-kw: {unpriced: "not surveyed"}'))
    pc = point_cost(agg("h100-cw", 1000.0, 200.0, 1), load_cost_model(f), sku_of=SKU_OF)
    assert pc.priced and pc.tok_per_s_per_mw.text() == "not priced: h100: no all-in power figure (not surveyed)"


def test_a_node_hour_price_needs_gpus_per_node(tmp_path: Path) -> None:
    f = tmp_path / "cost-model.yaml"
    f.write_text(_TABLE.replace("usd-per-gpu-hour: {hyperscaler: 1.17, retail: 1.78}",
                                "usd-per-gpu-hour: {retail: 1.78}\n    usd-per-node-hour: {hyperscaler: 9.36}"))
    model = load_cost_model(f)
    assert model.skus["h100"].prices["hyperscaler"].unit == "node-hour"
    known = point_cost(agg("h100-cw", 1000.0, 200.0, 1, gpus_per_node=8), model, sku_of=SKU_OF)
    assert known.usd_per_gpu_hour.value == pytest.approx(9.36 / 8) and known.cost().value == pytest.approx(1.17 / 3.6)
    unknown = point_cost(agg("h100-cw", 1000.0, 200.0, 1), model, sku_of=SKU_OF)
    assert unknown.cost().value is None and "GPUs per node" in unknown.cost().reason


# ------------------------------------------------------------------------------------------- files


_TABLE = """schema: 1
version: test-1
name: a test table
source: hand-written for the tests
date: 2026-11
tiers:
  hyperscaler: owned
  retail: rented
skus:
  h100:
    all-in-kw: 1.37
    usd-per-gpu-hour: {hyperscaler: 1.17, retail: 1.78}
"""

BAD = [
    ("negative", _TABLE.replace("retail: 1.78", "retail: -1.78"), 12, "must be a positive number, got -1.78"),
    ("zero", _TABLE.replace("all-in-kw: 1.37", "all-in-kw: 0"), 11, "must be a positive number, got 0"),
    ("non-numeric", _TABLE.replace("hyperscaler: 1.17", "hyperscaler: '1.17'"), 12,
     "expected a number, got str '1.17'"),
    ("unknown SKU", _TABLE.replace("  h100:", "  h800:"), 10, "unknown SKU 'h800': no hardware card of that name"),
    ("missing tier", _TABLE.replace("{hyperscaler: 1.17, retail: 1.78}", "{hyperscaler: 1.17}"), 12,
     "missing tier 'retail' for SKU h100"),
    ("undeclared tier", _TABLE.replace("retail: 1.78}", "retail: 1.78, spot: 0.9}"), 12,
     "unknown tier 'spot' for SKU h100"),
    ("no source", _TABLE.replace("source: hand-written for the tests\n", ""), 1, "missing required field 'source'"),
    ("bad date", _TABLE.replace("date: 2026-11", "date: last July"), 5, "a date is YYYY-MM or YYYY-MM-DD"),
]


@pytest.mark.parametrize(("case", "text", "line", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_cost_tables_are_one_line_errors_with_file_and_line(tmp_path: Path, case: str, text: str, line: int,
                                                                message: str) -> None:
    from typer.testing import CliRunner

    from infx.cli import _register_all, app

    f = tmp_path / "cost-model.yaml"
    f.write_text(text)
    with pytest.raises(InfxError) as exc:
        load_cost_model(f)
    (d,) = exc.value.diagnostics
    assert (d.file, d.line) == (str(f), line) and message in d.message, str(d)
    _register_all()
    r = CliRunner().invoke(app, ["cost", "show", str(f)])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{f}:{line}:") and message in lines[0]


def test_a_workspace_file_wins_and_can_extend_the_shipped_table(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from infx.analysis.costmodel import default_cost_model_path

    monkeypatch.setenv("INFX_WORKSPACE", str(tmp_path))
    assert default_cost_model_path() == BUILTIN_COST_MODEL
    (tmp_path / "cost-model.yaml").write_text(_TABLE)
    assert load_cost_model().version == "test-1" and list(load_cost_model().skus) == ["h100"]
    (tmp_path / "cost-model.yaml").write_text(
        _TABLE.replace("tiers:\n  hyperscaler: owned\n  retail: rented\n",
                       "extends: builtin\ntiers:\n  reserved: 3-year\n")
        .replace("retail: 1.78}", "retail: 1.78, neocloud: 1.5, reserved: 0.99}"))
    model = load_cost_model()
    assert list(model.tiers) == ["hyperscaler", "neocloud", "retail", "reserved"]
    assert model.skus["h100"].prices["reserved"].value == 0.99 and model.skus["h100"].prices["neocloud"].value == 1.5
    b200 = model.skus["b200"].prices["reserved"]  # inherited: the custom tier is not priced there, with the reason
    assert b200.value is None and "built-in table it extends has no 'reserved' price" in (b200.unpriced or "")
    assert "laid over cost table inferencex-2026-07" in model.label


def test_the_demo_ships_illustrative_cpu_prices() -> None:
    model = load_cost_model(SCAFFOLD_DIR / "cost-model.yaml")
    assert model.illustrative_skus == ["cpu"] and "ILLUSTRATIVE" in model.label and model.default_tier == "retail"
    pc = point_cost(agg("local", 360.0, 60.0, 1), model, sku_of=SKU_OF)
    assert pc.illustrative and pc.cost().value == pytest.approx(0.10 / (360 * 3600 / 1e6), abs=1e-12)
    assert pc.energy_usd_per_mtok.value == pytest.approx(0.15 * 0.15 / (360 * 3600 / 1e6), abs=1e-12)
    assert model.skus["h100"].prices["hyperscaler"].value == 1.17  # the GPU prices are the shipped ones


# ------------------------------------------------------------------------------------------- read time only


def _rows(db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return sorted(((t, *row) for t in tables for row in conn.execute(f"SELECT * FROM {t}")), key=repr)
    finally:
        conn.close()


def test_changing_the_table_changes_the_report_and_no_stored_row(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    _write_run(results, runner="h100-cw")
    monkeypatch.setenv("INFX_WORKSPACE", str(tmp_path))
    (tmp_path / "cost-model.yaml").write_text(_TABLE)
    first = _report(results)
    before = _rows(results / "infx.db")
    (tmp_path / "cost-model.yaml").write_text(_TABLE.replace("hyperscaler: 1.17", "hyperscaler: 2.34")
                                              .replace("version: test-1", "version: test-2"))
    second = _report(results)
    assert _rows(results / "infx.db") == before
    assert "cost table test-1" in first and "cost table test-2" in second and "cost table test-1" not in second
    assert not any("usd" in str(v) or "Mtok" in str(v) for row in before for v in row)  # no price in any row
    # the aggregated h100 points' price doubled, so every $/Mtok shown for them doubled
    import re

    def cell(page: str) -> float:
        m = re.search(r"<td><code>dsv41flash_tp8_conc4_1024_1024</code></td>.*?\$([0-9.,]+)<br><small>all GPUs", page)
        assert m is not None
        return float(m.group(1).replace(",", ""))

    assert cell(second) == pytest.approx(2 * cell(first), rel=1e-3)


# ------------------------------------------------------------------------------------------- compare, status


def test_compare_cost_reads_tokens_per_dollar_at_equal_interactivity(tmp_path: Path) -> None:
    from infx.analysis.dataset import load_measured
    from infx.results.store import Store

    _write_run(tmp_path)
    with Store(tmp_path / "infx.db") as st:
        st.ingest_dir(tmp_path)
        measured = load_measured(st, gpus_per_node=lambda run, runner: 8)
    table = load_cost_model(BUILTIN_COST_MODEL)
    cs = compare_cost(measured, table, "r1", basis="role")
    assert [c.y_label for c in cs.comparisons] == ["total tokens per $ (hyperscaler)",
                                                   "output tokens per $ on decode GPUs (hyperscaler)",
                                                   "input tokens per $ on prefill GPUs (hyperscaler)"]
    total = cs.comparisons[0]
    for e in total.ladder:
        if e.a is not None:
            assert f"A ${1e6 / e.a:,.4g}/Mtok" in e.note
    # the disaggregated arm (8 GPUs, 4000 tok/s at saturation) gives more tokens per $ than TP=8 (3000 tok/s)
    assert total.a_label == "1xP(TP=2)+1xD(TP=6)" and [r.higher for r in total.ranges] == ["a"], total.verdict
    assert any(v.startswith("caution: per-role output") for v in cs.comparisons[1].verdict)
    assert not any(v.startswith("caution") for v in compare_cost(measured, table, "r1").comparisons[1].verdict)
    assert cs.notes[0].startswith("cost table inferencex-2026-07")
    with pytest.raises(InfxError, match="unknown tier 'spot'"):
        compare_cost(measured, table, "r1", tier="spot")


def test_status_shows_the_cost_of_done_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from infx.sweep.layout import RunDir
    from infx.sweep.status import cost_cell, run_state

    _write_run(tmp_path / "results", runner="h100-cw")
    monkeypatch.setenv("INFX_WORKSPACE", str(tmp_path))
    (tmp_path / "cost-model.yaml").write_text(_TABLE)
    state = run_state(RunDir(tmp_path / "results", "r1"), cost_cell("retail"))
    by_id = {p.point_id: p.cost for p in state.points}
    rd = RunDir(tmp_path / "results", "r1")
    res = rd.read_result("dsv41flash_tp8_conc16_1024_1024")
    assert res is not None
    per_gpu = res.metrics.throughput.total_tok_per_s / 8
    assert by_id["dsv41flash_tp8_conc16_1024_1024"] == f"${1.78 / (per_gpu * 3600 / 1e6):,.4g}/Mtok"
    assert by_id["pd_c16"].startswith("not priced: SKU mi355x is not in test-1")
    with pytest.raises(InfxError, match="unknown tier 'spot'"):
        cost_cell("spot")


def test_cost_view_has_a_hook_for_slo_capacity_results(table) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import dataclass

    from infx.analysis.cost import cost_at_slo

    @dataclass
    class Capacity:  # the shape the SLO/capacity search hands over
        slo: str
        point_id: str
        run_id: str

    pc = point_cost(agg("h100-cw", 8000.0, 2000.0, 8), table, sku_of=SKU_OF).model_copy(update={"run_id": "r"})
    (got,) = cost_at_slo([Capacity("interactive", "p", "r")], {("r", "p"): pc}, "hyperscaler")
    assert got.usd_per_mtok.value == pytest.approx(0.325, abs=1e-9) and got.slo == "interactive"
    view = cost_view([], table, sku_of=SKU_OF)
    assert view.slo == [] and "no capacity results" in view.slo_note


def test_cli_compare_cost_and_cost_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import csv
    import io

    from typer.testing import CliRunner

    from infx.cli import _register_all, app

    _register_all()
    results = tmp_path / "results"
    _write_run(results)
    monkeypatch.setenv("INFX_WORKSPACE", str(tmp_path))
    run = CliRunner()
    r = run.invoke(app, ["compare", str(results), "--metric", "cost", "--basis", "role", "--json"])
    assert r.exit_code == 0, r.output
    assert '"y_label": "output tokens per $ on decode GPUs (hyperscaler)"' in r.output
    r = run.invoke(app, ["compare", str(results), "--metric", "cost", "--tier", "spot"])
    assert r.exit_code == 2 and "unknown tier 'spot'" in r.output
    r = run.invoke(app, ["cost", "export", str(results), "--tier", "neocloud"])
    assert r.exit_code == 0, r.output
    head, *body = r.output.splitlines()
    assert head.startswith("# cost table inferencex-2026-07") and head.endswith("tier neocloud")
    rows = list(csv.DictReader(io.StringIO("\n".join(body))))
    pd = next(row for row in rows if row["point_id"] == "pd_c16")
    assert (pd["prefill_gpus"], pd["decode_gpus"], pd["usd_per_gpu_hour"]) == ("2", "6", "2.09")
    assert float(pd["usd_per_mtok_output_all"]) == pytest.approx(float(pd["usd_per_mtok_output_role"]) * 8 / 6)
    assert float(pd["tokens_per_usd_output_role"]) == pytest.approx(1e6 / float(pd["usd_per_mtok_output_role"]))
    assert pd["not_priced"] == "" and pd["on_cost_frontier"] in ("True", "False")


def test_infx_toml_can_move_the_cost_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFX_WORKSPACE", str(tmp_path))
    (tmp_path / "infx.toml").write_text('[paths]\ncost-model = "prices/table.yaml"\n')
    (tmp_path / "prices").mkdir()
    (tmp_path / "prices" / "table.yaml").write_text(_TABLE)
    (tmp_path / "cost-model.yaml").write_text(_TABLE.replace("version: test-1", "version: ignored"))
    assert load_cost_model().version == "test-1"


@pytest.mark.parametrize("prefill,decode,total,output", [(1, 1, 100.0, 1.0), (3, 13, 5e4, 4.9e4), (8, 2, 7.0, 3.5),
                                                        (16, 48, 123456.0, 2345.0)])
def test_the_role_basis_always_adds_up_and_the_all_basis_never_does(table, prefill, decode, total,
                                                                     output) -> None:  # type: ignore[no-untyped-def]
    pc = point_cost(agg("b300-nv", total, output, 8, prefill_gpus=prefill, decode_gpus=decode), table, "neocloud",
                    sku_of=SKU_OF)
    cost_per_s = 2.52 * (prefill + decode) / 3600  # $/s of the whole deployment, by hand
    role = (pc.cost("input", "role").value * (total - output) + pc.cost("output", "role").value * output) / 1e6
    assert role == pytest.approx(cost_per_s, rel=1e-12)
    assert pc.cost().value * total / 1e6 == pytest.approx(cost_per_s, rel=1e-12)  # type: ignore[operator]
    every = (pc.cost("input", "all").value * (total - output) + pc.cost("output", "all").value * output) / 1e6
    assert every == pytest.approx(2 * cost_per_s, rel=1e-12)


def test_report_and_compare_refuse_a_bad_workspace_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from infx.cli import _register_all, app

    _register_all()
    results = tmp_path / "results"
    _write_run(results)
    monkeypatch.setenv("INFX_WORKSPACE", str(tmp_path))
    bad = tmp_path / "cost-model.yaml"
    bad.write_text(_TABLE.replace("retail: 1.78", "retail: cheap"))
    for argv in (["report", str(results), "-o", str(tmp_path / "r.html")],
                 ["compare", str(results), "--metric", "cost"]):
        r = CliRunner().invoke(app, argv)
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith(f"{bad}:12:"), r.output
    assert not (tmp_path / "r.html").exists()


def _write_search(root: Path, name: str, template: str, max_conc: int | None, tier: str = "interactive") -> None:
    import json

    from infx.loadgen.search import Probe, SearchResult

    res = SearchResult(tier=tier, slo={"ttft_p95_ms": 500.0}, max_conc=max_conc,
                       first_miss=None if max_conc is None else max_conc * 2, stop_reason="converged",
                       probes=[Probe(conc=max_conc or 1, met=max_conc is not None)])
    d = root / "r1" / "search"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.json").write_text(json.dumps({"template_point": template, **res.model_dump(mode="json")}))


def test_cost_at_slo_prices_the_capacity_searches(tmp_path: Path, table,  # type: ignore[no-untyped-def]
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`infx run --search max-concurrency --slo TIER` leaves RUN/search/<launch>.json: the report and
    `infx compare --metric cost` price the measured point of that launch at the largest concurrency
    not above the capacity found; a tier nothing met, or a capacity below every measured point, is left out."""
    from typer.testing import CliRunner

    from infx.analysis.capacity import capacity_results
    from infx.analysis.dataset import load_measured
    from infx.cli import _register_all, app
    from infx.results.store import Store

    root = tmp_path / "results"
    _write_run(root)
    tp8 = make_point(8, 4, isl=1024, osl=1024, runner="cluster:mi355x-amds").point_id
    _write_search(root, "launch-a", tp8, 40)  # between conc 16 and 64: conc 16 stands for it
    _write_search(root, "launch-b", tp8, 2, tier="strict")  # below every measured concurrency
    _write_search(root, "launch-c", tp8, None, tier="impossible")  # nothing met it
    with Store(root / "infx.db") as st:
        st.ingest_dir(root)
        measured = load_measured(st)
    (at,) = capacity_results(root, ["r1"], measured)
    assert (at.slo, at.conc, at.max_conc) == ("interactive", 16, 40)
    point16 = next(m for m in measured if m.point_id == at.point_id)
    assert point16.arm.topology == "TP=8" and point16.conc == 16
    view = cost_view(measured, table, "hyperscaler", sku_of=SKU_OF, capacity=[at])
    (sc,) = view.slo
    expected = point_cost(inputs_of_measured(point16), table, "hyperscaler", sku_of=SKU_OF).cost().value
    assert sc.usd_per_mtok.value == pytest.approx(expected) and sc.point_id == at.point_id
    html = _report(root, results_root=root)
    assert 'id="cost-slo"' in html and at.point_id in html.split('id="cost-slo"')[1]
    _register_all()
    monkeypatch.setenv("INFX_WORKSPACE", str(tmp_path))
    r = CliRunner().invoke(app, ["compare", str(root), "--metric", "cost", "--tier", "hyperscaler"])
    assert r.exit_code in (0, 1), r.output
    line = next(x for x in r.output.splitlines() if "cost at SLO tier" in x)
    assert "'interactive'" in line and f"${expected:,.4g}/Mtok" in line and "max users at tier 40" in line
    assert "'strict'" not in r.output.split("cost at SLO tier")[-1]


def inputs_of_measured(m):  # type: ignore[no-untyped-def]
    from infx.analysis.cost import inputs_of

    return inputs_of(m)
