"""Pass/fail thresholds (InferenceX ``utils/evals/thresholds.yaml`` and ``validate_scores.py``).

Lookup: the model card's ``eval-thresholds[task]`` (per model prefix) -> the task default -> 0.85.
Every filter of the metric must reach the threshold (inclusive): for GSM8K both ``strict-match`` and
``flexible-extract``. A point below is recorded as ``accuracy-fail``.
"""

from __future__ import annotations

from pathlib import Path

from infx.evals.protocol import EvalResult, EvalVerdict

TASK_DEFAULTS: dict[str, float] = {"gsm8k": 0.90, "gpqa_diamond_cot_n_shot": 0.30, "swebench_lite": 0.50}
FALLBACK = 0.85  # validate_scores.py --min-score default


def threshold_for(task: str, model_prefix: str | None, cards_dir: str | Path | None = None) -> tuple[float, str]:
    """``(threshold, where it came from)``."""
    if model_prefix:
        try:
            from infx.preflight.cards import load_cards

            cards = load_cards(cards_dir)
        except Exception:
            cards = None
        card = cards.model_for(model_prefix) if cards is not None else None
        if cards is not None and card is not None and task in card.eval_thresholds:
            return card.eval_thresholds[task], cards.files.get(f"model:{model_prefix}", "model card")
    if task in TASK_DEFAULTS:
        return TASK_DEFAULTS[task], f"task default ({task})"
    return FALLBACK, "fallback"


def judge(result: EvalResult, threshold: float, source: str) -> EvalVerdict:
    failing = [f.name for f in result.filters if f.score < threshold]
    return EvalVerdict(threshold=threshold, source=source, passed=bool(result.filters) and not failing,
                       failing=failing)
