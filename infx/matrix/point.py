"""The typed matrix point: the contract between the matrix stage and every later stage.

The matrix generator emits JSON rows whose keys and order match the reference generator
(hyphenated names such as ``model-prefix``). Downstream stages never handle those rows as
loose dicts: they parse them into :class:`Point` (``Point.from_row``), which accepts every row
kind (fixed-seq-len or agentic, single- or multi-node) and exposes snake_case attributes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from infx.catalog.identity import EntryIdentity

ScenarioType = Literal["fixed-seq-len", "agentic-coding"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Component(_Model):
    """Router / kv-offload backend metadata: ``{name, version?}``."""

    name: str
    version: str | None = None


class Worker(_Model):
    """One prefill or decode worker pool of a multinode point."""

    num_worker: int = Field(alias="num-worker")
    tp: int
    ep: int
    dp_attn: bool = Field(alias="dp-attn")
    pp: int = 1
    dcp_size: int = Field(1, alias="dcp-size")
    pcp_size: int = Field(1, alias="pcp-size")
    hardware: str | None = None
    additional_settings: list[str] = Field(default_factory=list, alias="additional-settings")

    @property
    def gpus(self) -> int:
        return self.num_worker * self.tp * self.pp * self.pcp_size


class Point(_Model, EntryIdentity):
    """One matrix row, typed. ``point_id`` is its stable identity (exp-names collide)."""

    spec_decoding: str = Field("none", alias="spec-decoding")
    scenario_type: ScenarioType = Field("fixed-seq-len", alias="scenario-type")
    exp_name: str = Field(alias="exp-name")
    point_id: str = Field(alias="point-id")
    # fixed-seq-len only
    isl: int | None = None
    osl: int | None = None
    max_model_len: int | None = Field(None, alias="max-model-len")
    # single-node topology (None on multinode rows)
    tp: int | None = None
    pp: int = 1
    dcp_size: int = Field(1, alias="dcp-size")
    pcp_size: int = Field(1, alias="pcp-size")
    ep: int = 1
    dp_attn: bool = Field(False, alias="dp-attn")
    # multinode topology
    prefill: Worker | None = None
    decode: Worker | None = None
    conc: int | list[int]
    disagg: bool = False
    # agentic
    kv_offloading: Literal["none", "dram"] | None = Field(None, alias="kv-offloading")
    kv_offload_backend: Component | None = Field(None, alias="kv-offload-backend")
    total_cpu_dram_gb: int | None = Field(None, alias="total-cpu-dram-gb")
    duration: int | None = None
    # components
    router: Component | None = None
    kv_p2p_transfer: str | None = Field(None, alias="kv-p2p-transfer")
    # evals
    run_eval: bool = Field(False, alias="run-eval")
    eval_only: bool = Field(False, alias="eval-only")
    eval_conc: int | None = Field(None, alias="eval-conc")
    eval_all_concs: bool = Field(False, alias="eval-all-concs")
    recipe_fingerprint: str | None = Field(None, alias="recipe-fingerprint")

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Point:
        return cls.model_validate(row)

    def to_row(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)

    @property
    def multinode(self) -> bool:
        return self.prefill is not None

    @property
    def is_agentic(self) -> bool:
        return self.scenario_type == "agentic-coding"

    @property
    def gpus_per_server(self) -> int:
        """GPUs one engine instance occupies: tp*pp*pcp (DCP reuses the TP GPUs)."""
        if self.multinode:
            assert self.prefill is not None and self.decode is not None
            return self.prefill.gpus + self.decode.gpus
        return (self.tp or 1) * self.pp * self.pcp_size

    @property
    def concs(self) -> list[int]:
        return list(self.conc) if isinstance(self.conc, list) else [self.conc]
