"""Hardware and vendor from a point's runner."""

from __future__ import annotations

import pytest

from infx.engines.hardware import UnknownHardware, hardware_for_runner


@pytest.mark.parametrize(
    ("runner", "sku", "vendor"),
    [
        ("cluster:mi355x-amds", "mi355x", "amd"),
        ("mi355x", "mi355x", "amd"),
        ("mi355x-amds_03", "mi355x", "amd"),
        ("mi300x-disagg", "mi300x", "amd"),
        ("b200-multinode", "b200", "nvidia"),
        ("cluster:gb300-nv", "gb300", "nvidia"),
        ("h100-dgxc-slurm_12", "h100", "nvidia"),
        ("rtx6000pro-lat", "rtx6000pro", "nvidia"),
        ("local", "cpu", "cpu"),
        ("cluster:local", "cpu", "cpu"),
    ],
)
def test_runner_mapping(runner: str, sku: str, vendor: str) -> None:
    hw = hardware_for_runner(runner)
    assert (hw.sku, hw.vendor) == (sku, vendor)


def test_unknown_sku_is_an_error_not_a_guess() -> None:
    with pytest.raises(UnknownHardware, match="runner 'tpu-v5p' names no known hardware"):
        hardware_for_runner("tpu-v5p")
