"""The review's typed records: a finding, a rule's result, the whole report (``schema: infx.review/1``),
and the request a command builds once."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Severity = Literal["error", "warning", "note"]
Status = Literal["pass", "warn", "fail", "n/a", "unverified"]
Verdict = Literal["pass", "warn", "fail"]
Format = Literal["text", "json", "markdown", "sarif", "github"]

SCHEMA = "infx.review/1"

#: Every rule, in the order of the spec's rule table (the Markdown comment keeps this order).
RULE_IDS: tuple[str, ...] = (
    "memory-fit", "launch-claims", "eval-coverage", "failure-isolation", "image-pin", "changelog-append",
    "launch-derivation", "recipe-link", "recipe-args", "recipe-hardware",
)

SEVERITY_RANK = {"error": 0, "warning": 1, "note": 2}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Location(_Frozen):
    path: str
    line: int = Field(ge=1)
    end_line: int | None = None  # the line itself when not given
    role: Literal["primary", "related"] = "primary"

    @model_validator(mode="after")
    def _end(self) -> Location:
        if self.end_line is None:
            object.__setattr__(self, "end_line", self.line)
        return self


class Finding(_Frozen):
    id: str
    rule: str
    severity: Severity
    title: str
    message: str
    locations: list[Location] = []
    points: list[str] = []
    evidence: dict[str, Any] = {}
    fingerprint: str = ""

    @property
    def primary(self) -> Location | None:
        return self.locations[0] if self.locations else None

    def sort_key(self) -> tuple[int, str, int, str, str]:
        loc = self.primary
        return (SEVERITY_RANK[self.severity], loc.path if loc else "", loc.line if loc else 0, self.rule, self.id)


def finding(rule: str, severity: Severity, subject: str, title: str, message: str, *,
            locations: list[Location] | None = None, points: list[str] | None = None,
            evidence: dict[str, Any] | None = None, template: str | None = None) -> Finding:
    """A finding with its id (``rule/subject``) and fingerprint (sha256 of rule|subject|message template:
    stable across runs and across line moves)."""
    fp = hashlib.sha256(f"{rule}|{subject}|{template or title}".encode()).hexdigest()
    return Finding(id=f"{rule}/{subject}", rule=rule, severity=severity, title=title, message=message,
                   locations=locations or [], points=sorted(points or [], key=_point_order),
                   evidence=evidence or {}, fingerprint=f"sha256:{fp}")


def _point_order(name: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order: ``..._conc8_...`` before ``..._conc16_...`` (numbers compare as numbers)."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name) if p)


class RuleResult(_Frozen):
    id: str
    status: Status
    reason: str
    findings: list[str] = []


class SideRef(_Frozen):
    ref: str
    sha: str
    readable: bool = True
    problem: str | None = None


class PointCounts(_Frozen):
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0


class Summary(_Frozen):
    errors: int = 0
    warnings: int = 0
    notes: int = 0
    points: PointCounts = PointCounts()


class ReviewReport(_Frozen):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["infx.review/1"] = Field("infx.review/1", alias="schema")
    base: SideRef
    head: SideRef
    verdict: Verdict
    summary: Summary
    rules: list[RuleResult]
    findings: list[Finding]
    repository: str | None = None  # owner/name, for links in the Markdown comment

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude={"repository"})

    def blocking(self, strict: bool = False) -> bool:
        return self.summary.errors > 0 or (strict and self.summary.warnings > 0)


class ReviewRequest(_Frozen):
    """What ``infx review`` was asked: the two refs and every option of the command."""

    base: str = Field(min_length=1)
    head: str = Field(min_length=1)
    event: Path | None = None
    labels: list[str] | None = None
    signoff: Path | None = None
    body: Path | None = None
    recipes_repo: Path | None = None
    link_state: Path | None = None
    link_policy: Literal["infx", "inferencex"] = "infx"
    eval_rule: Literal["infx", "inferencex"] = "infx"
    fanout: float = Field(2.0, ge=1, le=1_000_000)
    verify_images: bool = False
    registry_mirror: list[str] = []
    images_lock: Path | None = None
    format: Format = "text"
    output: Path | None = None
    strict: bool = False
    repository: str | None = None

    @field_validator("registry_mirror")
    @classmethod
    def _mirrors(cls, v: list[str]) -> list[str]:
        for m in v:
            host, sep, url = m.partition("=")
            if not sep or not host or not url:
                raise ValueError(f"expects REGISTRY=URL, got '{m}'")
        return v

    def mirrors(self) -> dict[str, str]:
        return dict(m.partition("=")[::2] for m in self.registry_mirror)
