"""Capacity at an SLO tier: the largest concurrency whose point meets the tier, found on one
running server by doubling from ``start`` until a probe misses, then bisecting the bracket until
it is within ``tolerance`` (GuideLLM's goodput profile and AIPerf's monotonic search).

A probe that the online saturation detector flags (TTFT still rising across the probe) counts as
a miss. Probes are plain benches (``BenchConfig`` with the probe's concurrency), so each one's
records and metrics are the load generator's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from infx.metrics.slo import TierVerdict


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Probe(_Model):
    conc: int
    met: bool
    saturated: bool = False
    verdict: TierVerdict | None = None
    output_tok_per_s: float | None = None
    text: str = ""


class SearchResult(_Model):
    tier: str
    slo: dict[str, float]
    max_conc: int | None  # None: even the start concurrency misses the tier
    first_miss: int | None  # the smallest concurrency seen to miss (None: none up to the limit)
    stop_reason: str  # converged | limit-reached | indeterminate-at-start
    probes: list[Probe] = Field(default_factory=list)
    scan_probes: int = 0  # what a linear scan 1..first miss would have cost (the same precision)

    @property
    def text(self) -> str:
        n = len(self.probes)
        if self.max_conc is None:
            return (f"no concurrency meets tier {self.tier!r}: concurrency {self.probes[0].conc} already misses "
                    f"({self.probes[0].text}); {n} probe(s)")
        upper = (f", {self.first_miss} misses" if self.first_miss is not None else
                 " (the search limit; it may go higher)")
        return (f"max concurrency at tier {self.tier!r}: {self.max_conc}{upper}; {n} probe(s) "
                f"(a linear scan to the same precision: {self.scan_probes})")


def search_max_concurrency(probe: Callable[[int], Probe], *, tier: str, slo: Mapping[str, float], start: int = 1,
                           limit: int = 1024, tolerance: float = 0.1) -> SearchResult:
    """Doubling from ``start`` while probes meet the tier, then bisection until the bracket
    (last met, first missed) is at most ``max(1, tolerance * last met)`` wide."""
    if start < 1 or limit < start:
        raise ValueError(f"search range {start}..{limit} is empty")
    probes: list[Probe] = []

    def run(c: int) -> bool:
        p = probe(c)
        probes.append(p)
        return p.met

    ok: int | None = None
    miss: int | None = None
    c = start
    while True:
        if run(c):
            ok = c
            if c >= limit:
                break
            c = min(2 * c, limit)
        else:
            miss = c
            break
    if ok is None:
        return SearchResult(tier=tier, slo=dict(slo), max_conc=None, first_miss=miss,
                            stop_reason="indeterminate-at-start", probes=probes, scan_probes=1)
    if miss is None:
        return SearchResult(tier=tier, slo=dict(slo), max_conc=ok, first_miss=None, stop_reason="limit-reached",
                            probes=probes, scan_probes=ok - start + 1)
    while miss - ok > max(1, math.floor(tolerance * ok)):
        mid = (ok + miss) // 2
        if run(mid):
            ok = mid
        else:
            miss = mid
    return SearchResult(tier=tier, slo=dict(slo), max_conc=ok, first_miss=miss, stop_reason="converged",
                        probes=probes, scan_probes=ok - start + 2)


def bench_probe(base: object, slo: Mapping[str, float], *, prompts_per_conc: int = 4, min_prompts: int = 16,
                on_probe: Callable[[Probe], None] | None = None) -> Callable[[int], Probe]:
    """A probe that benches ``base`` (a ``BenchConfig``) at the probe's concurrency."""
    from infx.loadgen.config import BenchConfig
    from infx.loadgen.runner import execute
    from infx.metrics.slo import evaluate_tier, saturation

    assert isinstance(base, BenchConfig)

    def probe(c: int) -> Probe:
        cfg = base.model_copy(update={"concurrency": c, "num_prompts": max(min_prompts, prompts_per_conc * c),
                                      "duration_s": None, "out_dir": None, "trials": 1, "max_trials": None})
        run = execute(cfg)
        v = evaluate_tier(run.records, slo)
        sat = saturation(run.records, closed_loop=not cfg.open_loop)
        met = v.met and not sat.saturated
        text = v.text + (f"; {sat.text}" if sat.saturated else "")
        p = Probe(conc=c, met=met, saturated=sat.saturated, verdict=v,
                  output_tok_per_s=run.result.metrics.throughput.output_tok_per_s, text=text)
        if on_probe is not None:
            on_probe(p)
        return p

    return probe
