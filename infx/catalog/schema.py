"""Pydantic v2 models of a master catalog entry (the public InferenceX format).

One master entry is either single-node (``multinode: false``) or multinode (``multinode: true``).
Each has ``scenarios`` with ``fixed-seq-len`` items (isl/osl + search space) and/or
``agentic-coding`` items (search space + ``dram-utilization``). Every model forbids unknown keys.
Rules that span several fields of one search-space entry (concurrency form, ``tp % dcp-size``,
kv-offload fields, agentic topology) live here as model validators and raise :class:`At`, which
names the offending sub-key so the diagnostic points at that YAML node. Rules across a whole
master entry (agentic needs a cluster runner, component scope, disagg) live in ``rules.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    StrictInt,
    field_validator,
    model_validator,
)

from infx.catalog.identity import EntryIdentity
from infx.diagnostics import PathElem

SpecDecoding = Literal["mtp", "draft_model", "ngram", "none"]
KvOffloading = Literal["none", "dram"]
#: pp / dcp-size / pcp-size: strict ints (no "2", 2.0 or true), > 0, default 1.
PosStrictInt = Annotated[StrictInt, Field(gt=0)]

CLUSTER_LABEL_PREFIX = "cluster:"


class At(ValueError):
    """A validation error that names the sub-path (relative to the model) it is about."""

    def __init__(self, message: str, *subpath: PathElem):
        super().__init__(message)
        self.infx_subpath: tuple[PathElem, ...] = subpath


class _Model(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", populate_by_name=True)


class ComponentMetadata(_Model):
    """A named component with a version, e.g. ``router: {name: sglang-router, version: "0.3.2"}``."""

    name: str = Field(min_length=1)
    version: str = Field(min_length=1)

    @field_validator("version")
    @classmethod
    def _no_image_version(cls, v: str) -> str:
        if v.startswith("image:"):
            raise ValueError("version must be a real version, not an 'image:' reference")
        return v


class KVOffloadBackendMetadata(_Model):
    """``kv-offload-backend: {name, version?}``."""

    name: str = Field(min_length=1)
    version: str | None = Field(None, min_length=1)

    @field_validator("version")
    @classmethod
    def _no_image_version(cls, v: str | None) -> str | None:
        if v is not None and v.startswith("image:"):
            raise ValueError("version must be a real version, not an 'image:' reference")
        return v


def _check_tp_dcp(tp: int | None, dcp: int) -> None:
    if tp is not None and tp % dcp != 0:
        raise At(f"'tp' ({tp}) must be divisible by 'dcp-size' ({dcp})", "dcp-size")


class WorkerConfig(_Model):
    """One prefill or decode worker pool. Emitted with its YAML keys in YAML order."""

    num_worker: int = Field(alias="num-worker", ge=0, le=4096)  # renderers start each worker: bounded
    tp: int = Field(ge=1)
    pp: PosStrictInt = 1
    dcp_size: PosStrictInt = Field(1, alias="dcp-size")
    pcp_size: PosStrictInt = Field(1, alias="pcp-size")
    ep: int
    dp_attn: bool = Field(alias="dp-attn")
    hardware: str | None = Field(None, min_length=1)
    additional_settings: list[str] | None = Field(default_factory=list, alias="additional-settings")

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: ModelWrapValidatorHandler[WorkerConfig]) -> WorkerConfig:
        model = handler(data)
        if isinstance(data, dict):  # validated with extra="forbid": every key is a field name or alias
            model._yaml_keys = tuple(data)
        return model

    @model_validator(mode="after")
    def _topology(self) -> WorkerConfig:
        _check_tp_dcp(self.tp, self.dcp_size)
        return self

    _yaml_keys: tuple[str, ...] = ()

    def row_dict(self) -> dict[str, Any]:
        """The worker as emitted in a matrix row: YAML keys in YAML order, then pp/dcp-size/pcp-size."""
        values = {
            "num-worker": self.num_worker, "tp": self.tp, "pp": self.pp, "dcp-size": self.dcp_size,
            "pcp-size": self.pcp_size, "ep": self.ep, "dp-attn": self.dp_attn, "hardware": self.hardware,
            "additional-settings": self.additional_settings,
        }
        keys = [_ALIAS.get(k, k) for k in self._yaml_keys] or ["num-worker", "tp", "ep", "dp-attn"]
        out = {k: values[k] for k in keys if k in values}
        for k in ("pp", "dcp-size", "pcp-size"):
            out.setdefault(k, values[k])
        return out

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp * self.pcp_size


_ALIAS = {"num_worker": "num-worker", "dcp_size": "dcp-size", "pcp_size": "pcp-size",
          "dp_attn": "dp-attn", "additional_settings": "additional-settings"}


class _Conc(_Model):
    """Concurrency: either ``conc-start`` + ``conc-end`` (geometric expansion) or a ``conc-list``."""

    conc_start: int | None = Field(None, alias="conc-start")
    conc_end: int | None = Field(None, alias="conc-end")
    conc_list: list[int] | None = Field(None, alias="conc-list")

    def _check_conc(self) -> None:
        has_list = bool(self.conc_list)
        has_start, has_end = self.conc_start is not None, self.conc_end is not None
        if has_list and (has_start or has_end):
            raise At("specify either 'conc-list' or 'conc-start' and 'conc-end', not both", "conc-list")
        if not has_list and not (has_start and has_end):
            raise At("Must specify either 'conc-list' list or both 'conc-start' and 'conc-end'.")
        if has_list:
            assert self.conc_list is not None
            for i, c in enumerate(self.conc_list):
                if c <= 0:
                    raise At(f"'conc-list' values must be > 0, got {c}", "conc-list", i)
            return
        assert self.conc_start is not None and self.conc_end is not None
        if self.conc_start <= 0:
            raise At(f"'conc-start' must be > 0, got {self.conc_start}", "conc-start")
        if self.conc_end <= 0:
            raise At(f"'conc-end' must be > 0, got {self.conc_end}", "conc-end")
        if self.conc_start > self.conc_end:
            raise At(f"'conc-start' ({self.conc_start}) must be <= 'conc-end' ({self.conc_end})", "conc-start")


class _Parallelism(_Conc):
    """The top-level topology of a single-node arm (fixed or agentic): tp and what shards beside it."""

    tp: int | None = None
    pp: PosStrictInt = 1
    dcp_size: PosStrictInt = Field(1, alias="dcp-size")
    pcp_size: PosStrictInt = Field(1, alias="pcp-size")
    ep: int | None = None
    dp_attn: bool | None = Field(None, alias="dp-attn")
    spec_decoding: SpecDecoding = Field("none", alias="spec-decoding")


class SingleNodeSearchSpaceEntry(_Parallelism):
    tp: int  # required here (an override keeps the field's place: conc fields, tp, pp, ...)
    router: ComponentMetadata | None = None

    @model_validator(mode="after")
    def _rules(self) -> SingleNodeSearchSpaceEntry:
        self._check_conc()
        _check_tp_dcp(self.tp, self.dcp_size)
        return self


class MultiNodeSearchSpaceEntry(_Conc):
    spec_decoding: SpecDecoding = Field("none", alias="spec-decoding")
    prefill: WorkerConfig
    decode: WorkerConfig
    router: ComponentMetadata | None = None
    kv_p2p_transfer: str | None = Field(None, alias="kv-p2p-transfer", min_length=1)

    @model_validator(mode="after")
    def _rules(self) -> MultiNodeSearchSpaceEntry:
        self._check_conc()
        if (self.prefill.hardware is None) != (self.decode.hardware is None):
            raise At("'hardware' must be specified for both 'prefill' and 'decode', or neither", "prefill")
        return self


class AgenticCodingSearchSpaceEntry(_Parallelism):
    """A single-node agentic arm (``tp``) or a multinode one (``prefill`` + ``decode``)."""

    prefill: WorkerConfig | None = None
    decode: WorkerConfig | None = None
    kv_offloading: KvOffloading | None = Field(None, alias="kv-offloading")
    kv_offload_backend: KVOffloadBackendMetadata | None = Field(None, alias="kv-offload-backend")
    router: ComponentMetadata | None = None
    kv_p2p_transfer: str | None = Field(None, alias="kv-p2p-transfer", min_length=1)

    @property
    def multinode(self) -> bool:
        return self.prefill is not None

    @model_validator(mode="after")
    def _rules(self) -> AgenticCodingSearchSpaceEntry:
        has_workers = self.prefill is not None and self.decode is not None
        if (self.tp is None) == (not has_workers) or (self.prefill is None) != (self.decode is None):
            raise At("Agentic search-space entries must specify either tp or both prefill and decode")
        self._check_conc()
        if self.tp is not None:
            _check_tp_dcp(self.tp, self.dcp_size)
            if self.kv_offloading is None:
                raise At("single-node agentic entries must set 'kv-offloading' (none or dram)")
        else:
            for name in ("pp", "dcp_size", "pcp_size"):
                if name in self.model_fields_set:
                    alias = _ALIAS.get(name, name)
                    raise At(f"multinode agentic entries may not set top-level '{alias}' (set it per worker)", alias)
        if self.kv_offload_backend is not None:
            if self.kv_offloading is None:
                raise At("'kv-offload-backend' requires 'kv-offloading'", "kv-offload-backend")
            if self.kv_offloading == "none":
                raise At("'kv-offload-backend' is not allowed with kv-offloading 'none'", "kv-offload-backend")
        elif self.kv_offloading == "dram":
            raise At("kv-offloading 'dram' requires 'kv-offload-backend'", "kv-offloading")
        return self


def _check_slo(v: dict[str, dict[str, float]] | None) -> dict[str, dict[str, float]] | None:
    """Every tier has at least one known ``<metric>_<stat>_ms`` ceiling > 0."""
    from infx.catalog.slo import check_tier

    if v is None:
        return v
    for name, tier in v.items():
        for key in tier:
            try:
                check_tier({key: tier[key]})
            except ValueError as exc:
                raise At(str(exc), name, key) from None
        if not tier:
            raise At(f"SLO tier {name!r} has no ceiling (e.g. ttft_p95_ms: 500)", name)
    return v


class _ScenarioExtensions(_Model):
    """infx's extensions to every scenario: trials per point (``infx run --trials`` overrides)
    and SLO tiers, e.g. ``slo: {interactive: {ttft_p95_ms: 500, tpot_p95_ms: 30}}``."""

    trials: int | None = Field(None, ge=1, strict=True)
    slo: dict[str, dict[str, float]] | None = None

    @field_validator("slo")
    @classmethod
    def _slo(cls, v: dict[str, dict[str, float]] | None) -> dict[str, dict[str, float]] | None:
        return _check_slo(v)


class SingleNodeFixedSeqLen(_ScenarioExtensions):
    isl: int
    osl: int
    search_space: list[SingleNodeSearchSpaceEntry] = Field(alias="search-space")


class MultiNodeFixedSeqLen(_ScenarioExtensions):
    isl: int
    osl: int
    search_space: list[MultiNodeSearchSpaceEntry] = Field(alias="search-space")


class AgenticCodingConfig(_ScenarioExtensions):
    search_space: list[AgenticCodingSearchSpaceEntry] = Field(alias="search-space")
    dram_utilization: float | None = Field(None, alias="dram-utilization", gt=0, le=1)

    @model_validator(mode="after")
    def _dram(self) -> AgenticCodingConfig:
        if self.dram_utilization is None:
            for i, e in enumerate(self.search_space):
                if e.kv_offloading == "dram":
                    raise At("kv-offloading='dram' requires dram-utilization with runner hardware metadata",
                             "search-space", i, "kv-offloading")
        return self


class _Scenarios(_Model):
    agentic_coding: list[AgenticCodingConfig] = Field(default_factory=list, alias="agentic-coding")
    if TYPE_CHECKING:  # each subclass declares the field with its own row type (its position: after this one)
        fixed_seq_len: Sequence[SingleNodeFixedSeqLen | MultiNodeFixedSeqLen]

    @model_validator(mode="after")
    def _at_least_one(self) -> _Scenarios:
        if not self.fixed_seq_len and not self.agentic_coding:
            raise At("At least one scenario type must be specified")
        return self


class SingleNodeScenarios(_Scenarios):
    fixed_seq_len: list[SingleNodeFixedSeqLen] = Field(default_factory=list, alias="fixed-seq-len")


class MultiNodeScenarios(_Scenarios):
    fixed_seq_len: list[MultiNodeFixedSeqLen] = Field(default_factory=list, alias="fixed-seq-len")


class _MasterBase(_Model, EntryIdentity):
    router: ComponentMetadata | None = None

    @property
    def is_cluster_runner(self) -> bool:
        return self.runner.startswith(CLUSTER_LABEL_PREFIX)


class SingleNodeMasterEntry(_MasterBase):
    multinode: Literal[False]
    disagg: Literal[False] = False
    scenarios: SingleNodeScenarios


class MultiNodeMasterEntry(_MasterBase):
    multinode: Literal[True]
    disagg: bool = False
    kv_p2p_transfer: str | None = Field(None, alias="kv-p2p-transfer", min_length=1)
    scenarios: MultiNodeScenarios


MasterEntry = SingleNodeMasterEntry | MultiNodeMasterEntry
