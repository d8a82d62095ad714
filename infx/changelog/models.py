"""Typed perf-changelog entries.

``perf-changelog.yaml`` is a YAML list; each item says which catalog keys a change touched,
why, and in which pull request. :class:`ChangelogEntry` is the schema of one item (the
reference's field names, ``extra="forbid"``); :class:`ParsedEntry` adds where it came from.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from infx.bounds import NUMBER_ID

ScenarioType = Literal["fixed-seq-len", "agentic-coding"]

#: ``XXX`` is the placeholder a pull request may use until it knows its own number.
PLACEHOLDER_LINK = "XXX"
DEFAULT_REPO_SLUG = "SemiAnalysisAI/InferenceX"
_PR_LINK = re.compile(r"https://github\.com/(?P<slug>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/pull/"
                      f"(?P<number>{NUMBER_ID})")


def pr_link_number(link: str, repo_slug: str = DEFAULT_REPO_SLUG) -> int | None:
    """The PR number of a canonical ``https://github.com/<slug>/pull/<n>`` link, else None."""
    m = _PR_LINK.fullmatch(link)
    if m is None or m.group("slug") != repo_slug:
        return None
    return int(m.group("number"))


def canonical_pr_link(number: int, repo_slug: str = DEFAULT_REPO_SLUG) -> str:
    return f"https://github.com/{repo_slug}/pull/{number}"


class ChangelogEntry(BaseModel):
    """One changelog item. Historical entries are kept as they are (``pr-link`` is any string);
    the gate applies the stricter link rules only to new and corrected entries."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    config_keys: list[StrictStr] = Field(alias="config-keys", min_length=1)
    description: list[StrictStr] = Field(min_length=1)
    pr_link: StrictStr = Field(alias="pr-link")
    scenario_type: list[ScenarioType] | None = Field(None, alias="scenario-type", min_length=1)
    evals_only: StrictBool = Field(False, alias="evals-only")
    all_evals: StrictBool = Field(False, alias="all-evals")
    append_only: StrictBool = Field(False, alias="append-only")
    eval_min_prefill_ep: StrictInt | None = Field(None, alias="eval-min-prefill-ep", ge=1)

    @model_validator(mode="after")
    def _append_only_alone(self) -> ChangelogEntry:
        if self.append_only and (self.evals_only or self.all_evals or self.eval_min_prefill_ep is not None):
            raise ValueError("append-only cannot be combined with eval selection fields")
        return self

    def without_link(self) -> dict[str, object]:
        """Every field except ``pr-link``: what a pr-link-only correction must leave unchanged."""
        return self.model_dump(exclude={"pr_link"})


class ParsedEntry(BaseModel):
    """An entry plus where it is: 0-based ``index`` in the list, 1-based ``line`` of its
    ``- config-keys:`` line and ``end_line`` (last line before the next entry)."""

    model_config = ConfigDict(frozen=True)

    index: int
    line: int
    end_line: int
    entry: ChangelogEntry
    raw: dict[str, object]
    #: 1-based line of each ``config-keys`` item (same order as ``entry.config_keys``)
    key_lines: list[int] = Field(default_factory=list)
    #: 1-based line of the ``pr-link`` value
    link_line: int = 0

    @property
    def label(self) -> str:
        keys = ", ".join(self.entry.config_keys[:3]) + (", ..." if len(self.entry.config_keys) > 3 else "")
        return f"entry #{self.index + 1} [{keys}]"


class Changelog(BaseModel):
    """A parsed changelog file: its exact bytes and its entries in file order."""

    model_config = ConfigDict(frozen=True)

    file: str
    data: bytes
    entries: list[ParsedEntry]
