"""Speculative-decoding acceptance over the measured window (and each trial's), from the engine's
``/metrics`` counters scraped by :mod:`infx.telemetry.engine_state`.

Each figure is a counter delta between the last scrape served before the window and the first sent after it
(:func:`infx.telemetry.engine_state.counter_delta`). An engine without the series says so ("not reported",
never 0); a counter that falls between those two scrapes (an engine restart inside the window) makes the
figure invalid, with the counter and the fall named.
"""

from __future__ import annotations

from collections.abc import Sequence

from infx.engine_metrics import SPEC_COUNTERS, EngineStateSample
from infx.metrics.sections import AcceptanceFigures, RoleAcceptance
from infx.metrics.uncertainty import across_trials
from infx.telemetry.engine_state import counter_delta


class _Invalid(Exception):
    pass


def _bracket(samples: Sequence[EngineStateSample], start: float, end: float) -> list[EngineStateSample]:
    """The scrapes from the last one served before ``start`` to the first one sent after ``end``."""
    before = [i for i, s in enumerate(samples) if (s.t_done if s.t_done is not None else s.t) <= start]
    after = [i for i, s in enumerate(samples) if s.t >= end]
    if not before or not after:
        return []
    return list(samples[before[-1]:after[0] + 1])


def _check_monotonic(span: Sequence[EngineStateSample]) -> None:
    for field, series in SPEC_COUNTERS.items():
        prev: EngineStateSample | None = None
        for s in span:
            v = getattr(s, field)
            if v is None:
                continue
            pv = None if prev is None else getattr(prev, field)
            if prev is not None and pv is not None and v < pv:
                raise _Invalid(f"{series} went backwards inside the window ({pv:g} at {prev.t:.3f} -> {v:g} at "
                               f"{s.t:.3f}): the engine restarted")
            prev = s


def figures(samples: Sequence[EngineStateSample], start: float, end: float) -> AcceptanceFigures | None:
    """Acceptance over [start, end]; None when no scrapes bracket it; :class:`_Invalid` when a counter falls."""
    span = _bracket(samples, start, end)
    if not span:
        return None
    _check_monotonic(span)
    deltas: dict[str, float] = {}
    for field in SPEC_COUNTERS:
        d = counter_delta([(s.t, s.t_done if s.t_done is not None else s.t, getattr(s, field))
                           for s in samples if getattr(s, field) is not None], start, end)
        if d is None:
            return None
        deltas[field] = d
    drafts, draft_tokens, accepted = deltas["spec_drafts"], deltas["spec_draft_tokens"], deltas["spec_accepted"]
    first, last = span[0].spec_accepted_per_pos or {}, span[-1].spec_accepted_per_pos or {}
    positions = sorted(last, key=lambda k: int(k) if k.isdigit() else 0)
    per_pos = [(last[k] - first.get(k, 0.0)) / drafts for k in positions] if drafts > 0 else []
    return AcceptanceFigures(drafts=drafts, draft_tokens=draft_tokens, accepted=accepted,
                             acceptance_length=1 + accepted / drafts if drafts > 0 else None,
                             acceptance_rate=accepted / draft_tokens if draft_tokens > 0 else None,
                             per_position=per_pos)


def acceptance(samples: Sequence[EngineStateSample], window: tuple[float, float] | None,
               trial_windows: Sequence[tuple[float, float]] = (), role: str = "server") -> RoleAcceptance:
    """One role's acceptance over the measured ``window`` and each trial's window."""
    samples = sorted(samples, key=lambda s: s.t)
    has_counters = any(s.spec_drafts is not None for s in samples)
    if not has_counters:
        gauges = [s.spec_accept_length for s in samples if s.spec_accept_length is not None
                  and window is not None and window[0] <= s.t <= window[1]]
        if gauges:
            return RoleAcceptance(role=role, state="gauge", gauge_acceptance_length=sum(gauges) / len(gauges))
        reason = "no /metrics samples" if not samples else "the engine's /metrics has no speculative-decoding series"
        return RoleAcceptance(role=role, state="not_reported", reason=reason)
    if window is None:
        return RoleAcceptance(role=role, state="invalid", reason="no measured window")
    try:
        whole = figures(samples, *window)
        per_trial = [figures(samples, *w) for w in trial_windows] if len(trial_windows) >= 2 else []
    except _Invalid as exc:
        return RoleAcceptance(role=role, state="invalid", reason=str(exc))
    if whole is None:
        return RoleAcceptance(role=role, state="invalid",
                              reason="no scrape before and after the window: the counters' delta is unknown")
    out = RoleAcceptance(role=role, state="measured", window=whole, trials=per_trial,
                         acceptance_length_mean=whole.acceptance_length, acceptance_rate_mean=whole.acceptance_rate)
    if per_trial and all(f is not None for f in per_trial):
        al = across_trials([f.acceptance_length for f in per_trial if f is not None])
        rate = across_trials([f.acceptance_rate for f in per_trial if f is not None])
        if al is not None and al.n >= 2:
            out.acceptance_length_mean, out.acceptance_length_lo, out.acceptance_length_hi = al.mean, al.lo, al.hi
        if rate is not None and rate.n >= 2:
            out.acceptance_rate_mean, out.acceptance_rate_lo, out.acceptance_rate_hi = rate.mean, rate.lo, rate.hi
    return out
