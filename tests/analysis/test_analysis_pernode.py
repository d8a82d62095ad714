from __future__ import annotations

import pytest

from infx.analysis.pernode import (
    node_factor,
    normalise,
    per_gpu,
    per_node,
    servers_per_node,
)


def test_tp2_on_an_8_gpu_node_is_4_servers() -> None:
    assert servers_per_node(8, 2) == 4
    assert per_node(1000.0, 8, 2) == 4000.0


def test_tp4_on_an_8_gpu_node_is_2_servers() -> None:
    assert servers_per_node(8, 4) == 2
    assert per_node(1500.0, 8, 4) == 3000.0


def test_whole_servers_only() -> None:
    assert servers_per_node(8, 3) == 2  # two GPUs idle
    assert per_node(300.0, 8, 3) == 600.0
    assert servers_per_node(4, 8) == 0  # GB200 tray: a TP=8 server spans two 4-GPU nodes
    assert node_factor(4, 8) == 0.5
    assert per_node(1000.0, 4, 12) == 1000.0 / 3


def test_normalisations() -> None:
    assert per_gpu(1000.0, 4) == 250.0
    assert normalise(1000.0, "server", 4, None) == 1000.0
    assert normalise(1000.0, "gpu", 4, None) == 250.0
    assert normalise(1000.0, "node", 4, None) is None
    assert normalise(1000.0, "node", 4, 8) == 2000.0
    with pytest.raises(ValueError):
        servers_per_node(8, 0)
