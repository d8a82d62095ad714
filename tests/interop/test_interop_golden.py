"""The exported files checked field by field against the spec (§3 agg, §4 raw client) on a point
whose every figure is chosen by hand, and against the checked-in golden files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infx.interop.export import agg, raw_client
from infx.interop.formats import AggResult, RawClientResult
from infx.matrix.point import Point
from infx.metrics.result import BenchResult, Metrics, Stat, Throughput
from tests.interop.helpers import fixed_point, multinode_point

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "interop"


def stat(base: float) -> Stat:
    return Stat(mean=base * 1.1, median=base, std=base * 0.5, p90=base * 2, p99=base * 4, p999=base * 8, count=10)


def hand_result(power: dict | None = None) -> BenchResult:
    thr = Throughput(duration_s=100.0, request_per_s=2.0, output_tok_per_s=1000.0, input_tok_per_s=7000.0,
                     total_tok_per_s=8000.0, goodput_req_per_s=None)
    m = Metrics(issued=200, completed=200, failed=0, success_rate=1.0, total_input_tokens=700_000,
                total_output_tokens=100_000, ttft_ms=stat(250.0), tpot_ms=stat(20.0), itl_ms=stat(19.0),
                e2el_ms=stat(2000.0), queue_delay_ms=stat(1.0), throughput=thr)
    return BenchResult(started_at=1_700_000_000.0, ended_at=1_700_000_100.0,
                       config={"max_concurrency": 16, "endpoint": "completions"}, metrics=m,
                       extra={"power": power} if power else {})


def single() -> Point:
    return Point.from_row(fixed_point(4, 16).to_row() | {"tp": 2, "pp": 2, "pcp-size": 1, "dcp-size": 2, "ep": 4,
                                                         "dp-attn": True})


def test_raw_client_keys_and_units() -> None:
    raw = raw_client(single(), hand_result())
    RawClientResult.model_validate(raw)
    assert raw["request_goodput:"] is None and "request_goodput" not in raw  # the key keeps its colon
    assert raw["request_rate"] == "inf" and raw["max_concurrency"] == 16 and raw["duration"] == 100.0
    assert raw["benchmark_start_time_unix"] == 1_700_000_000.0 and raw["benchmark_end_time_unix"] == 1_700_000_100.0
    assert raw["total_token_throughput"] == 8000.0 and raw["output_throughput"] == 1000.0
    assert raw["median_ttft_ms"] == 250.0 and raw["p99.9_ttft_ms"] == 2000.0 and raw["std_tpot_ms"] == 10.0
    assert [k for k in raw if k.endswith("_ms")][:6] == [
        "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p90_ttft_ms", "p99_ttft_ms", "p99.9_ttft_ms"]


def test_single_node_agg_by_hand() -> None:
    a = agg(single(), hand_result())
    # N_gpu = TP x PP x PCP = 4 (EP, DCP and DP-attention add none)
    assert a["tput_per_gpu"] == 2000.0 and a["output_tput_per_gpu"] == 250.0 and a["input_tput_per_gpu"] == 1750.0
    assert (a["tp"], a["pp"], a["dcp_size"], a["pcp_size"], a["ep"], a["dp_attention"]) == (2, 2, 2, 1, 4, "true")
    assert a["is_multinode"] is False and a["disagg"] is False and a["conc"] == 16
    assert a["median_ttft"] == 0.25 and a["p99.9_e2el"] == 16.0  # seconds
    assert a["median_intvty"] == 50.0 and a["p99_intvty"] == 1000.0 / 80.0 and a["std_intvty"] == 100.0
    assert "duration" not in a and "total_input_tokens" not in a and "request_throughput" not in a
    assert a["power_metric_schema_version"] == 2 and a["power_valid"] == 0 and "avg_power_w" not in a
    AggResult.model_validate(a)


def test_power_keys_by_hand() -> None:
    a = agg(single(), hand_result({"power_valid": True, "total_gpu_energy_j": 123456.7891, "gpu_count": 4}))
    assert a["power_valid"] == 1 and a["power_metric_schema_version"] == 2
    assert a["total_gpu_energy_j"] == 123456.789  # _j/_w: 3 dp
    assert a["avg_total_gpu_power_w"] == 1234.568 and a["avg_power_w"] == 308.642
    assert a["joules_per_output_token"] == 1.234568  # 6 dp, whole-deployment energy
    assert a["joules_per_input_token"] == round(123456.7891 / 700_000, 6)
    assert a["joules_per_total_token"] == round(123456.7891 / 800_000, 6)
    assert a["joules_per_successful_query"] == round(123456.7891 / 200, 6)
    invalid = agg(single(), hand_result({"power_valid": False, "total_gpu_energy_j": 5.0, "gpu_count": 4}))
    assert invalid["power_valid"] == 0 and "total_gpu_energy_j" not in invalid


def test_multinode_agg_by_hand() -> None:
    p = multinode_point(16)  # prefill 1 x TP4 = 4 GPUs, decode 2 x TP8 = 16 GPUs
    a = agg(p, hand_result({"power_valid": True, "total_gpu_energy_j": 20000.0, "gpu_count": 20,
                            "prefill_gpu_energy_j": 4000.0, "decode_gpu_energy_j": 16000.0}))
    assert (a["num_prefill_gpu"], a["num_decode_gpu"]) == (4, 16)
    assert a["tput_per_gpu"] == 8000.0 / 20 and a["output_tput_per_gpu"] == 1000.0 / 16
    assert a["input_tput_per_gpu"] == 7000.0 / 4
    assert (a["prefill_tp"], a["decode_tp"], a["decode_ep"], a["decode_dp_attention"]) == (4, 8, 8, "true")
    assert a["disagg"] is True and a["router"] == {"name": "sglang-router", "version": "0.3.2"}
    assert a["kv_p2p_transfer"] == "mori" and "tp" not in a
    assert a["prefill_avg_power_w"] == 10.0 and a["decode_avg_power_w"] == 10.0  # J / 100 s / role GPUs
    assert a["prefill_joules_per_input_token"] == round(4000.0 / 700_000, 6)
    assert a["decode_joules_per_output_token"] == 0.16 and a["avg_power_w"] == 10.0
    no_decode = agg(multinode_point(16, decode_workers=0), hand_result())
    assert no_decode["decode_tp"] == 0 and no_decode["decode_ep"] == 0 and no_decode["decode_pp"] == 1
    assert no_decode["output_tput_per_gpu"] == 1000.0 / 4  # all GPUs when there is no decode role


@pytest.mark.parametrize("name", ["single", "multinode"])
def test_golden_files(name: str) -> None:
    point = single() if name == "single" else multinode_point(16, hardware=True)
    power = {"power_valid": True, "total_gpu_energy_j": 98765.4321, "gpu_count": point.gpus_per_server}
    if name == "multinode":
        power |= {"prefill_gpu_energy_j": 20000.0, "decode_gpu_energy_j": 78765.4321}
    result = hand_result(power)
    golden = json.loads((GOLDEN / f"agg_{name}.json").read_text())
    ours = agg(point, result)
    for key, value in golden.items():
        assert ours.get(key) == value, f"{key}: {ours.get(key)!r} != golden {value!r}"
    assert list(ours) == list(golden)
    golden_raw = json.loads((GOLDEN / f"raw_{name}.json").read_text())
    assert raw_client(point, result) == golden_raw


def test_refusals() -> None:
    agentic = Point.from_row({**fixed_point(4, 16).to_row(), "scenario-type": "agentic-coding"} | {"isl": None})
    with pytest.raises(ValueError, match="agentic"):
        agg(agentic, hand_result())
    one = hand_result()
    one.metrics.tpot_ms.std = 0.0
    with pytest.raises(ValueError, match="std TPOT"):
        agg(single(), one)
