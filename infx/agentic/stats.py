"""Distributions of a trace set: turns, context lengths, fan-out and block reuse.

*Prefix reuse* of a request is the share of its input that an ideal prefix cache (infinite size,
block granularity, trace scope for ``local`` ids) would already hold: the longest leading run of its
``hash_ids`` that an earlier request of the same session also started with, times the block size,
over its input tokens. It is the "theoretical cache hit rate" of the reference system.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from infx.agentic.trace import SubagentEntry, Trace, TraceRequest
from infx.metrics.sections import Dist

if TYPE_CHECKING:
    from rich.table import Table


class TraceStats(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sessions: int
    requests: int
    subagent_requests: int
    main_turns: Dist  # per session
    requests_per_session: Dist
    subagents_per_session: Dist
    stretches_per_session: Dist
    fanout_width: Dist  # parallel agents per stretch
    input_tokens: Dist  # per request
    output_tokens: Dist
    max_context: Dist  # per session: largest in + out
    prefix_reuse: Dist  # per request, 0..1
    theoretical_cache_hit_rate: float  # token-weighted over all requests
    session_span_s: Dist  # trace time span per session


def stretches(entries: Sequence[TraceRequest | SubagentEntry]) -> list[list[SubagentEntry]]:
    """Runs of consecutive subagent entries."""
    out: list[list[SubagentEntry]] = []
    cur: list[SubagentEntry] = []
    for e in entries:
        if isinstance(e, SubagentEntry):
            cur.append(e)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def prefix_hits(trace: Trace) -> list[tuple[TraceRequest, int]]:
    """(request, tokens an ideal prefix cache holds) for every request in time order."""
    seen: set[int] = set()
    out = []
    for req in sorted(trace.all_requests(), key=lambda r: r.t):
        h = 0
        hit = 0
        matching = True
        for i, hid in enumerate(req.hash_ids):
            h = hash((h, hid))
            if matching and h in seen:
                hit = i + 1
            else:
                matching = False
            seen.add(h)
        out.append((req, min(req.in_, hit * trace.block_size)))
    return out


def trace_stats(traces: Sequence[Trace]) -> TraceStats:
    main_turns: list[int] = []
    per_session: list[int] = []
    subs: list[int] = []
    n_stretch: list[int] = []
    widths: list[int] = []
    ins: list[int] = []
    outs: list[int] = []
    max_ctx: list[int] = []
    reuse: list[float] = []
    spans: list[float] = []
    hit_tok = in_tok = 0
    sub_reqs = 0
    for tr in traces:
        reqs = list(tr.all_requests())
        main = tr.main_requests()
        main_turns.append(len(main))
        per_session.append(len(reqs))
        sub_reqs += len(reqs) - len(main)
        st = stretches(tr.requests)
        n_stretch.append(len(st))
        subs.append(sum(1 for e in tr.requests if isinstance(e, SubagentEntry)))
        widths.extend(len({e.agent_id for e in s}) for s in st)
        ins.extend(r.in_ for r in reqs)
        outs.extend(r.out for r in reqs)
        max_ctx.append(max(r.in_ + r.out for r in reqs))
        spans.append(max(r.end_t for r in reqs) - min(r.t for r in reqs))
        for r, hit in prefix_hits(tr):
            reuse.append(hit / r.in_ if r.in_ else 0.0)
            hit_tok += hit
            in_tok += r.in_
    return TraceStats(
        sessions=len(traces), requests=len(ins), subagent_requests=sub_reqs,
        main_turns=Dist.of(main_turns), requests_per_session=Dist.of(per_session),
        subagents_per_session=Dist.of(subs), stretches_per_session=Dist.of(n_stretch),
        fanout_width=Dist.of(widths), input_tokens=Dist.of(ins), output_tokens=Dist.of(outs),
        max_context=Dist.of(max_ctx), prefix_reuse=Dist.of(reuse),
        theoretical_cache_hit_rate=hit_tok / in_tok if in_tok else 0.0, session_span_s=Dist.of(spans),
    )


def render_stats(stats: TraceStats, title: str = "traces") -> Table:
    """A rich Table of the distributions."""
    from rich.table import Table

    table = Table(title=f"{title}: {stats.sessions} sessions, {stats.requests} requests "
                        f"({stats.subagent_requests} in subagents), theoretical prefix-cache hit "
                        f"{stats.theoretical_cache_hit_rate:.1%}")
    table.add_column("distribution")
    for col in ("count", "min", "p50", "mean", "p90", "max"):
        table.add_column(col, justify="right")
    rows = [
        ("main turns / session", stats.main_turns, "{:.0f}"),
        ("requests / session", stats.requests_per_session, "{:.0f}"),
        ("subagents / session", stats.subagents_per_session, "{:.1f}"),
        ("fan-out stretches / session", stats.stretches_per_session, "{:.1f}"),
        ("fan-out width (parallel agents)", stats.fanout_width, "{:.1f}"),
        ("input tokens / request", stats.input_tokens, "{:.0f}"),
        ("output tokens / request", stats.output_tokens, "{:.0f}"),
        ("max context / session (in+out)", stats.max_context, "{:.0f}"),
        ("prefix reuse / request", stats.prefix_reuse, "{:.0%}"),
        ("session span (s)", stats.session_span_s, "{:.1f}"),
    ]
    for name, d, fmt in rows:
        cells = [fmt.format(v) if v is not None else "-" for v in (d.min, d.p50, d.mean, d.p90, d.max)]
        table.add_row(name, str(d.count), *cells)
    return table
