"""The eval protocol and its outputs as typed models.

Defaults follow InferenceX's protocol (shared/spec/inferencex-evals-power-results.md section 1): chat
completions with the chat template, few-shot as multi-turn, greedy (temperature 0, top_p 1), seed 1234,
the context rule ISL+OSL+256 capped at the model's native maximum, and the output budget rule
(ctx - 4096 above 4096 tokens, else ctx // 2, capped at 16384).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from infx.pointfiles import EVAL_FILE as EVAL_FILE
from infx.pointfiles import EVAL_SAMPLES_FILE
from infx.pointfiles import EVAL_STATUS_FILE as EVAL_STATUS_FILE
from infx.pointfiles import LMEVAL_DIR as LMEVAL_DIR

SAMPLES_FILE = EVAL_SAMPLES_FILE

DEFAULT_TASK = "gsm8k"
CONTEXT_PAD = 256
FALLBACK_CONTEXT = 16384
MAX_OUTPUT_BUDGET = 16384
SEED = 1234

Endpoint = Literal["chat", "completions"]


def eval_context_length(isl: int | None, osl: int | None, native_max: int | None,
                        fallback: int | None = None) -> int:
    """InferenceX ``compute_eval_context_length``: ISL+OSL+256 (0 when unknown means the native max),
    capped at the native max when that is known; a result <= 0 falls back to ``fallback`` then 16384."""
    requested = (isl or 0) + (osl or 0) + CONTEXT_PAD if isl and osl else 0
    ctx = requested if requested > 0 else (native_max or 0)
    if native_max and native_max > 0:
        ctx = min(ctx, native_max)
    if ctx <= 0:
        ctx = fallback or FALLBACK_CONTEXT
    return ctx


def output_budget(ctx: int) -> int:
    """Max generated tokens per question: ctx - 4096 when ctx > 4096, else ctx // 2; at most 16384."""
    budget = ctx - 4096 if ctx > 4096 else ctx // 2
    return min(budget, MAX_OUTPUT_BUDGET)


class _Model(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")


class EvalProtocol(_Model):
    """Everything that decides which score a server gets. Two evals are comparable question by
    question only when their protocols agree (see :meth:`comparable_key`)."""

    task: str = DEFAULT_TASK
    endpoint: Endpoint = "chat"
    apply_chat_template: bool = True
    fewshot_as_multiturn: bool = True
    num_fewshot: int | None = None  # None: the task's own (gsm8k: 5)
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = SEED
    max_length: int = FALLBACK_CONTEXT  # eval context (the server runs with this max model len)
    max_tokens: int = Field(default_factory=lambda: output_budget(FALLBACK_CONTEXT))
    num_concurrent: int = 64
    timeout_s: float = 1800.0
    max_retries: int = 5
    limit: int | None = None  # first N test questions; None: the whole set
    local_task: bool = True  # the shipped offline task (no hub)

    def comparable_key(self) -> tuple[object, ...]:
        """What must agree for a paired comparison (concurrency, timeouts and retries do not change answers)."""
        return (self.task, self.endpoint, self.apply_chat_template, self.fewshot_as_multiturn, self.num_fewshot,
                self.temperature, self.top_p, self.seed, self.max_tokens)


class EvalRequest(_Model):
    """What ``infx eval`` is asked: the server, the task and the protocol knobs given on the command line.
    ``None`` knobs take the protocol's defaults, or the context rule's (:meth:`protocol`)."""

    base_url: str
    model: str
    out: str
    task: str = DEFAULT_TASK
    limit: int | None = Field(None, ge=1)
    num_concurrent: int | None = Field(None, ge=1)
    chat: bool = True
    isl: int = Field(8192, ge=1)  # the context rule's benchmark lengths
    osl: int = Field(1024, ge=1)
    model_max_len: int | None = Field(None, ge=16)  # None: the server's, from /v1/models
    max_length: int | None = Field(None, ge=16)
    max_tokens: int | None = Field(None, ge=1)
    num_fewshot: int | None = Field(None, ge=0)
    model_prefix: str | None = None
    threshold: float | None = Field(None, ge=0, le=1)
    timeout_s: float | None = Field(None, gt=0)
    max_retries: int | None = Field(None, ge=0)

    @field_validator("task")
    @classmethod
    def _named(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("--task must name an lm-eval task, not be empty")
        return v

    def protocol(self, native_max: int | None, local_task: bool) -> EvalProtocol:
        """The protocol this request runs: context = ``max_length``, else the context rule over ``isl``,
        ``osl`` and the model's native maximum; output budget from that context unless given."""
        ctx = self.max_length or eval_context_length(self.isl, self.osl, native_max)
        given = {"num_fewshot": self.num_fewshot, "num_concurrent": self.num_concurrent,
                 "timeout_s": self.timeout_s, "max_retries": self.max_retries, "limit": self.limit}
        return EvalProtocol.model_validate({
            "task": self.task, "endpoint": "chat" if self.chat else "completions", "apply_chat_template": self.chat,
            "fewshot_as_multiturn": self.chat, "max_length": ctx, "max_tokens": self.max_tokens or output_budget(ctx),
            "local_task": local_task, **{k: v for k, v in given.items() if v is not None}})


class FilterScore(_Model):
    name: str  # lm-eval filter name: strict-match, flexible-extract
    score: float = Field(ge=0, le=1)  # a fraction of questions (NaN, inf and negatives refused)
    stderr: float | None = Field(None, ge=0)


class EvalSample(_Model):
    """One question: what was asked, answered, extracted and whether each filter scored it right."""

    doc_id: int
    prompt: str  # the request as sent (chat: JSON of the messages)
    response: str
    target: str
    extracted: dict[str, str] = Field(default_factory=dict)  # filter -> extracted answer
    correct: dict[str, bool] = Field(default_factory=dict)  # filter -> exact match


class EvalResult(_Model):
    """``eval.json``."""

    task: str
    metric: str = "exact_match"
    filters: list[FilterScore]
    n: int = Field(ge=0)  # questions scored
    protocol: EvalProtocol
    lm_eval_version: str
    base_url: str
    model: str
    started_at: float
    ended_at: float
    wall_s: float

    def score(self, name: str) -> float | None:
        for f in self.filters:
            if f.name == name:
                return f.score
        return None

    @property
    def primary(self) -> float | None:
        """InferenceX's headline score: the strict filter (else the first)."""
        for f in self.filters:
            if "strict" in f.name:
                return f.score
        return self.filters[0].score if self.filters else None


class EvalVerdict(_Model):
    """The threshold gate on one eval: every filter must reach the threshold (inclusive)."""

    threshold: float
    source: str  # where the threshold came from (card file / task default / fallback)
    passed: bool
    failing: list[str] = Field(default_factory=list)  # filters below the threshold


EvalState = Literal["pass", "accuracy-fail", "failed"]


class EvalStatus(_Model):
    """``eval-status.json``, written last (after ``eval.json``): the eval's outcome for one point.
    ``failed``: no complete score (server errors, time-outs, engine died); the reason says why."""

    state: EvalState
    reason: str = ""
    failure_class: str | None = None
    verdict: EvalVerdict | None = None
    protocol: EvalProtocol
    launch_fingerprint: str | None = None
    log_tail: str = ""
    started_at: float
    ended_at: float
