"""Close the loop on memory: the KV capacity the gate predicted for a launch against what the
engine logged at start-up (vLLM: ``GPU/CPU KV cache size: N tokens``). Stored with the run, the
comparisons tell how far the cards and budget rules can be trusted."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from infx.matrix.point import Point
from infx.preflight.cards import CardSet

DEFAULT_TOLERANCE = 0.05  # |predicted / logged - 1| within 5% counts as a match


class KvCapacityComparison(BaseModel):
    """Predicted vs logged KV-cache capacity of one launch (tokens)."""

    model_config = ConfigDict(extra="forbid")

    point_id: str
    launch_fingerprint: str | None = None
    predicted_tokens: int | None
    logged_tokens: int | None
    ratio: float | None  # predicted / logged
    status: Literal["match", "mismatch", "unknown"]
    tolerance: float = DEFAULT_TOLERANCE

    def summary(self) -> dict[str, Any]:
        """Flat scalars for a results row (e.g. ``StartupSummary.other``)."""
        return {"kv_tokens_predicted": self.predicted_tokens, "kv_tokens_logged": self.logged_tokens,
                "kv_prediction_ratio": self.ratio, "kv_prediction": self.status}


def compare_kv_capacity(point: Point, launch: Any, logged_tokens: int | None, cards: CardSet | None = None, *,
                        runners: Any = None, tolerance: float = DEFAULT_TOLERANCE) -> KvCapacityComparison:
    """Compare :func:`~infx.preflight.gate.predict_kv_capacity` with the engine's logged figure."""
    from infx.preflight.gate import predict_kv_capacity

    predicted = predict_kv_capacity(point, launch, cards, runners=runners)
    ratio = predicted / logged_tokens if predicted is not None and logged_tokens else None
    if ratio is None:
        status: Literal["match", "mismatch", "unknown"] = "unknown"
    else:
        status = "match" if abs(ratio - 1) <= tolerance else "mismatch"
    return KvCapacityComparison(point_id=point.point_id, launch_fingerprint=getattr(launch, "fingerprint", None),
                                predicted_tokens=predicted, logged_tokens=logged_tokens,
                                ratio=None if ratio is None else round(ratio, 6), status=status, tolerance=tolerance)
