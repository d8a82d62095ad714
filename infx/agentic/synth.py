"""Synthetic agentic traces in the weka format, deterministic for a seed.

Each session is a main agent whose context starts at ``initial_context`` tokens and grows by about
``growth`` tokens a turn (new tool output, the previous answer...). When the next turn would not fit
in ``max_context`` (input + output), the context is *compacted*: the shared system prefix is kept and
the rest starts over, as coding agents do. After a main turn, with probability ``fanout_prob`` the
agent starts a stretch of ``fanout_width`` parallel subagents; each runs ``subagent_turns`` turns of
its own, starting from the session's system prefix.

``reuse`` (0..1) sets how much of the previous context a turn keeps as its prefix: 1 keeps all of it
(an append-only conversation, the production case), 0 keeps none (every request has fresh blocks, no
prefix-cache hits possible). Everything scales with ``max_context`` so the tiny embedded model
(2048-token context) can serve the result.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from infx.agentic.trace import DEFAULT_BLOCK_SIZE, SubagentEntry, Trace, TraceRequest

SUBAGENT_TYPES = ("Explore", "general-purpose", "Plan", "code-reviewer")


class SynthConfig(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    sessions: int = Field(8, ge=1, le=1_000_000)
    seed: int = 0
    max_context: int = Field(2048, ge=256, le=100_000_000,
                             description="input + output of any request stays within this")
    turns_min: int = Field(3, ge=1, le=100_000)
    turns_max: int = Field(8, ge=1, le=100_000)
    initial_context: float = Field(0.2, gt=0, lt=1, description="first turn's input, fraction of max_context")
    growth: float = Field(0.08, ge=0, lt=1, description="mean context growth per turn, fraction of max_context")
    system_prefix: float = Field(0.1, ge=0, lt=1, description="shared system prompt, fraction of max_context")
    out_min: int = Field(8, ge=1)
    out_max: int = Field(48, ge=1)
    fanout_prob: float = Field(0.3, ge=0, le=1)
    fanout_width_min: int = Field(2, ge=1, le=10_000)
    fanout_width_max: int = Field(3, ge=1, le=10_000)
    subagent_turns_min: int = Field(1, ge=1, le=100_000)
    subagent_turns_max: int = Field(3, ge=1, le=100_000)
    reuse: float = Field(1.0, ge=0, le=1)
    think_time: float = Field(1.0, ge=0, description="mean idle gap between turns, seconds")
    block_size: int = Field(DEFAULT_BLOCK_SIZE, gt=0, le=1_000_000)
    model: str = "synthetic"

    @model_validator(mode="after")
    def _ranges(self) -> SynthConfig:
        for lo, hi in (("turns_min", "turns_max"), ("out_min", "out_max"), ("fanout_width_min", "fanout_width_max"),
                       ("subagent_turns_min", "subagent_turns_max")):
            if getattr(self, lo) > getattr(self, hi):
                raise ValueError(f"{lo} ({getattr(self, lo)}) > {hi} ({getattr(self, hi)})")
        if self.out_max >= self.max_context // 2:
            raise ValueError(f"out_max ({self.out_max}) must be below half of max_context ({self.max_context})")
        return self


class _Session:
    """Per-trace state: hash-id allocator and clock."""

    def __init__(self, cfg: SynthConfig, rng: np.random.Generator):
        self.cfg = cfg
        self.rng = rng
        self.next_id = 0
        self.t = 0.0
        bs = cfg.block_size
        n_sys = int(cfg.system_prefix * cfg.max_context) // bs
        self.system = self.fresh(n_sys)  # shared system-prompt blocks (full blocks only)

    def fresh(self, n: int) -> list[int]:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return ids

    def out_tokens(self) -> int:
        return int(self.rng.integers(self.cfg.out_min, self.cfg.out_max + 1))

    def grow(self, context: int) -> int:
        g = self.cfg.growth * self.cfg.max_context
        return context + int(self.rng.uniform(0.5 * g, 1.5 * g))

    def gap(self) -> float:
        return float(self.rng.exponential(self.cfg.think_time)) if self.cfg.think_time > 0 else 0.0

    def blocks_for(self, prev_ids: list[int], prev_tokens: int, new_tokens: int) -> list[int]:
        """Hash ids of a context of ``new_tokens`` that follows one of ``prev_tokens``."""
        bs = self.cfg.block_size
        n_blocks = math.ceil(new_tokens / bs)
        full_prev = min(prev_tokens // bs, len(prev_ids))  # a partial last block changes content
        keep = min(int(math.floor(self.cfg.reuse * full_prev + 1e-9)), n_blocks)
        if self.cfg.reuse <= 0:
            keep = 0
        return prev_ids[:keep] + self.fresh(n_blocks - keep)

    def request(self, in_tokens: int, ids: list[int], out: int) -> TraceRequest:
        api_time = round(0.02 + 0.00002 * in_tokens + 0.01 * out, 4)
        req = TraceRequest.model_validate(
            {"t": round(self.t, 4), "type": "n", "model": self.cfg.model, "in": in_tokens, "out": out,
             "hash_ids": ids, "api_time": api_time}
        )
        self.t += api_time
        return req


def _fit(cfg: SynthConfig, tokens: int, out: int) -> bool:
    return tokens + out <= cfg.max_context


def _initial(cfg: SynthConfig, s: _Session) -> tuple[list[int], int]:
    tokens = max(int(cfg.initial_context * cfg.max_context), len(s.system) * cfg.block_size + 1)
    n_blocks = math.ceil(tokens / cfg.block_size)
    keep = len(s.system) if cfg.reuse > 0 else 0
    ids = s.system[:keep] + s.fresh(n_blocks - keep)
    return ids, tokens


def _subagent(cfg: SynthConfig, s: _Session, rng: np.random.Generator, index: int, start_t: float) -> SubagentEntry:
    s_t = s.t
    s.t = start_t
    turns = int(rng.integers(cfg.subagent_turns_min, cfg.subagent_turns_max + 1))
    tokens = max(int(0.5 * cfg.initial_context * cfg.max_context), len(s.system) * cfg.block_size + 1)
    n_blocks = math.ceil(tokens / cfg.block_size)
    keep = len(s.system) if cfg.reuse > 0 else 0
    ids = s.system[:keep] + s.fresh(n_blocks - keep)
    reqs: list[TraceRequest] = []
    for k in range(turns):
        out = s.out_tokens()
        if k > 0:
            s.t += s.gap() * 0.5
            new_tokens = s.grow(tokens)
            if not _fit(cfg, new_tokens, out):
                break
            ids = s.blocks_for(ids, tokens, new_tokens)
            tokens = new_tokens
        reqs.append(s.request(tokens, ids, out))
    total = sum(r.in_ + r.out for r in reqs)
    entry = SubagentEntry.model_validate(
        {"t": round(start_t, 4), "type": "subagent", "agent_id": f"agent-{index}",
         "subagent_type": SUBAGENT_TYPES[index % len(SUBAGENT_TYPES)],
         "duration_ms": round((s.t - start_t) * 1000.0, 1), "total_tokens": total, "status": "completed",
         "requests": [r.model_dump(by_alias=True, exclude_none=True) for r in reqs], "models": [cfg.model]}
    )
    end = s.t
    s.t = max(s_t, end)
    return entry


def synth_trace(cfg: SynthConfig, index: int) -> Trace:
    """Session ``index`` of the set: depends only on (seed, index), not on how many sessions."""
    rng = np.random.Generator(np.random.PCG64([cfg.seed, index]))
    s = _Session(cfg, rng)
    turns = int(rng.integers(cfg.turns_min, cfg.turns_max + 1))
    ids, tokens = _initial(cfg, s)
    entries: list[TraceRequest | SubagentEntry] = []
    agents = 0
    for turn in range(turns):
        out = s.out_tokens()
        if turn > 0:
            s.t += s.gap()
            new_tokens = s.grow(tokens)
            if _fit(cfg, new_tokens, out):
                ids = s.blocks_for(ids, tokens, new_tokens)
                tokens = new_tokens
            else:  # compaction: keep the system prefix, start the history over
                ids, tokens = _initial(cfg, s)
        entries.append(s.request(tokens, ids, out))
        if turn < turns - 1 and cfg.fanout_prob > 0 and rng.random() < cfg.fanout_prob:
            width = int(rng.integers(cfg.fanout_width_min, cfg.fanout_width_max + 1))
            start = s.t + 0.05
            stretch = [_subagent(cfg, s, rng, agents + k, start) for k in range(width)]
            agents += width
            entries.extend(stretch)
    return Trace.model_validate(
        {"id": f"synth-{cfg.seed}-{index:05d}", "models": [cfg.model], "block_size": cfg.block_size,
         "hash_id_scope": "local",
         "requests": [e.model_dump(by_alias=True, exclude_none=True) for e in entries]}
    )


def synth_traces(cfg: SynthConfig) -> list[Trace]:
    return [synth_trace(cfg, i) for i in range(cfg.sessions)]
