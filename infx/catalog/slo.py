"""SLO tier keys: ``<metric>_<stat>_ms`` ceilings, validated where the catalog declares
them (``slo:`` on a scenario) and where the metrics evaluate them (:mod:`infx.metrics.slo`)."""

from __future__ import annotations

import re
from collections.abc import Mapping

SLO_METRICS = ("ttft", "tpot", "itl", "e2el")
SLO_STATS = {"median": 50.0, "p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}
_KEY = re.compile(r"^(?P<metric>[a-z0-9]+)_(?P<stat>[a-z0-9]+)_ms$")


def parse_slo_key(key: str) -> tuple[str, float]:
    """``ttft_p95_ms`` -> (``ttft``, 95.0); ``ValueError`` naming what is wrong."""
    m = _KEY.match(key)
    if not m:
        raise ValueError(f"bad SLO key {key!r}: expected <metric>_<stat>_ms, e.g. ttft_p95_ms")
    metric, stat = m["metric"], m["stat"]
    if metric not in SLO_METRICS:
        raise ValueError(f"unknown SLO metric {metric!r} in {key!r} (metrics: {', '.join(SLO_METRICS)})")
    if stat not in SLO_STATS:
        raise ValueError(f"unknown SLO statistic {stat!r} in {key!r} (statistics: {', '.join(SLO_STATS)})")
    return metric, SLO_STATS[stat]


def check_tier(tier: Mapping[str, float]) -> dict[str, float]:
    """A validated tier (every key known, every ceiling > 0); ``ValueError`` otherwise."""
    if not tier:
        raise ValueError("an SLO tier needs at least one ceiling, e.g. ttft_p95_ms: 500")
    out: dict[str, float] = {}
    for key, value in tier.items():
        parse_slo_key(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"SLO {key} must be a number of milliseconds > 0, not {value!r}")
        out[key] = float(value)
    return out
