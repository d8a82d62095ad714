"""Typed upstream vLLM recipe files (vllm-project/recipes): a model recipe, the taxonomy, a strategy.

Every key the upstream site reads has a field. Upstream has no schema and ignores keys it does not
know, so every model allows extra keys (kept, never read). Values upstream accepts in several shapes
(a number or a hardware-keyed map, a string image or a brand map) are typed as those unions.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: A value keyed by exact GPU id, generation, lower-case brand or ``default``.
HardwareKeyed = dict[str, Any]


class _Open(BaseModel):
    """Unknown keys are kept and ignored, as upstream does."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


# ---- taxonomy.yaml ---------------------------------------------------------------------------------


class HardwareProfile(_Open):
    brand: str | None = None
    generation: str | list[str] | None = None
    gpu_generation: str | list[str] | None = None
    display_name: str | None = None
    description: str | None = None
    gpu_count: int | None = None
    vram_gb: float | None = None
    multi_node: bool | None = None
    restricted: bool = False
    scalable: bool = True

    @property
    def gen(self) -> str | None:
        """The generation used for ``hardware_overrides`` lookups (the first of a list)."""
        g = self.generation or self.gpu_generation
        if isinstance(g, list):
            return g[0] if g else None
        return g

    @property
    def gens(self) -> list[str]:
        g = self.generation or self.gpu_generation
        return list(g) if isinstance(g, list) else ([g] if g else [])

    @property
    def gpus(self) -> int:
        return self.gpu_count if isinstance(self.gpu_count, int) and not isinstance(self.gpu_count, bool) else 1


class Taxonomy(_Open):
    hardware_profiles: dict[str, HardwareProfile] = Field(default_factory=dict)
    tasks: Any = None
    strategies: Any = None
    kv_offload: dict[str, Any] = Field(default_factory=dict)


# ---- strategies/*.yaml, kv_store/*.yaml ------------------------------------------------------------


class Strategy(_Open):
    name: str | None = None
    deploy_type: str = "single_node"
    display_name: str | None = None
    orientation: str | None = None
    description: str | None = None
    hardware_match: dict[str, Any] = Field(default_factory=dict)
    vllm_args: list[str] = Field(default_factory=list)
    env: dict[str, Any] = Field(default_factory=dict)
    parallel_flag: str | None = None
    parallelism: str | None = None


# ---- models/<org>/<repo>.yaml ----------------------------------------------------------------------

HardwareStatus = Literal["verified", "unsupported"]


class Meta(_Open):
    title: str | None = None
    slug: str | None = None
    provider: str | None = None
    description: str | None = None
    date_added: Any = None
    date_updated: Any = None
    difficulty: str | None = None
    tasks: list[str] = Field(default_factory=list)
    performance_headline: str | None = None
    related_recipes: list[Any] = Field(default_factory=list)
    hardware: dict[str, HardwareStatus] = Field(default_factory=dict)
    default_hardware: str | None = None
    platforms: list[Any] = Field(default_factory=list)


class InstallStep(_Open):
    command: str | None = None
    note: str | None = None


class ModelInfo(_Open):
    model_id: str
    min_vllm_version: str | None = None
    nightly_required: bool = False
    docker_image: str | dict[str, Any] | None = None
    architecture: str | None = None
    parameter_count: str | int | float | None = None
    active_parameters: str | int | float | None = None
    context_length: int | None = None
    base_args: list[str] = Field(default_factory=list)
    base_env: dict[str, Any] = Field(default_factory=dict)
    install: dict[str, Literal[False] | InstallStep] = Field(default_factory=dict)
    supports_dcp: bool | None = None
    flashinfer_autotune: bool | None = None
    docker_source: Any = None
    default_frontend: Any = None


class Dependency(_Open):
    command: str
    note: str | None = None
    optional: bool = False
    brand: str | None = None
    install_modes: list[str] | None = None


class ArgsBlock(_Open):
    """``hardware_overrides.<key>`` of a feature or a mode: REPLACES the args."""

    args: list[str] | None = None


class FeatureMode(_Open):
    label: str | None = None
    description: str | None = None
    args: list[str] | None = None
    variants: list[str] | None = None
    hardware: dict[str, str] | None = None
    hardware_overrides: dict[str, ArgsBlock] | None = None


class Feature(_Open):
    description: str | None = None
    label: str | None = None
    args: list[str] | None = None
    strategies: list[str] | None = None
    companion: dict[str, Any] | None = None
    hardware_overrides: dict[str, ArgsBlock] | None = None
    default_mode: str | None = None
    modes: dict[str, FeatureMode] | None = None


class Override(_Open):
    """A ``hardware_overrides.<key>`` block of the recipe, a variant or a strategy override."""

    extra_args: list[str] | None = None
    extra_env: dict[str, Any] | None = None
    docker_image: str | dict[str, Any] | None = None


class Variant(_Open):
    model_id: str | None = None
    precision: str | None = None
    vram_minimum_gb: float | None = None
    description: str | None = None
    label: str | None = None
    extra_args: list[str] | None = None
    extra_env: dict[str, Any] | None = None
    tp: int | HardwareKeyed | None = None
    hardware_overrides: dict[str, Override] = Field(default_factory=dict)
    default_modes: dict[str, str] = Field(default_factory=dict)
    min_vllm_version: str | None = None
    nightly_required: bool | None = None
    docker_image: str | dict[str, Any] | None = None
    precision_hardware: dict[str, str] | None = None
    supported_hardware: list[str] | None = None


class StrategyOverride(_Open):
    tp: int | HardwareKeyed | None = None
    extra_args: list[str] | None = None
    vllm_args: list[str] | None = None
    extra_env: dict[str, Any] | None = None
    env: dict[str, Any] | None = None
    hardware_overrides: dict[str, Override] = Field(default_factory=dict)
    # pd_cluster only (multi-node renderings are not built yet; read, typed loosely)
    prefill: dict[str, Any] | None = None
    decode: dict[str, Any] | None = None
    router: dict[str, Any] | None = None
    pool_modes: list[str] | None = None


class Recipe(_Open):
    meta: Meta = Field(default_factory=Meta)
    model: ModelInfo
    dependencies: list[Dependency] = Field(default_factory=list)
    features: dict[str, Feature] = Field(default_factory=dict)
    opt_in_features: list[str] = Field(default_factory=list)
    hardware_opt_in_features: dict[str, list[str]] = Field(default_factory=dict)
    variants: dict[str, Variant]
    compatible_strategies: list[str] = Field(default_factory=list)
    default_strategy: str | None = None
    strategy_hardware: dict[str, HardwareKeyed] = Field(default_factory=dict)
    strategy_min_gpus: int | dict[str, Any] | None = None
    hardware_overrides: dict[str, Override] = Field(default_factory=dict)
    strategy_overrides: dict[str, StrategyOverride] = Field(default_factory=dict)
    kv_offload_support: dict[str, str] = Field(default_factory=dict)
    kv_cache_strategy_hardware: dict[str, dict[str, str]] = Field(default_factory=dict)
    hardware_notes: dict[str, Any] = Field(default_factory=dict)
    omni: dict[str, Any] | None = None
    guide: Any = None
