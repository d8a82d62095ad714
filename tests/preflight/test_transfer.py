"""KV-transfer buffers of disaggregated workers: counted per GPU in the memory check, per connector."""

from __future__ import annotations

import json

import pytest
import yaml
from pfhelpers import hand_launch

from infx.preflight.gate import node_facts
from infx.preflight.launchargs import engine_settings
from infx.preflight.memory import check_memory
from infx.preflight.transfer import COMPONENT, transfer_buffers
from infx.preflight.units import GB, MIB


def _kv(cfg: dict) -> list[str]:
    return ["--kv-transfer-config", json.dumps(cfg, separators=(",", ":"))]


def _memory(p, cards, runners, extra, kv_transfer=True):
    launch = hand_launch(p, offload=False, extra=extra)
    s = engine_settings("vllm", launch.argv, launch.env, capacity_bytes=cards.hardware["mi355x"].memory, point_tp=p.tp)
    return check_memory(p, s, cards.models["dsv41flash"], cards.hardware["mi355x"], node_facts(runners, p.runner),
                        kv_transfer=kv_transfer)


def _transfer(m):
    return [x for x in [*m.gpu, *m.host] if x.component == COMPONENT]


def test_p2p_nccl_buffer_counts_against_the_budget_and_can_fail_a_worker(seed_points, cards, runners):
    p = [x for x in seed_points if x.tp == 4][-1]  # fits with its tables on the GPU
    plain = _memory(p, cards, runners, [], kv_transfer=False)
    assert plain.status == "ok" and not _transfer(plain)
    dflt = _memory(p, cards, runners, _kv({"kv_connector": "P2pNcclConnector", "kv_role": "kv_producer"}))
    (line,) = _transfer(dflt)
    assert line.bytes == 10**9 and line.where == "gpu" and "default kv_buffer_size" in line.note
    assert dflt.needed_bytes - plain.needed_bytes == 10**9
    big = plain.margin_bytes + GB  # one GB more than the worker has left
    over = _memory(p, cards, runners, _kv({"kv_connector": "P2pNcclConnector", "kv_buffer_size": big}))
    assert _transfer(over)[0].bytes == big and over.status == "fail" and over.margin_bytes == pytest.approx(-GB, abs=1)


def test_nixl_registers_the_kv_cache_in_place(seed_points, cards, runners):
    p = [x for x in seed_points if x.tp == 4][-1]
    plain = _memory(p, cards, runners, [], kv_transfer=False)
    m = _memory(p, cards, runners, _kv({"kv_connector": "NixlConnector", "kv_role": "kv_both"}))
    (line,) = _transfer(m)
    assert line.bytes == 0 and "in place" in line.note and m.needed_bytes == plain.needed_bytes
    staged = _memory(p, cards, runners, _kv({"kv_connector": "NixlConnector", "kv_buffer_device": "cpu"}))
    assert not _transfer(staged) and any("host copy as large as the KV cache" in f for f in staged.findings)
    other = _memory(p, cards, runners, _kv({"kv_connector": "LMCacheConnectorV1"}))
    assert any("'LMCacheConnectorV1': transfer buffers not modelled" in f for f in other.findings)


def _trt(cfg: dict):
    files = {"prefill.yaml": yaml.safe_dump({"tensor_parallel_size": 4, "cache_transceiver_config": cfg})}
    return engine_settings("trtllm", ["python3", "-m", "dynamo.trtllm", "--extra-engine-args", "prefill.yaml"], {},
                           point_tp=4, files=files)


def test_trt_transceiver_buffer_is_tokens_times_kv_bytes_plus_bounce_regions():
    lines, found = transfer_buffers(_trt({"backend": "NIXL", "max_tokens_in_buffer": 8192,
                                          "kv_cache_bounce_size_mb": 512}), kv_bytes_per_token=1_000)
    assert [x.bytes for x in lines] == [8192 * 1_000, 2 * 512 * MIB] and not found
    lines, found = transfer_buffers(_trt({"backend": "UCX"}), kv_bytes_per_token=1_000)
    assert not lines and "without max_tokens_in_buffer" in found[0]
    lines, found = transfer_buffers(_trt({"backend": "UCX", "max_tokens_in_buffer": 64}), kv_bytes_per_token=None)
    assert not lines and "KV bytes per token unknown" in found[0]


def test_sglang_backend_and_single_node_launches():
    s = engine_settings("sglang", ["python3", "-m", "sglang.launch_server", "--disaggregation-mode", "decode",
                                   "--disaggregation-transfer-backend", "mooncake"], {}, point_tp=8)
    (line,) = transfer_buffers(s, None)[0]
    assert line.bytes == 0 and "SGLang mooncake" in line.note
    plain = engine_settings("sglang", ["python3", "-m", "sglang.launch_server"], {}, point_tp=8)
    assert transfer_buffers(plain, None) == ([], [])
