"""``recipe-hardware``: the upstream recipe's hardware status for a changed point's GPU.
The upstream-recipe reader is not in this tree; the rule says so until a recipes check is plugged in
(:data:`CHECK`: a function ``(ctx) -> Outcome``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from infx.review.rules import Outcome, RuleInfo

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("recipe-hardware", "The upstream recipe supports the runner hardware",
                "The upstream recipe's meta.hardware status for each changed point's GPU "
                "(supported, unsupported, unknown).", "warning")

#: The recipes stage's check, when one is installed; None: the rule is N/A with the reason below.
CHECK: Callable[[ReviewContext], Outcome] | None = None
REASON = "the recipe reader is not in this tree"


def check(ctx: ReviewContext) -> Outcome:
    if CHECK is None:
        return Outcome("n/a", REASON)
    return CHECK(ctx)
