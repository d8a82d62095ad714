"""Integrity checks run on every bench (cheap versions of MLPerf's compliance tests).

Each returns a :class:`Check` with status ok / warn / fail and a one-line detail; they never
raise. Warmup records are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence

from infx.metrics.result import Check, Metrics
from infx.records import RequestRecord

FAIL_RATE_GATE = 0.05  # the reference client exits non-zero above 5 % failed requests
CPU_BUSY_WARN = 0.9  # one event loop = one core: near 100 % means the client is the bottleneck
CLOSED_LAG_WARN_MS = 2.0  # slot freed -> request sent, p99
OPEN_LAG_WARN_MS = 10.0  # scheduled -> sent, p99


def check_accounting(records: Sequence[RequestRecord], metrics: Metrics, issued: int | None = None) -> Check:
    """Every measured request the driver issued (``issued``: its counter, warmup excluded) came
    back as exactly one record, counted once as completed or failed. Without ``issued`` only the
    records' own consistency can be checked (a lost record goes unseen)."""
    measured = [r for r in records if not r.warmup]
    n_ok = sum(1 for r in measured if r.ok)
    n_fail = len(measured) - n_ok
    ids = [r.request_id for r in measured]
    dup = len(ids) - len(set(ids))
    expected = len(measured) if issued is None else issued
    if (
        n_ok + n_fail != expected
        or metrics.issued != expected
        or metrics.completed != n_ok
        or metrics.failed != n_fail
        or dup
    ):
        lost = expected - len(measured)
        return Check(
            name="accounting",
            status="fail",
            detail=f"completed {metrics.completed} + failed {metrics.failed} != issued {expected}"
            + (f"; {lost} issued requests without a record" if lost > 0 else "")
            + (f"; {-lost} records more than issued requests" if lost < 0 else "")
            + (f"; {dup} duplicate request ids" if dup else ""),
        )
    return Check(name="accounting", status="ok", detail=f"completed {n_ok} + failed {n_fail} = issued {expected}")


def check_failures(metrics: Metrics) -> Check:
    if metrics.failed == 0:
        return Check(name="failures", status="ok", detail=f"0 of {metrics.issued} requests failed")
    classes = ", ".join(f"{k}={v}" for k, v in metrics.error_classes.items())
    rate = metrics.failed / metrics.issued if metrics.issued else 1.0
    return Check(
        name="failures",
        status="fail" if rate > FAIL_RATE_GATE else "warn",
        detail=f"{metrics.failed} of {metrics.issued} requests failed ({rate:.1%}; gate {FAIL_RATE_GATE:.0%}): "
               f"{classes}",
    )


def check_output_lengths(records: Sequence[RequestRecord]) -> Check:
    """With ignore_eos, the server-reported completion tokens must equal max_tokens."""
    rs = [r for r in records if not r.warmup and r.ok and r.ignore_eos]
    if not rs:
        return Check(name="output_length", status="ok", detail="not applicable (no ignore_eos requests completed)")
    no_usage = [r for r in rs if r.completion_tokens is None]
    wrong = [r for r in rs if r.completion_tokens is not None and r.completion_tokens != r.max_tokens]
    if wrong:
        ex = wrong[0]
        return Check(
            name="output_length",
            status="fail",
            detail=f"{len(wrong)} of {len(rs)} ignore_eos requests got a length != max_tokens "
            f"(e.g. {ex.request_id}: {ex.completion_tokens} != {ex.max_tokens})",
        )
    if no_usage:
        return Check(name="output_length", status="warn",
                     detail=f"{len(no_usage)} requests without server usage: lengths unverified")
    mism = [r for r in rs if r.client_tokens != r.completion_tokens]
    if mism:
        ex = mism[0]
        return Check(
            name="output_length",
            status="warn",
            detail=f"server lengths exact, but {len(mism)} requests' streamed token counts disagree "
            f"(e.g. {ex.request_id}: streamed {ex.client_tokens}, usage {ex.completion_tokens}, "
            f"counted by {ex.token_source})",
        )
    return Check(name="output_length", status="ok", detail=f"{len(rs)} requests: completion tokens == max_tokens")


def check_first_token(records: Sequence[RequestRecord]) -> Check:
    """Every completed request's first token chunk carries >= 1 token and precedes the end."""
    rs = [r for r in records if not r.warmup and r.ok and r.max_tokens > 0]
    bad = [r for r in rs if r.first_token_ns is None or not r.chunk_tokens or r.chunk_tokens[0] < 1
           or r.first_token_ns > r.end_ns]
    if bad:
        return Check(name="first_token", status="fail",
                     detail=f"{len(bad)} completed requests without a valid first token chunk")
    lead = sum(1 for r in rs if r.empty_events_before_first_token)
    empty_text = sum(1 for r in rs if r.first_token_text_empty)
    notes = []
    if lead:
        notes.append(f"{lead} had token-less events before the first token (not counted as TTFT)")
    if empty_text:
        notes.append(f"{empty_text} first tokens decoded to empty text (partial UTF-8; counted by "
                     f"{rs[0].token_source})")
    return Check(name="first_token", status="ok",
                 detail="; ".join(notes) or f"{len(rs)} requests: first chunk carried a token")


def check_single_finish(records: Sequence[RequestRecord]) -> Check:
    rs = [r for r in records if not r.warmup]
    many = [r for r in rs if r.finish_count > 1]
    none = [r for r in rs if r.ok and r.finish_count != 1]
    if many or none:
        return Check(
            name="single_finish",
            status="fail",
            detail=f"{len(many)} requests with several finish_reasons, {len(none)} completed without exactly one",
        )
    return Check(name="single_finish", status="ok",
                 detail=f"{sum(1 for r in rs if r.ok)} completed requests had exactly one finish_reason")


def check_client_lag(metrics: Metrics, *, open_loop: bool, capped: bool, client_cpu: float | None) -> Check:
    """Client lag: p99 queue delay (closed loop) / schedule lag (open loop); CPU near 100 %."""
    q = metrics.queue_delay_ms
    problems = []
    if q.p99 is not None:
        limit = OPEN_LAG_WARN_MS if open_loop else CLOSED_LAG_WARN_MS
        if q.p99 > limit:
            what = "schedule lag" if open_loop else "queue delay (slot freed -> sent)"
            if open_loop and capped:
                what += ", includes waiting for the concurrency cap"
            problems.append(f"p99 {what} {q.p99:.2f} ms > {limit:g} ms")
    if client_cpu is not None and client_cpu >= CPU_BUSY_WARN:
        problems.append(f"client CPU {client_cpu:.0%} of one core: the client may be the bottleneck (try --workers)")
    detail = f"p99 queue delay {q.p99:.3f} ms" if q.p99 is not None else "no queue-delay samples"
    if client_cpu is not None:
        detail += f", client CPU {client_cpu:.0%} of one core"
    if problems:
        return Check(name="client_lag", status="warn", detail="; ".join(problems))
    return Check(name="client_lag", status="ok", detail=detail)


def check_input_lengths(records: Sequence[RequestRecord]) -> Check:
    """Completions: server prompt tokens equal the client tokenizer's count (same tokenizer?)."""
    rs = [
        r
        for r in records
        if not r.warmup and r.ok and r.endpoint == "completions" and r.expected_input_tokens is not None
        and r.prompt_tokens is not None
    ]
    if not rs:
        return Check(name="input_length", status="ok", detail="not applicable")
    wrong = [r for r in rs if r.prompt_tokens != r.expected_input_tokens]
    if wrong:
        ex = wrong[0]
        return Check(
            name="input_length",
            status="warn",
            detail=f"{len(wrong)} of {len(rs)} prompts counted differently by the server "
            f"(e.g. {ex.request_id}: server {ex.prompt_tokens}, client {ex.expected_input_tokens}): "
            "tokenizer mismatch?",
        )
    return Check(name="input_length", status="ok", detail=f"{len(rs)} prompts: server prompt tokens == client count")


BURST_WARN = 0.1


def check_streaming(records: Sequence[RequestRecord]) -> Check:
    """Tokens should arrive spread over the generation, not all at once: a stream delivered in
    one burst (server/proxy buffering, or a starved API server) makes TPOT/ITL measure delivery,
    not decoding."""
    rs = [r for r in records if not r.warmup and r.ok and r.output_tokens > 1]
    if not rs:
        return Check(name="streaming", status="ok", detail="not applicable")
    burst = sum(1 for r in rs if len(r.chunk_ns) <= 1)
    if burst / len(rs) > BURST_WARN:
        return Check(
            name="streaming",
            status="warn",
            detail=f"{burst} of {len(rs)} multi-token responses arrived in a single chunk (buffered by the server?): "
            "TPOT and ITL describe delivery, not decoding",
        )
    return Check(name="streaming", status="ok",
                 detail=f"{len(rs) - burst} of {len(rs)} multi-token responses streamed in several chunks")


def run_checks(
    records: Sequence[RequestRecord],
    metrics: Metrics,
    *,
    open_loop: bool = False,
    capped: bool = True,
    client_cpu: float | None = None,
    issued: int | None = None,
) -> list[Check]:
    """``issued``: the driver's count of measured requests sent (checked against the records)."""
    return [
        check_accounting(records, metrics, issued),
        check_failures(metrics),
        check_output_lengths(records),
        check_first_token(records),
        check_single_finish(records),
        check_input_lengths(records),
        check_streaming(records),
        check_client_lag(metrics, open_loop=open_loop, capped=capped, client_cpu=client_cpu),
    ]
