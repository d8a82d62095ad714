"""One point's accuracy eval against the engine the sweep launched for it (the evals stage's
``run_eval``), plus the point-directory files it leaves: ``eval.json``, ``eval-samples.jsonl``,
``lm-eval/`` and, last, ``eval-status.json``.

The protocol comes from the point: eval context = min(ISL+OSL+256, the model card's max-context), also
capped at the context the engine was launched with; output budget from that context; concurrency =
the point's ``eval-conc``, else its concurrency. Eval-only points are launched at the eval context
(:func:`eval_launch_point`), as InferenceX restarts the server with ``EVAL_MAX_MODEL_LEN``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from infx.atomic import write_json
from infx.diagnostics import InfxError
from infx.evals.protocol import (
    EVAL_STATUS_FILE,
    EvalProtocol,
    EvalStatus,
    eval_context_length,
    output_budget,
)
from infx.matrix.point import Point


def native_max_context(point: Point, cards_dir: str | None = None) -> int | None:
    try:
        from infx.preflight.cards import load_cards

        card = load_cards(cards_dir).model_for(point.model_prefix)
    except Exception:
        return None
    return card.max_context if card is not None else None


def eval_context_for(point: Point, cards_dir: str | None = None) -> int:
    return eval_context_length(point.isl, point.osl, native_max_context(point, cards_dir), point.max_model_len)


def eval_launch_point(point: Point, cards_dir: str | None = None) -> Point:
    """An eval-only point launches with the eval context as its max model len."""
    if not point.eval_only:
        return point
    return point.model_copy(update={"max_model_len": eval_context_for(point, cards_dir)})


def protocol_for(point: Point, launched_max_len: int | None, limit: int | None,
                 cards_dir: str | None = None) -> EvalProtocol:
    ctx = eval_context_for(point, cards_dir)
    if launched_max_len:
        ctx = min(ctx, launched_max_len)
    conc = point.eval_conc or (min(point.concs) if point.concs else 64)
    return EvalProtocol(max_length=ctx, max_tokens=output_budget(ctx), num_concurrent=conc, limit=limit)


def meta_env(point: Point) -> dict[str, Any]:
    """InferenceX's ``meta_env.json`` fields (isl/osl as strings, as InferenceX writes them)."""
    return {"is_multinode": point.multinode, "framework": point.framework, "precision": point.precision,
            "spec_decoding": point.spec_decoding, "tp": point.tp or 1, "pp": point.pp, "ep": point.ep,
            "dcp_size": point.dcp_size, "pcp_size": point.pcp_size,
            "conc": point.eval_conc or min(point.concs), "dp_attention": point.dp_attn, "model": point.model,
            "infmax_model_prefix": point.model_prefix, "hw": point.runner,
            "isl": str(point.isl or ""), "osl": str(point.osl or ""), "point_id": point.point_id}


def read_eval_status(point_dir: Path) -> EvalStatus | None:
    f = point_dir / EVAL_STATUS_FILE
    if not f.is_file():
        return None
    try:
        return EvalStatus.model_validate_json(f.read_text(encoding="utf-8"))
    except Exception:
        return None


def write_eval_status(point_dir: Path, status: EvalStatus) -> None:
    write_json(point_dir / EVAL_STATUS_FILE, status.model_dump(mode="json"))


def eval_done(point_dir: Path, fingerprint: str, limit: int | None, rerun_failed: bool) -> bool:
    """The point's eval needs no work: graded (pass or accuracy-fail) on this launch with the same limit,
    or failed before and failures are not retried."""
    st = read_eval_status(point_dir)
    if st is None or st.launch_fingerprint != fingerprint or st.protocol.limit != limit:
        return False
    if st.state == "failed":
        return not rerun_failed
    return (point_dir / "eval.json").is_file()


class LocalEvaluator:
    """The sweep's evaluator: lm-eval against the running engine, graded against the card's threshold."""

    def __init__(self, limit: int | None = None, cards_dir: str | None = None, timeout_s: float | None = None,
                 max_retries: int | None = None):
        self.limit = limit
        self.cards_dir = cards_dir
        self.timeout_s = timeout_s
        self.max_retries = max_retries  # None: the protocol's (InferenceX's 5, with lm-eval's 1-10 s backoff)

    def evaluate(self, point: Point, engine: Any, point_dir: Path, fingerprint: str | None = None) -> EvalStatus:
        from infx.evals.runner import EvalFailed, run_eval
        from infx.evals.thresholds import judge, threshold_for
        from infx.sweep.loadbridge import max_model_len

        protocol = protocol_for(point, max_model_len(engine), self.limit, self.cards_dir)
        if self.max_retries is not None:
            protocol = protocol.model_copy(update={"max_retries": self.max_retries})
        started = time.time()
        try:
            result = run_eval(protocol, engine.base_url, engine.served_model_name, point_dir,
                              meta=meta_env(point), timeout_s=self.timeout_s)
        except EvalFailed as exc:
            return EvalStatus(state="failed", reason=exc.message, failure_class=f"eval-{exc.kind}",
                              protocol=protocol, launch_fingerprint=fingerprint, log_tail=exc.log_tail[-8000:],
                              started_at=started, ended_at=time.time())
        except InfxError as exc:
            return EvalStatus(state="failed", reason=str(exc), failure_class="eval-error", protocol=protocol,
                              launch_fingerprint=fingerprint, started_at=started, ended_at=time.time())
        mark, source = threshold_for(protocol.task, point.model_prefix, self.cards_dir)
        verdict = judge(result, mark, source)
        scores = ", ".join(f"{f.name} {f.score:.4f}" for f in result.filters)
        return EvalStatus(state="pass" if verdict.passed else "accuracy-fail",
                          reason="" if verdict.passed else f"{scores} below {mark:g} ({source})",
                          verdict=verdict, protocol=protocol, launch_fingerprint=fingerprint,
                          started_at=started, ended_at=time.time())
