"""``recipe-args``: a changed point's major server arguments against the upstream recipe it links.
The upstream-recipe reader is not in this tree; the rule says so until a recipes check is plugged in
(:data:`CHECK`: a function ``(ctx) -> Outcome``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from infx.review.rules import Outcome, RuleInfo

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("recipe-args", "Major server arguments match the linked upstream recipe",
                "Each changed single-node point's normalised argv against the upstream recipe rendering it "
                "links (model, parallelism, backends, spec decoding, engine-specific configs).", "error")

#: The recipes stage's check, when one is installed; None: the rule is N/A with the reason below.
CHECK: Callable[[ReviewContext], Outcome] | None = None
REASON = "the recipe reader is not in this tree"


def check(ctx: ReviewContext) -> Outcome:
    if CHECK is None:
        return Outcome("n/a", REASON)
    return CHECK(ctx)
