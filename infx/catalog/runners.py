"""``runners.yaml``: runner labels -> concrete node names, plus per-fleet hardware facts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from infx.diagnostics import Diagnostic, InfxError


class HardwareFacts(BaseModel):
    """What the DRAM budget needs to know about one fleet."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", populate_by_name=True, frozen=True)

    available_cpu_dram_mib: Annotated[StrictInt, Field(gt=0)] = Field(alias="available-cpu-dram-mib")
    gpus_per_node: Annotated[StrictInt, Field(gt=0)] = Field(alias="gpus-per-node")
    # infx extension: compute nodes a job on this fleet can be given (the names under a runner label
    # are GitHub runners / login nodes that submit Slurm jobs, not compute nodes, so they are never
    # counted). Absent: the deployment-size check says capacity is unknown.
    nodes: Annotated[StrictInt, Field(gt=0)] | None = None
    # infx extension: how a launch on this fleet runs (infx.engines.runtimes): on this machine (local), in the
    # image under docker or podman, or as a Slurm step in the image (Pyxis). Absent: local.
    runtime: Literal["local", "docker", "podman", "slurm"] | None = None


class RunnerConfig(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", populate_by_name=True, frozen=True)

    labels: dict[str, Annotated[list[StrictStr], Field(min_length=1)]]
    hardware: dict[str, HardwareFacts] = Field(default_factory=dict)

    def nodes(self, label: str) -> list[str]:
        return list(self.labels.get(label, ()))

    def runtimes(self) -> dict[str, str]:
        """Runner label -> the runtime its fleet declares (labels without one run local)."""
        return {name: hw.runtime for name, hw in self.hardware.items() if hw.runtime is not None}


def load_runners(path: str | Path) -> RunnerConfig:
    """Load and validate a runners.yaml. Bad input raises InfxError with file:line:col diagnostics."""
    from infx.yamlsource import load_yaml

    src = load_yaml(path)
    if not isinstance(src.data, dict):
        raise InfxError(Diagnostic("runner config must be a mapping with a 'labels' mapping", src.file, 1, 1))
    try:
        return RunnerConfig.model_validate(src.data)
    except ValidationError as exc:
        raise InfxError(src.diags_from_validation(exc)) from None
