"""Which hardware a point runs on, derived from its runner.

Runner strings come in three shapes (reference-system.md section 2): capacity labels (``mi355x``,
``b200-multinode``, ``h200``), exact fleets (``cluster:mi355x-amds``) and concrete node names
(``mi355x-amds_03``). All start with the GPU SKU, so the SKU is the runner with ``cluster:``
and any ``_NN`` node suffix removed, up to the first ``-``. ``local`` (and ``cpu``) mean this
machine's CPU. The vendor comes from a table of known SKUs; an unknown SKU is an error rather
than a guess.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Vendor = Literal["amd", "nvidia", "cpu"]

SKU_VENDOR: dict[str, Vendor] = {
    "mi300x": "amd",
    "mi325x": "amd",
    "mi355x": "amd",
    "h100": "nvidia",
    "h200": "nvidia",
    "b200": "nvidia",
    "b300": "nvidia",
    "gb200": "nvidia",
    "gb300": "nvidia",
    "rtx6000pro": "nvidia",
    "cpu": "cpu",
}

LOCAL_RUNNERS = ("local", "cpu")


class Hardware(BaseModel):
    model_config = ConfigDict(frozen=True)

    sku: str  # mi355x, b200, cpu ...
    vendor: Vendor
    fleet: str | None = None  # mi355x-amds for cluster:mi355x-amds


class UnknownHardware(ValueError):
    pass


def hardware_for_runner(runner: str) -> Hardware:
    """``cluster:mi355x-amds`` -> mi355x/amd; ``b200-multinode`` -> b200/nvidia; ``local`` -> cpu."""
    name = runner.strip()
    if name.startswith("cluster:"):
        name = name[len("cluster:"):]
    if name in LOCAL_RUNNERS or name.startswith("local:") or name.startswith("local-"):
        return Hardware(sku="cpu", vendor="cpu", fleet=None)
    name = name.split("_", 1)[0]  # node name mi355x-amds_03 -> fleet mi355x-amds
    sku = name.split("-", 1)[0].lower()
    vendor = SKU_VENDOR.get(sku)
    if vendor is None:
        known = ", ".join(sorted(SKU_VENDOR))
        raise UnknownHardware(f"runner '{runner}' names no known hardware (SKU '{sku}'; known: {known}, local)")
    fleet = name if "-" in name else None
    return Hardware(sku=sku, vendor=vendor, fleet=fleet)
