"""The review rules, one small module each, run in the order of the spec's rule table. Each module has
``RULE`` (id, descriptions, default level) and ``check(ctx) -> Outcome``."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from infx.review.models import Finding, Status

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

MODULES = ("memory_fit", "launch_claims", "eval_coverage", "failure_isolation", "image_pin", "changelog_append",
           "launch_derivation", "recipe_link", "recipe_args", "recipe_hardware")


@dataclass(frozen=True)
class RuleInfo:
    id: str
    short: str
    full: str
    level: str  # SARIF defaultConfiguration.level: error | warning | note


@dataclass
class Outcome:
    status: Status
    reason: str
    findings: list[Finding] = field(default_factory=list)


class RuleModule(Protocol):
    """What a rule module provides."""

    RULE: RuleInfo

    def check(self, ctx: ReviewContext) -> Outcome: ...


def modules() -> list[ModuleType]:
    return [importlib.import_module(f"infx.review.rules.{m}") for m in MODULES]


def status_of(findings: list[Finding], passed: str) -> Outcome:
    """pass / warn / fail from the worst finding; the reason is the first error's (else warning's) title."""
    levels: tuple[tuple[str, Status], ...] = (("error", "fail"), ("warning", "warn"))
    for sev, status in levels:
        hit = [f for f in findings if f.severity == sev]
        if hit:
            more = f" (+{len(hit) - 1} more)" if len(hit) > 1 else ""
            return Outcome(status, hit[0].title + more, findings)
    return Outcome("pass", passed, findings)
