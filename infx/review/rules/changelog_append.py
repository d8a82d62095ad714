"""``changelog-append``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infx.review.rules import Outcome, RuleInfo

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("changelog-append", "changelog-append", "changelog-append", "warning")


def check(ctx: ReviewContext) -> Outcome:
    return Outcome("n/a", "not implemented")
