"""Telemetry through the store (migration 4), ``infx compare --metric energy`` (output tokens per joule
between arms at equal interactivity) and the report (energy frontier, per-point time series)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from infx.engine_metrics import EngineStateSample
from infx.results.layout import ResultsDir
from infx.results.store import Store
from infx.telemetry.engine_state import ENGINE_STATE_FILE
from infx.telemetry.session import GPU_FILE


def add_telemetry(results: ResultsDir, run_id: str, j_per_tok: dict[int, float]) -> int:
    """Give the run's done points telemetry: J/output token by tensor parallelism (TP=2 spends less), with
    sample files for the time series. Returns how many points got it."""
    n = 0
    for pid in results.points(run_id):
        path = results.file(run_id, pid, "result.json")
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        tp = data["point"]["tp"]
        start = data["started_at"]
        power = {"power_metric_schema_version": 2, "power_valid": 1, "joules_per_output_token": j_per_tok[tp],
                 "total_gpu_energy_j": 1000.0, "avg_power_w": 500.0}
        data["extra"]["telemetry"] = {"gpu_tool": "nvidia-smi", "expected_gpu_count": tp, "power": power,
                                      "power_reasons": [], "engine": {"samples": 3, "samples_in_window": 1,
                                                                      "running_mean": 7.5, "running_max": 8.0}}
        data["extra"]["clock"] = {"monotonic_ns": 0, "unix_ns": int(start * 1e9), "window_ns": [0, 2_000_000_000]}
        path.write_text(json.dumps(data))
        d = path.parent
        (d / GPU_FILE).write_text("timestamp, index, power.draw [W]\n" + "".join(
            f"{start + t}, {g}, {400 + t} W\n" for t in range(-1, 4) for g in range(tp)))
        (d / ENGINE_STATE_FILE).write_text("".join(
            EngineStateSample(t=start + t, running=8, waiting=t, kv_usage=0.1 * t).model_dump_json() + "\n"
            for t in range(-1, 4)))
        n += 1
    return n


def _app():  # the store and show stages' commands, as infx.cli registers them
    import typer

    from infx.report.cli import register as register_show
    from infx.results.cli import register as register_store

    app = typer.Typer()
    register_store(app)
    register_show(app)
    return app


def test_store_compare_and_report(seed_results: ResultsDir, tmp_path: Path) -> None:
    app = _app()
    assert add_telemetry(seed_results, "pr-1234", {2: 0.5, 4: 1.0}) > 0
    res = CliRunner().invoke(app, ["ingest", str(seed_results.root)])
    assert res.exit_code == 0, res.output
    with Store(seed_results.db_path, readonly=True) as st:
        rows = st.conn.execute("SELECT joules_per_output_token, running_max FROM telemetry "
                               "WHERE run_id='pr-1234'").fetchall()
    assert rows and {r[1] for r in rows} == {8.0} and {r[0] for r in rows} == {0.5, 1.0}

    res = CliRunner().invoke(app, ["compare", str(seed_results.root), "--run", "pr-1234", "-a", "tp=2", "-b", "tp=4",
                                   "--metric", "energy", "--json"])
    assert res.exit_code == 0, res.output
    cs = json.loads(res.output)
    (c,) = cs["comparisons"]
    assert "output tokens per joule" in c["y_label"]
    ratios = [r for rg in c["ranges"] for r in (rg["ratio_min"], rg["ratio_max"]) if r is not None]
    assert ratios and all(abs(r - 2.0) < 1e-9 for r in ratios)  # TP=2 gives 2x the tokens per joule

    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", str(seed_results.root), "-o", str(out), "--run", "pr-1234"])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert "Output tokens per joule vs interactivity" in html
    assert 'id="telemetry"' in html and "power and engine state over time" in html and 'id="telemetry-0"' in html

