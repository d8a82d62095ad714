"""The validated-catalog cache: same result as a fresh parse, invalidated by any content change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infx.catalog import cache, load_catalog
from infx.diagnostics import InfxError

REPO = Path(__file__).resolve().parents[2]


def test_cache_hit_equals_fresh_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFX_CACHE_DIR", str(tmp_path / "c"))
    src = tmp_path / "m.yaml"
    src.write_text((REPO / "configs" / "amd-master.yaml").read_text())
    first = load_catalog([src])
    files = list((tmp_path / "c" / "catalog").glob("*.pickle"))
    assert len(files) == 1
    second = load_catalog([src])
    assert second.entries == first.entries and second.sources == first.sources
    ws = second.entries["dsv41flash-fp4-mi355x-vllm-agentic-dspark"].scenarios.agentic_coding[0].search_space
    assert [w.tp for w in ws] == [4, 2]
    # A changed file is a different cache key: the new content is validated, not served stale.
    src.write_text(src.read_text().replace("tp: 2,", "tp: 2, dcp-size: 3,"))
    with pytest.raises(InfxError, match="must be divisible by 'dcp-size'"):
        load_catalog([src])
    assert len(list((tmp_path / "c" / "catalog").glob("*.pickle"))) == 1  # errors are never cached


def test_cache_can_be_disabled_and_survives_garbage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFX_CACHE_DIR", str(tmp_path / "c"))
    data = (REPO / "configs" / "cpu-master.yaml").read_bytes()
    monkeypatch.setenv("INFX_NO_CACHE", "1")
    load_catalog([REPO / "configs" / "cpu-master.yaml"])
    assert not (tmp_path / "c").exists()
    monkeypatch.delenv("INFX_NO_CACHE")
    path = cache._path(data)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a pickle")
    assert list(load_catalog([REPO / "configs" / "cpu-master.yaml"]).entries) == [
        "tinyllama-bf16-cpu-vllm", "tinyllama-bf16-cpu-vllm-agentic", "disagg-tinyllama-bf16-cpu-vllm",
        "tinyllama-bf16-cpu-vllm-eval"]
    assert os.path.getsize(path) > 100  # rewritten with a valid entry set


def test_a_torn_cache_file_is_recomputed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFX_CACHE_DIR", str(tmp_path / "c"))
    src = REPO / "configs" / "amd-master.yaml"
    fresh = load_catalog([src])
    path = cache._path(src.read_bytes())
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # a crash mid-write (the cache is not fsynced)
    assert cache.get(src.read_bytes()) is None
    assert load_catalog([src]).entries == fresh.entries
    assert path.read_bytes() == whole
    flipped = bytearray(whole)
    flipped[-10] ^= 1  # same length, one bit off: the checksum catches it
    path.write_bytes(bytes(flipped))
    assert cache.get(src.read_bytes()) is None
