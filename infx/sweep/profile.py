"""How much load each point of a sweep gets (the point itself says concurrency and lengths)."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator


class LoadProfile(BaseModel):
    """How much load each point gets (the point says concurrency and lengths; this says how long)."""

    model_config = ConfigDict(extra="forbid")

    prompts_per_conc: int = 10  # num_prompts = max(min_prompts, conc * prompts_per_conc)
    min_prompts: int = 8
    warmup_per_conc: int = 1  # warmup requests = conc * warmup_per_conc (excluded from metrics)
    max_isl: int | None = None  # cap the point's lengths (the demo's tiny model has a short context)
    max_osl: int | None = None
    seed: int = 0
    temperature: float | None = Field(None, ge=0)  # sent with every request (None: the engine's default)
    agentic_traces: str | None = None  # weka-format traces for agentic points; None: synthesized into the run dir
    agentic_duration_s: float | None = None  # overrides the point's duration (short CI runs)

    # trials: ``trials`` (``--trials``) overrides the catalog scenario's ``trials:``
    # (``trials_by_point``, filled by the sweep from the catalog); default one trial
    trials: int | None = Field(None, ge=1)
    max_trials: int | None = Field(None, ge=1)  # adaptive: up to this many, until the CI target
    ci_target: float = Field(0.05, gt=0, lt=1)
    trials_by_point: dict[str, int] = Field(default_factory=dict)
    # capacity search (``--search max-concurrency --slo TIER``): per launch group, the largest
    # concurrency meeting the tier its scenario declares (``slo_by_point``, from the catalog)
    search: Literal["max-concurrency"] | None = None
    slo_tier: str | None = None
    slo_by_point: dict[str, dict[str, float]] = Field(default_factory=dict)
    search_max: int = Field(1024, ge=1)
    # ``--stop-at-saturation``: an arm's higher concurrencies are skipped (skipped-saturated) once
    # one of its points saturated (more load bought no throughput, TTFT grew; or TTFT kept rising)
    stop_at_saturation: bool = False
    # ``--stall-timeout``: seconds without a byte before a request is failed as stalled (None: the load
    # generator's 120 s); the first stalled request ends the point and its engine is stopped
    stall_timeout_s: float | None = Field(None, gt=0, le=1e6)

    @field_validator("max_trials")
    @classmethod
    def _adaptive_ceiling(  # type: ignore[explicit-any]  # pydantic's ValidationInfo is typed with Any
            cls, v: int | None, info: ValidationInfo) -> int | None:
        trials = info.data.get("trials") or 1
        if v is not None and v < max(trials, 2):
            raise ValueError(f"--max-trials must be >= 2 and >= --trials, not {v}")
        return v

    @field_validator("slo_tier")
    @classmethod
    def _tier_needs_search(  # type: ignore[explicit-any]  # pydantic's ValidationInfo is typed with Any
            cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and info.data.get("search") is None:
            raise ValueError("--slo TIER is for --search max-concurrency")
        return v

    def trials_for(self, point_id: str) -> int:
        return self.trials or self.trials_by_point.get(point_id, 1)

    def num_prompts(self, conc: int) -> int:
        return max(self.min_prompts, conc * self.prompts_per_conc)

    def key(self) -> str:
        """A short hash of the whole profile, stored in each point's status: resume re-measures a
        point measured with another load."""
        # the stall timeout is not the load (a point that measured never stalled): it does not re-measure
        return "load-" + hashlib.sha256(self.model_dump_json(exclude={"stall_timeout_s"}).encode()).hexdigest()[:16]
