"""Agentic replay: C lanes, each replaying one session tree at a time against a chat endpoint.

* A lane takes the next session from a seeded shuffle of the trace set (cycling), and starts its
  *first* session at a random point in ``[trajectory_start_min, trajectory_start_max]`` of the
  session's main steps (so lanes do not all begin with an empty cache); later sessions start at 0.
* Main steps run in order. A step is a main request or a *stretch* of consecutive subagent
  entries; the distinct agents of a stretch run concurrently (each its own requests in order) and
  the main agent continues when all have finished. So in-flight requests can exceed C.
* Between steps the lane waits the recorded idle gap (next ``t`` minus the previous step's end),
  capped at ``idle_gap_cap_s`` and multiplied by ``time_scale``.
* Each request is sent as one user message built from its ``hash_ids`` blocks
  (:mod:`infx.agentic.prompts`), ``max_tokens`` = recorded output with ``ignore_eos``, and an
  ``X-Session-ID`` header naming the session tree.
* The first ``warmup_requests_per_lane`` requests of each lane are marked warmup.
* New requests stop at ``duration_s``; requests in flight then get ``drain_timeout_s`` to finish
  and are cancelled (recorded as ``cancelled``) after that.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from infx.agentic.prompts import BlockTokenizer
from infx.agentic.trace import SubagentEntry, Trace, TraceRequest
from infx.loadgen.http import Target, make_session, stream_request
from infx.metrics.run_config import ReplaySettings
from infx.records import RequestRecord, RequestSpec

if TYPE_CHECKING:
    import aiohttp

SESSION_HEADER = "X-Session-ID"


class ReplayConfig(ReplaySettings):
    """How to replay: the settings a result records (:class:`~infx.metrics.run_config.ReplaySettings`) and
    the rules between them."""

    @model_validator(mode="after")
    def _ratio(self) -> ReplayConfig:
        if self.trajectory_start_min > self.trajectory_start_max:
            raise ValueError("trajectory_start_min > trajectory_start_max")
        if self.duration_s is None and self.max_sessions is None:
            raise ValueError("set duration_s or max_sessions (or both)")
        return self


class SessionRecord(BaseModel):
    """One replayed session tree."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    session_id: str
    trace_id: str
    lane: int
    start_step: int
    steps: int
    requests: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0  # over max_context
    subagent_requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    start_ns: int = 0
    end_ns: int = 0
    busy_ns: int = 0  # wall time with >= 1 request of this session in flight
    max_in_flight: int = 0
    completed: bool = False  # replayed to its last step (not cut by the duration limit)
    warmup_only: bool = False
    _inflight: int = PrivateAttr(0)
    _busy_from: int = PrivateAttr(0)


class ReplayOutcome(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    records: list[RequestRecord]
    sessions: list[SessionRecord]
    in_flight_high_water: int
    in_flight_high_water_profiled: int  # after every lane left warmup
    issued_measured: int | None = None  # measured (non-warmup) requests sent: the accounting check's count
    chat_overhead_tokens: int
    prompt_token_mismatches: int
    skipped_requests: int
    cache_salt: str
    started_ns: int
    ended_ns: int
    wall_started: float
    wall_ended: float
    stopped_by: str  # "duration" | "sessions" | "error_rate"
    abort_reason: str | None = None


@dataclass
class _Step:
    t: float
    end_t: float
    request: TraceRequest | None = None
    agents: list[list[TraceRequest | SubagentEntry]] = field(default_factory=list)


def _entry_end(e: TraceRequest | SubagentEntry) -> float:
    if isinstance(e, SubagentEntry):
        inner = max((_entry_end(x) for x in e.requests), default=e.t)
        return max(e.end_t, inner)
    return e.end_t


def steps_of(entries: Sequence[TraceRequest | SubagentEntry]) -> list[_Step]:
    """Main requests and stretches; agents of a stretch grouped by ``agent_id`` (first-seen order)."""
    out: list[_Step] = []
    stretch: dict[str, list[TraceRequest | SubagentEntry]] = {}
    stretch_t = stretch_end = 0.0

    def flush() -> None:
        if stretch:
            out.append(_Step(t=stretch_t, end_t=stretch_end, agents=list(stretch.values())))
            stretch.clear()

    for e in entries:
        if isinstance(e, SubagentEntry):
            if not stretch:
                stretch_t, stretch_end = e.t, _entry_end(e)
            stretch.setdefault(e.agent_id, []).extend(e.requests)
            stretch_t = min(stretch_t, e.t)
            stretch_end = max(stretch_end, _entry_end(e))
        else:
            flush()
            out.append(_Step(t=e.t, end_t=e.end_t, request=e))
    flush()
    return out


class _Stop(Exception):
    """Raised inside a lane when no new request may be issued."""


class _Run:
    def __init__(self, traces: Sequence[Trace], blocks: BlockTokenizer, target: Target, cfg: ReplayConfig):
        self.traces = list(traces)
        self.blocks = blocks
        self._by_size: dict[int, BlockTokenizer] = {}
        self.target = target
        self.cfg = cfg
        self.salt = cfg.cache_salt if cfg.cache_salt is not None else secrets.token_hex(8)
        self.rng = np.random.default_rng(cfg.seed)
        order = self.rng.permutation(len(self.traces)).tolist()
        self.order = order
        self.cursor = 0
        self.records: list[RequestRecord] = []
        self.sessions: list[SessionRecord] = []
        self.in_flight = 0
        self.hwm = 0
        self.hwm_profiled = 0
        self.lanes_in_warmup = cfg.concurrency if cfg.warmup_requests_per_lane > 0 else 0
        self.lane_issued = [0] * cfg.concurrency
        self.overhead = 0
        self.mismatches = 0
        self.skipped = 0
        self.stop = asyncio.Event()
        self.finished = 0  # measured (non-warmup) requests that ended, cancellations excluded
        self.issued_measured = 0  # measured requests sent (each must come back as one record)
        self.errors = 0
        self.aborted: str | None = None
        self._http: aiohttp.ClientSession | None = None

    @property
    def http(self) -> aiohttp.ClientSession:
        assert self._http is not None, "the replay's HTTP session opens in run()"
        return self._http

    def blocks_for(self, block_size: int) -> BlockTokenizer:
        got = self._by_size.get(block_size)
        if got is None:
            got = self._by_size[block_size] = self.blocks.with_block_size(block_size)
        return got

    # -- session selection ----------------------------------------------------------------
    def next_trace(self) -> tuple[int, Trace] | None:
        if self.cfg.max_sessions is not None and self.cursor >= self.cfg.max_sessions:
            return None
        k = self.cursor
        self.cursor += 1
        return k, self.traces[self.order[k % len(self.order)]]

    # -- one request ------------------------------------------------------------------------
    async def send(self, req: TraceRequest, sess: SessionRecord, trace: Trace, n: int, subagent: bool) -> None:
        if self.stop.is_set():
            raise _Stop
        cfg = self.cfg
        if cfg.max_context is not None and req.in_ + req.out > cfg.max_context:
            sess.skipped += 1
            self.skipped += 1
            return
        scope = f"{sess.session_id}" if trace.hash_id_scope == "local" else "global"
        content_tokens = max(1, req.in_ - self.overhead)
        blocks = self.blocks_for(trace.block_size)
        content = blocks.content(content_tokens, req.hash_ids, salt=self.salt, scope=scope,
                                 filler_key=f"{sess.session_id}/{n}")
        lane = sess.lane
        warm = self.lane_issued[lane] < cfg.warmup_requests_per_lane
        self.lane_issued[lane] += 1
        if self.lane_issued[lane] == cfg.warmup_requests_per_lane:
            self.lanes_in_warmup -= 1
        spec = RequestSpec(
            request_id=f"{sess.session_id}/{n}", endpoint="chat",
            messages=[{"role": "user", "content": content}],
            max_tokens=max(1, req.out), ignore_eos=True,
            headers={SESSION_HEADER: sess.session_id},
            session_id=sess.session_id, turn=n, lane=lane, warmup=warm,
            expected_input_tokens=req.in_,
        )
        sess.requests += 1
        sess.subagent_requests += int(subagent)
        self.issued_measured += int(not warm)
        self.in_flight += 1
        self.hwm = max(self.hwm, self.in_flight)
        if self.lanes_in_warmup <= 0:
            self.hwm_profiled = max(self.hwm_profiled, self.in_flight)
        sess._inflight += 1
        sess.max_in_flight = max(sess.max_in_flight, sess._inflight)
        if sess._inflight == 1:
            sess._busy_from = time.monotonic_ns()
        send_ns = time.monotonic_ns()
        rec: RequestRecord | None = None
        try:
            rec = await stream_request(self.http, spec, self.target, worker=lane)
        finally:
            self.in_flight -= 1
            sess._inflight -= 1
            if sess._inflight == 0:
                sess.busy_ns += time.monotonic_ns() - sess._busy_from
            if rec is None:  # cancelled in flight
                rec = RequestRecord.cancelled(spec, send_ns, time.monotonic_ns(), worker=lane)
            self.records.append(rec)
            if rec.ok:
                sess.ok += 1
                sess.input_tokens += rec.prompt_tokens or req.in_
                sess.output_tokens += rec.output_tokens
                if rec.prompt_tokens is not None and req.in_ > self.overhead and rec.prompt_tokens != req.in_:
                    self.mismatches += 1
            else:
                sess.failed += 1
        if not spec.warmup:
            self.finished += 1
            self.errors += int(not rec.ok)
            if (cfg.abort_on_error_rate and self.finished >= cfg.abort_min_requests
                    and self.errors / self.finished > cfg.error_rate_threshold and not self.stop.is_set()):
                self.aborted = f"error rate {self.errors}/{self.finished} over {cfg.error_rate_threshold:.0%}"
                self.stop.set()
        if not rec.ok and rec.error_class == "connect_error":
            await asyncio.sleep(0.05)  # do not spin on a dead server

    # -- sequences --------------------------------------------------------------------------
    async def idle(self, gap_s: float) -> None:
        gap = min(max(0.0, gap_s), self.cfg.idle_gap_cap_s) * self.cfg.time_scale
        if gap <= 0:
            return
        try:
            await asyncio.wait_for(self.stop.wait(), timeout=gap)
        except TimeoutError:
            return
        raise _Stop

    async def run_entries(self, entries: Sequence[TraceRequest | SubagentEntry], sess: SessionRecord, trace: Trace,
                          counter: list[int], subagent: bool, start: int = 0) -> None:
        steps = steps_of(entries)
        prev_end: float | None = None
        for step in steps[start:]:
            if prev_end is not None:
                await self.idle(step.t - prev_end)
            if step.request is not None:
                counter[0] += 1
                await self.send(step.request, sess, trace, counter[0], subagent)
            else:
                if self.cfg.subagents == "sequential":
                    for agent in step.agents:
                        await self.run_entries(agent, sess, trace, counter, True)
                else:
                    agents = [self.run_entries(a, sess, trace, counter, True) for a in step.agents]
                    results = await asyncio.gather(*agents, return_exceptions=True)
                    for r in results:
                        if isinstance(r, BaseException):
                            raise r
            prev_end = step.end_t

    async def lane(self, lane: int) -> None:
        first = True
        while not self.stop.is_set():
            got = self.next_trace()
            if got is None:
                return
            k, trace = got
            steps = steps_of(trace.requests)
            start = 0
            if first and self.cfg.trajectory_start_max > 0:
                ratio = float(self.rng.uniform(self.cfg.trajectory_start_min, self.cfg.trajectory_start_max))
                start = min(int(math.floor(ratio * len(steps))), len(steps) - 1)
            first = False
            sess = SessionRecord(session_id=f"s{k:05d}-{trace.id}", trace_id=trace.id, lane=lane,
                                 start_step=start, steps=len(steps))
            sess.start_ns = time.monotonic_ns()
            warm_before = self.lane_issued[lane] < self.cfg.warmup_requests_per_lane
            self.sessions.append(sess)
            try:
                await self.run_entries(trace.requests, sess, trace, [0], False, start)
                sess.completed = True
            except _Stop:
                pass
            finally:
                sess.end_ns = time.monotonic_ns()
                sess.warmup_only = warm_before and self.lane_issued[lane] <= self.cfg.warmup_requests_per_lane

    async def calibrate(self) -> None:
        """Measure the chat template's token cost with one probe (``usage.prompt_tokens``)."""
        probe_words = 8
        content = self.blocks.content(probe_words, [], salt=self.salt, scope="probe", filler_key="probe")
        spec = RequestSpec(request_id="probe", endpoint="chat", messages=[{"role": "user", "content": content}],
                           max_tokens=1, ignore_eos=True, warmup=True)
        rec = await stream_request(self.http, spec, self.target)
        if not rec.ok or rec.prompt_tokens is None:
            why = rec.error_class or "no usage.prompt_tokens"
            raise ReplayError(f"probe request failed: {why}: {rec.error_message or ''}".strip())
        self.overhead = rec.prompt_tokens - probe_words

    async def run(self) -> ReplayOutcome:
        cfg = self.cfg
        self._http = make_session()
        wall0 = time.time()
        t0 = time.monotonic_ns()
        stopped_by = "sessions"
        try:
            await self.calibrate()
            t0 = time.monotonic_ns()
            wall0 = time.time()
            tasks = [asyncio.create_task(self.lane(i)) for i in range(cfg.concurrency)]
            loop = asyncio.get_running_loop()
            deadline = None if cfg.duration_s is None else loop.time() + cfg.duration_s
            stop_wait = asyncio.create_task(self.stop.wait())
            pending = set(tasks)
            while pending and not self.stop.is_set():
                left = None if deadline is None else deadline - loop.time()
                if left is not None and left <= 0:
                    break
                done, _ = await asyncio.wait(pending | {stop_wait}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                pending -= done
            stop_wait.cancel()
            if pending:
                stopped_by = "duration"
                self.stop.set()
                _, pending = await asyncio.wait(pending, timeout=cfg.drain_timeout_s)
                for t in pending:
                    t.cancel()
                if pending:
                    await asyncio.wait(pending)
            for t in tasks:
                exc = None if t.cancelled() else t.exception()
                if exc is not None:
                    raise exc
        finally:
            self.stop.set()
            await self.http.close()
        if self.aborted:
            stopped_by = "error_rate"
        return ReplayOutcome(
            records=self.records, sessions=self.sessions, in_flight_high_water=self.hwm,
            in_flight_high_water_profiled=self.hwm_profiled, issued_measured=self.issued_measured,
            chat_overhead_tokens=self.overhead,
            prompt_token_mismatches=self.mismatches, skipped_requests=self.skipped, cache_salt=self.salt,
            started_ns=t0, ended_ns=time.monotonic_ns(), wall_started=wall0, wall_ended=time.time(),
            stopped_by=stopped_by, abort_reason=self.aborted,
        )


class ReplayError(Exception):
    """The replay could not run at all (server unreachable, probe failed)."""


async def replay_async(traces: Sequence[Trace], blocks: BlockTokenizer, target: Target,
                       cfg: ReplayConfig) -> ReplayOutcome:
    return await _Run(traces, blocks, target, cfg).run()


def replay(traces: Sequence[Trace], blocks: BlockTokenizer, target: Target, cfg: ReplayConfig) -> ReplayOutcome:
    """Run the replay on a fresh event loop (uvloop when available)."""
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        runner = asyncio.Runner()
    with runner:
        return runner.run(replay_async(traces, blocks, target, cfg))
