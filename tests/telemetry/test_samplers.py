"""The sampler loops against fake ``nvidia-smi``/``amd-smi`` executables on PATH (no GPU can exist here),
a fake powercap tree for RAPL, and real ``/metrics`` text shapes for the engine-state parser."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from infx.engine_metrics import EngineStateSample, parse_metrics
from infx.telemetry import rapl
from infx.telemetry.energy import check_window, validate_power
from infx.telemetry.engine_state import EngineStateScraper, summarise
from infx.telemetry.gpu import AmdSmiFilter, AmdSmiSampler, NvidiaSmiSampler, detect_tool
from infx.telemetry.models import BenchWindow
from tests.telemetry.powerfiles import install_fake_tools


@pytest.fixture
def fake_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = install_fake_tools(tmp_path / "bin", ("nvidia-smi", "amd-smi"))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return bin_dir


def window(start: float, end: float) -> BenchWindow | None:
    return check_window(start, end, end - start, 10, 100, 100).window


def test_missing_tool_is_a_warning(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    tool, warning = detect_tool("auto")
    assert tool == "none" and warning and "nvidia-smi" in warning
    assert detect_tool("none") == ("none", None)


def test_nvidia_smi_loop(fake_tools: Path, tmp_path: Path) -> None:
    out = tmp_path / "gpu_metrics.csv"
    s = NvidiaSmiSampler(out, devices=["0", "1"], interval_s=1.0)
    s.start()
    time.sleep(0.3)
    start = time.time()
    time.sleep(1.5)
    end = time.time()
    s.stop()  # kill mid-line, drop that line, append one one-shot sample after the end
    text = out.read_text()
    assert text.endswith(" %\n") and text.count("timestamp") == 1
    v = validate_power(out, check_window(start, end, end - start, 10, 100, 100), 2)
    assert v.power_valid, v.reasons
    assert v.per_gpu_energy_j["0"] == pytest.approx(100 * (end - start), rel=1e-6)
    assert v.per_gpu_energy_j["1"] == pytest.approx(110 * (end - start), rel=1e-6)


def test_nvidia_smi_samples_only_the_points_devices(fake_tools: Path, tmp_path: Path) -> None:
    out = tmp_path / "gpu_metrics.csv"
    s = NvidiaSmiSampler(out, devices=["3"], interval_s=1.0)
    s.start()
    time.sleep(0.5)
    s.stop()
    ids = {line.split(",")[1].strip() for line in out.read_text().splitlines()[1:]}
    assert ids == {"3"}


def test_stop_lets_the_loop_write_a_sample_after_the_window(tmp_path: Path) -> None:
    from infx.telemetry.gpu import wait_next_rows

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("header\n")
    b.write_text("header\n")

    def later() -> None:
        time.sleep(0.3)
        a.write_text("header\nrow\n")
        time.sleep(0.2)
        b.write_text("header\nrow\n")

    th = threading.Thread(target=later)
    th.start()
    wait_next_rows([a, b], timeout_s=30)
    assert a.read_text().count("row") == 1 and b.read_text().count("row") == 1  # returned after both grew
    th.join()
    t0 = time.monotonic()
    wait_next_rows([a], timeout_s=0.3)  # a loop that writes nothing more: given up, not hung
    assert time.monotonic() - t0 >= 0.3


def test_amd_smi_filter_keeps_first_header_only() -> None:
    import io

    sink = io.StringIO()
    f = AmdSmiFilter(sink)
    for line in ["WARNING: preamble\n", "\n", "timestamp,gpu,socket_power\n", "1767225600,0,500\n",
                 "timestamp,gpu,socket_power\n", "1767225601,0,510\n", "1767225602,0,5"]:
        f.feed(line)
    assert sink.getvalue() == "timestamp,gpu,socket_power\n1767225600,0,500\n1767225601,0,510\n"


def test_amd_smi_loop(fake_tools: Path, tmp_path: Path) -> None:
    out = tmp_path / "gpu_metrics.csv"
    s = AmdSmiSampler(out, devices=["0", "1"], interval_s=1.0)  # default settle: interval + 2 s (whole-second stamps)
    s.start()
    time.sleep(1.2)
    start = time.time()
    time.sleep(1.0)
    end = time.time()
    s.stop()
    lines = out.read_text().splitlines()
    assert lines[0].startswith("timestamp,") and sum(line.startswith("timestamp") for line in lines) == 1
    v = validate_power(out, check_window(start, end, end - start, 10, 100, 100), 2)
    assert v.power_valid, v.reasons
    assert v.per_gpu_energy_j["1"] == pytest.approx(110 * (end - start), rel=1e-6)


def test_amd_smi_start_waits_for_its_own_first_row_not_an_old_file(fake_tools: Path, tmp_path: Path) -> None:
    out = tmp_path / "gpu_metrics.csv"
    out.write_text("timestamp,gpu,socket_power\n1500000000,0,999\n")  # a retried point's earlier loop
    s = AmdSmiSampler(out, devices=["0"], interval_s=1.0, settle_s=0.0)  # only the start is judged here
    s.start()
    try:
        text = out.read_text()
        assert "1500000000" not in text and text.count("\n") >= 2  # the header and this loop's first row
    finally:
        s.stop()


# --------------------------------------------------------------------------- RAPL


def powercap_tree(root: Path, zones: dict[str, tuple[str, int, int]]) -> None:
    """zones: dir name -> (name, energy_uj, max_energy_range_uj)."""
    for d, (name, energy, max_range) in zones.items():
        z = root / d
        z.mkdir(parents=True)
        (z / "name").write_text(name + "\n")
        (z / "energy_uj").write_text(f"{energy}\n")
        (z / "max_energy_range_uj").write_text(f"{max_range}\n")


def test_package_zones_skip_subzones(tmp_path: Path) -> None:
    powercap_tree(tmp_path, {"intel-rapl:0": ("package-0", 5, 1000), "intel-rapl:0:0": ("core", 3, 1000),
                             "intel-rapl:1": ("package-1", 7, 1000), "intel-rapl:2": ("psys", 9, 1000)})
    assert [z.name for z in rapl.package_zones(tmp_path)] == ["package-0", "package-1"]
    assert rapl.package_zones(tmp_path / "absent") == []


def test_wrap_around_hand_computed(tmp_path: Path) -> None:
    # range 1 J; 0.9 J -> 0.1 J is a wrap (+0.2 J), then +0.2 J: cumulative 0, 0.2, 0.4 J at t = 0, 1, 2
    csv_path = tmp_path / "cpu_energy.csv"
    csv_path.write_text(rapl.HEADER + "100.0,package-0,900000,1000000\n101.0,package-0,100000,1000000\n"
                        "102.0,package-0,300000,1000000\n100.0,package-1,0,1000000\n102.0,package-1,500000,1000000\n")
    e = rapl.cpu_energy(csv_path, window(100.5, 101.5))
    assert e.valid, e.reasons
    # package-0: 0.1 -> 0.3 J; package-1: 0.125 -> 0.375 J (interpolated)
    assert e.per_zone_energy_j == pytest.approx({"package-0": 0.2, "package-1": 0.25})
    assert e.cpu_energy_j == pytest.approx(0.45) and e.cpu_avg_power_w == pytest.approx(0.45)
    assert e.cpu_joules_per_output_token == pytest.approx(0.0045)
    series = rapl.power_series(csv_path)["package-0"]
    assert [t for t, _ in series] == [100.5, 101.5] and [w for _, w in series] == pytest.approx([0.2, 0.2])


def test_rapl_validity(tmp_path: Path) -> None:
    csv_path = tmp_path / "cpu_energy.csv"
    csv_path.write_text(rapl.HEADER + "100.0,package-0,0,1000000\n104.0,package-0,1,1000000\n")
    assert rapl.cpu_energy(csv_path, window(100.5, 101.5)).reasons == ["sampling_gap_exceeded"]
    assert rapl.cpu_energy(csv_path, window(99.0, 101.5)).reasons == ["benchmark_window_not_bracketed"]
    csv_path.write_text(rapl.HEADER + "100.0,package-0,0,1000000\n")
    assert rapl.cpu_energy(csv_path, window(100.5, 101.5)).reasons == ["insufficient_energy_samples"]
    missing = rapl.cpu_energy(tmp_path / "none.csv", window(100.5, 101.5))
    assert not missing.valid and missing.reasons == ["powercap_missing"] and missing.cpu_energy_j is None


def test_rapl_sampler_on_a_fake_tree(tmp_path: Path) -> None:
    """A writer thread plays a package drawing 50 W whose 200 J counter wraps during the window."""
    root = tmp_path / "powercap"
    powercap_tree(root, {"intel-rapl:0": ("package-0", 0, 200_000_000)})
    energy_file = root / "intel-rapl:0" / "energy_uj"
    stop = threading.Event()
    t_origin = time.time()

    def writer() -> None:  # 50 W, counter range 200 J: wraps every 4 s
        while not stop.is_set():
            tmp = energy_file.with_suffix(".tmp")  # sysfs reads are atomic: never show a half-written value
            tmp.write_text(f"{int((time.time() - t_origin) * 50e6 + 150e6) % 200_000_000}\n")
            os.replace(tmp, energy_file)
            time.sleep(0.01)

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    deadline = time.monotonic() + 10  # the writer has replaced the tree's initial 0 (else a bogus 150 J jump)
    while energy_file.read_text().strip() == "0" and time.monotonic() < deadline:
        time.sleep(0.01)
    s = rapl.RaplSampler(tmp_path / "cpu_energy.csv", root, interval_s=0.1)
    s.start()
    time.sleep(0.2)
    start = time.time()
    time.sleep(1.5)  # the counter wraps (150 J + 50 W x 1 s passes 200 J)
    end = time.time()
    s.stop()
    stop.set()
    th.join()
    e = rapl.cpu_energy(tmp_path / "cpu_energy.csv", window(start, end))
    assert e.valid, e.reasons
    assert e.cpu_avg_power_w == pytest.approx(50.0, rel=0.15)  # a missed wrap would be off by 133 W


# --------------------------------------------------------------------------- engine state

VLLM_PAGE = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tinyllama"} 7.0
vllm:num_requests_running{engine="1",model_name="tinyllama"} 1.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="tinyllama"} 3.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="tinyllama"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="tinyllama"} 0.5
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="tinyllama"} 2.0
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="tinyllama"} 1000.0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="tinyllama"} 600.0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="tinyllama"} 1200.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="tinyllama"} 300.0
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="tinyllama"} 3.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="tinyllama"} 121.0
vllm:request_success_created{engine="0",finished_reason="stop",model_name="tinyllama"} 1.7e9
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="tinyllama"} 0.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="tinyllama"} 4.0
"""
SGLANG_PAGE = """# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 5.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 2.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.4
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} 800.0
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{model_name="m"} 200.0
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} 90.0
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="m"} 17.0
"""


def test_vllm_page() -> None:
    s = parse_metrics(VLLM_PAGE, 1.0)
    assert (s.running, s.waiting, s.kv_usage, s.preemptions) == (8.0, 3.0, 0.5, 2.0)
    assert (s.prefix_queries, s.prefix_hits, s.prompt_tokens, s.generation_tokens) == (1000, 600, 1200, 300)
    assert s.requests_finished == 124.0  # summed over finish reasons; the _created series is not a count


def test_sglang_page() -> None:
    s = parse_metrics(SGLANG_PAGE, 1.0)
    assert (s.running, s.waiting, s.kv_usage) == (5.0, 2.0, 0.4)
    assert (s.prefix_hits, s.prefix_queries, s.generation_tokens, s.requests_finished) == (200, 800, 90, 17)


def test_latest_sample_is_the_last_whole_line(tmp_path: Path) -> None:
    out = tmp_path / "engine_state.jsonl"
    scraper = EngineStateScraper("http://127.0.0.1:1/metrics", out)
    assert scraper.latest() is None  # nothing scraped yet
    lines = [EngineStateSample(t=float(i), generation_tokens=10.0 * i).model_dump_json() for i in range(400)]
    out.write_text("\n".join(lines) + "\n" + lines[-1][:17])  # longer than the tail read; a line half written
    assert scraper.latest() == EngineStateSample(t=399.0, generation_tokens=3990.0)


def test_live_rates_follow_the_samples() -> None:
    from infx.sweep.local import MetricsPoller, live_rates

    a = EngineStateSample(t=10.0, requests_finished=4, generation_tokens=100)
    b = EngineStateSample(t=12.0, requests_finished=10, generation_tokens=500)
    r = live_rates(a, b)
    assert (r.req_per_s, r.tok_per_s) == (3.0, 200.0)
    assert live_rates(b, a.model_copy(update={"t": 13.0})).tok_per_s == 0.0  # a restarted counter: no negative rate
    # the poller reports once per new sample: a repeated sample (the scraper has not written yet) is skipped
    feed = [a, a, b, b, None, EngineStateSample(t=13.0, requests_finished=11, generation_tokens=600)]
    seen: list = []
    done = threading.Event()

    def sample():
        if len(feed) == 1:
            done.set()
        return feed.pop(0) if len(feed) > 1 else feed[0]

    poller = MetricsPoller(sample, seen.append, every=0.001)
    poller.start()
    assert done.wait(10)
    poller.stop()
    assert [(s.req_per_s, s.tok_per_s) for s in seen] == [(3.0, 200.0), (1.0, 100.0)]


def test_summary_over_the_window() -> None:
    samples = [EngineStateSample(t=9.5, running=0, kv_usage=0.0, prefix_queries=100, prefix_hits=10),
               EngineStateSample(t=10.5, running=8, kv_usage=0.3, prefix_queries=300, prefix_hits=110),
               EngineStateSample(t=11.5, running=6, kv_usage=0.5, prefix_queries=500, prefix_hits=250),
               EngineStateSample(t=12.2, running=0, kv_usage=0.0, prefix_queries=600, prefix_hits=310)]
    s = summarise(samples, window(10.0, 12.0))
    assert s.samples == 4 and s.samples_in_window == 2
    assert (s.running_mean, s.running_max, s.kv_usage_max) == (7.0, 8.0, 0.5)
    assert (s.prefix_queries, s.prefix_hits) == (500, 300) and s.prefix_cache_hit_rate == pytest.approx(0.6)
    unbracketed = summarise(samples[1:], window(10.0, 12.0))
    assert unbracketed.prefix_queries is None and unbracketed.prefix_cache_hit_rate is None
    # a scrape sent before the start but served after it may hold measured work: not the 'before' value;
    # one sent before the end is not the 'after' value, however late it arrived
    straddling = [samples[0], EngineStateSample(t=9.99, t_done=10.05, generation_tokens=40, prefix_queries=150),
                  EngineStateSample(t=11.99, t_done=12.1, prefix_queries=590), samples[3]]
    samples[0].generation_tokens, samples[3].generation_tokens = 0, 100
    s = summarise(straddling, window(10.0, 12.0))
    assert (s.prefix_queries, s.generation_tokens) == (500, 100)
