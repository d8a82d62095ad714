"""``launch-derivation``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infx.review.rules import Outcome, RuleInfo

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("launch-derivation", "launch-derivation", "launch-derivation", "warning")


def check(ctx: ReviewContext) -> Outcome:
    return Outcome("n/a", "not implemented")
