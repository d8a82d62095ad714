"""Preflight: prove every matrix point can run before it costs GPU time.

Public API (lazy imports): :func:`preflight_points` (points -> list of :class:`PointVerdict`),
:func:`predict_kv_capacity` (point, launch, cards -> KV tokens), :func:`compare_kv_capacity`
(prediction vs the engine's start-up log), :class:`PreflightOptions`,
:func:`load_cards` (model and hardware cards under ``cards/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infx.preflight.calibration import KvCapacityComparison, compare_kv_capacity
    from infx.preflight.cards import CardSet, load_cards
    from infx.preflight.gate import PreflightOptions, predict_kv_capacity, preflight_points
    from infx.preflight.verdict import Check, MemoryReport, PointVerdict

_EXPORTS = {
    "preflight_points": "infx.preflight.gate",
    "predict_kv_capacity": "infx.preflight.gate",
    "PreflightOptions": "infx.preflight.gate",
    "load_cards": "infx.preflight.cards",
    "compare_kv_capacity": "infx.preflight.calibration",
    "KvCapacityComparison": "infx.preflight.calibration",
    "CardSet": "infx.preflight.cards",
    "PointVerdict": "infx.preflight.verdict",
    "Check": "infx.preflight.verdict",
    "MemoryReport": "infx.preflight.verdict",
}

__all__ = [
    "CardSet",
    "Check",
    "KvCapacityComparison",
    "MemoryReport",
    "PointVerdict",
    "PreflightOptions",
    "compare_kv_capacity",
    "load_cards",
    "predict_kv_capacity",
    "preflight_points",
]
assert sorted(_EXPORTS) == __all__, "every lazy export is listed once"


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'infx.preflight' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(mod), name)
