"""Catalog stage: strict loading and validation of master configs and runners.yaml.

Public API: :func:`load_catalog` -> :class:`Catalog`, :func:`load_runners` -> :class:`RunnerConfig`.
Both raise :class:`infx.diagnostics.InfxError`. Imports are lazy so light callers stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infx.catalog.loader import Catalog, load_catalog, runner_warnings
    from infx.catalog.runners import HardwareFacts, RunnerConfig, load_runners
    from infx.catalog.schema import MasterEntry, MultiNodeMasterEntry, SingleNodeMasterEntry

_EXPORTS = {
    "Catalog": "infx.catalog.loader",
    "load_catalog": "infx.catalog.loader",
    "runner_warnings": "infx.catalog.loader",
    "HardwareFacts": "infx.catalog.runners",
    "RunnerConfig": "infx.catalog.runners",
    "load_runners": "infx.catalog.runners",
    "MasterEntry": "infx.catalog.schema",
    "SingleNodeMasterEntry": "infx.catalog.schema",
    "MultiNodeMasterEntry": "infx.catalog.schema",
}

__all__ = [
    "Catalog", "HardwareFacts", "MasterEntry", "MultiNodeMasterEntry", "RunnerConfig",
    "SingleNodeMasterEntry", "load_catalog", "load_runners", "runner_warnings",
]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'infx.catalog' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(mod), name)
