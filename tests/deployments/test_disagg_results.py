"""Disaggregated points through the real store and report: GPUs per role stored (migration 5), per-role
per-GPU figures, and the report's aggregated-vs-disaggregated comparison at equal GPU count."""

from __future__ import annotations

import random
from pathlib import Path

from infx.analysis.dataset import load_measured
from infx.matrix.point import Point
from infx.results.layout import PointStatus, ResultsDir, write_point_outcome
from infx.results.store import Store
from infx.results.synthetic import Arm, make_manifest, make_point, make_result


def _disagg_point(conc: int) -> Point:
    worker = {"tp": 4, "ep": 1, "dp-attn": False}
    return Point.from_row({
        "image": "img", "model": "deepseek-ai/DeepSeek-V4.1-Flash", "model-prefix": "dsv41flash", "precision": "fp4",
        "framework": "dynamo-vllm", "runner": "cluster:mi355x-amds", "isl": 1024, "osl": 1024,
        "max-model-len": 2304, "prefill": {"num-worker": 1, **worker}, "decode": {"num-worker": 1, **worker},
        "conc": [conc], "disagg": True, "kv-p2p-transfer": "nixl", "exp-name": f"pd_c{conc}",
        "point-id": f"pd_c{conc}"})


def test_store_and_report_normalise_per_role(tmp_path: Path) -> None:
    from infx.report.data import load_report_data

    results = ResultsDir(tmp_path)
    results.write_manifest(make_manifest("r1"))
    rng = random.Random(0)
    for c in (4, 16, 64):
        for point, arm in ((make_point(8, c, isl=1024, osl=1024), Arm(tp=8, t_max=3000.0, c_half=40.0)),
                           (_disagg_point(c), Arm(tp=8, t_max=4000.0, c_half=40.0))):
            result = make_result(point, arm, rng=rng)
            if point.multinode:  # the result's own conc (multinode rows carry a list)
                result = result.model_copy(update={"config": result.config.model_copy(update={"max_concurrency": c})})
            write_point_outcome(results, "r1", point, PointStatus(state="done", launch_fingerprint=point.point_id),
                                result)
    with Store(results.db_path) as st:
        st.ingest_dir(results.root)
        rows = st.conn.execute("SELECT point_id, prefill_gpus, decode_gpus, disagg, gpus_per_server FROM points "
                               "ORDER BY point_id").fetchall()
        measured = load_measured(st, gpus_per_node=lambda run, runner: 8)
        data = load_report_data(st, "r1", gpus_per_node=lambda run, runner: 8)
    assert ("pd_c4", 4, 4, 1, 8) in rows and all(r[3] == 0 for r in rows if not r[0].startswith("pd_"))
    pd = next(m for m in measured if m.point_id == "pd_c16")
    assert pd.disagg and pd.throughput("output", "gpu") == pd.output_tok_per_s / 4  # output / decode GPUs
    assert pd.throughput("total", "gpu") == pd.total_tok_per_s / 8  # total / all GPUs
    cs = data.agg_disagg_comparison
    assert cs is not None and len(cs.comparisons) == 1
    assert "TP=8 [vllm]" in cs.comparisons[0].a_label and "disagg" in cs.comparisons[0].b_label
