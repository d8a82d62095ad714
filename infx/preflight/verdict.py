"""What the gate says about a point: typed checks, the memory breakdown, one overall status.

``PointVerdict`` is what ``infx preflight --json`` prints and what ``infx run`` consumes
(:func:`infx.preflight.gate.preflight_points`): a failing point is skipped with ``reason``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["ok", "warn", "fail", "skip"]
_RANK = {"skip": 0, "ok": 1, "warn": 2, "fail": 3}


def worst(statuses: list[Status]) -> Status:
    """The most severe of several statuses (``skip`` counts as nothing to report)."""
    rel = [s for s in statuses if s != "skip"]
    return max(rel, key=_RANK.__getitem__) if rel else "ok"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Check(_Model):
    """One check on one point. ``name`` is a stable rule id (``memory``, ``image-pinned``, ...)."""

    name: str
    status: Status
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


#: Where a memory line is held: on each GPU, or in the host memory of each server.
Where = Literal["gpu", "host"]


class MemoryLine(_Model):
    """One component of the per-GPU (or per-server host) memory breakdown."""

    component: str
    bytes: int
    where: Where
    note: str = ""
    estimate: bool = False


class MemoryReport(_Model):
    """The memory check of one point, with every number it used."""

    status: Status
    device: str
    engine_rule: str
    capacity_bytes: int
    budget_bytes: int
    needed_bytes: int
    margin_bytes: int
    gpu: list[MemoryLine] = Field(default_factory=list)
    kv_pool_bytes: int | None = None
    kv_bytes_per_token: int | None = None
    kv_tokens: int | None = None
    max_model_len: int | None = None
    seq_len: int | None = None
    seqs_fit: float | None = None
    host: list[MemoryLine] = Field(default_factory=list)  # per server
    host_per_server_bytes: int = 0
    servers_per_node: int | None = None
    host_per_node_bytes: int | None = None
    host_available_bytes: int | None = None
    findings: list[str] = Field(default_factory=list)  # everything found, in order
    problems: list[str] = Field(default_factory=list)  # the findings behind a warn/fail status
    settings: dict[str, str] = Field(default_factory=dict)  # launch settings used, with their source


class PointVerdict(_Model):
    point_id: str
    exp_name: str
    config_key: str | None = None
    runner: str
    status: Status
    checks: list[Check] = Field(default_factory=list)
    memory: MemoryReport | None = None
    launch_fingerprint: str | None = None

    @property
    def reason(self) -> str:
        """One line naming every failing (else warning) check, for ``infx run`` to record."""
        for level in ("fail", "warn"):
            bad = [c for c in self.checks if c.status == level]
            if bad:
                return "; ".join(f"{c.name}: {c.message}" for c in bad)
        return ""

    @property
    def ok_to_run(self) -> bool:
        return self.status != "fail"

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)
