"""The eval protocol of one matrix point (the sweep grades points on the engine it launched for them).

Eval context = min(ISL+OSL+256, the model card's max-context), also capped at the context the engine was
launched with; output budget from that context; concurrency = the point's ``eval-conc``, else its
concurrency. Eval-only points are launched at the eval context (:func:`eval_launch_point`), as InferenceX
restarts the server with ``EVAL_MAX_MODEL_LEN``. :func:`meta_env` is InferenceX's ``meta_env.json`` for it.
"""

from __future__ import annotations

from typing import Any

from infx.evals.protocol import EvalProtocol, eval_context_length, output_budget
from infx.matrix.point import Point


def native_max_context(point: Point, cards_dir: str | None = None) -> int | None:
    """The model card's ``max-context`` (None when no card says)."""
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
