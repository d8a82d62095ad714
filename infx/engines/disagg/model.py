"""The typed deployment: several roles (prefill workers, decode workers, router/frontend, infrastructure)
that together serve one multinode matrix point.

A :class:`Role` holds one rendered :class:`~infx.engines.launch.Launch` (the command of *one* instance of
the role) plus how many instances run and how many GPUs each takes. The deployment's ``fingerprint``
hashes every role's port-free launch fingerprint with its count, GPU share and the KV-transfer settings,
so points whose deployments would start the same way share one deployment.

A :class:`Deployment` answers the attributes the sweep reads from a single launch (``fingerprint``,
``engine``, ``image``, ``argv``, ``base_url``, ``served_model_name``, ``model_path``, ``metrics_url``)
with those of its entry role (the router), so the sweep's grouping, resume and measurement work unchanged.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from infx.engines.launch import Launch

RoleKind = Literal["prefill", "decode", "router", "frontend", "infra"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KVTransfer(_Model):
    """How KV moves from prefill to decode: the catalog's ``kv-p2p-transfer`` name, the connector or
    backend the engines are told to use, and its settings (e.g. ExampleConnector's shared directory)."""

    name: str  # catalog value: nixl, mooncake, mori, ucx, example-connector
    connector: str  # what the engine flag names: NixlConnector, ExampleConnector, mooncake, mori, UCX
    settings: dict[str, str] = Field(default_factory=dict)
    shared_dir: bool = False  # the settings name a directory the deployment creates and removes


class Role(_Model):
    """One role of a deployment. ``launch`` is the command of one instance; ``count`` instances run."""

    name: str  # unique in the deployment: prefill, decode, router, frontend, etcd, nats
    kind: RoleKind
    count: int = 1
    gpus_per_instance: int = 0
    tp: int = 1
    ep: int = 1
    dp_attn: bool = False
    launch: Launch

    @property
    def gpus(self) -> int:
        return self.count * self.gpus_per_instance


class Deployment(_Model):
    """Every role of one multinode point, typed, plus its identity."""

    framework: str
    point_id: str
    roles: list[Role]
    entry: str  # the role clients talk to (router / frontend)
    kv_transfer: KVTransfer | None = None
    disagg: bool = True
    notes: list[str] = Field(default_factory=list)  # honest caveats printed with the plan
    fingerprint: str = ""

    # -- what the sweep reads from a Launch (infx.engines.servable.Servable) --------------------------
    def role(self, name: str) -> Role:
        for r in self.roles:
            if r.name == name:
                return r
        raise KeyError(name)

    @property
    def entry_launch(self) -> Launch:
        return self.role(self.entry).launch

    @property
    def engine(self) -> str:
        return f"deployment:{self.framework}"

    @property
    def recipe(self) -> str:
        return self.entry_launch.recipe

    @property
    def recipe_file(self) -> str | None:
        return self.entry_launch.recipe_file

    @property
    def image(self) -> str:
        return self.entry_launch.image

    @property
    def argv(self) -> list[str]:
        return list(self.entry_launch.argv)

    @property
    def env(self) -> dict[str, str]:
        """Every role's environment, role-prefixed (``prefill:VLLM_CPU_KVCACHE_SPACE``), for scans."""
        return {f"{r.name}:{k}": v for r in self.roles for k, v in r.launch.env.items()}

    @property
    def files(self) -> dict[str, str]:
        return {f"{r.name}/{k}": v for r in self.roles for k, v in r.launch.files.items()}

    @property
    def base_url(self) -> str:
        return self.entry_launch.base_url

    @property
    def served_model_name(self) -> str:
        return self.entry_launch.served_model_name

    @property
    def model_path(self) -> str:
        workers = [r for r in self.roles if r.kind in ("prefill", "decode")]
        return workers[0].launch.model_path if workers else self.entry_launch.model_path

    @property
    def model_builder(self) -> str | None:
        workers = [r for r in self.roles if r.kind in ("prefill", "decode")]
        return workers[0].launch.model_builder if workers else None

    @property
    def metrics_url(self) -> str:
        """The first decode worker's Prometheus page (served tokens are counted there)."""
        decode = [r for r in self.roles if r.kind == "decode"]
        return decode[0].launch.metrics_url if decode else self.entry_launch.metrics_url

    @property
    def runtime(self) -> str:
        return self.entry_launch.runtime

    # -- counts ----------------------------------------------------------------------------------
    def gpus(self, kind: RoleKind | None = None) -> int:
        return sum(r.gpus for r in self.roles if kind is None or r.kind == kind)

    def redacted(self) -> Deployment:
        return self.model_copy(update={"roles": [r.model_copy(update={"launch": r.launch.redacted()})
                                                 for r in self.roles]})


def deployment_fingerprint(framework: str, roles: list[Role], kv: KVTransfer | None) -> str:
    """sha256 over the roles (name, count, GPUs, port-free launch fingerprint) and the KV transfer
    (a per-run shared directory is left out: it is created fresh for every start)."""
    kv_settings = None if kv is None else sorted(
        (k, v) for k, v in kv.settings.items() if not (kv.shared_dir and k == "shared_storage_path"))
    blob = json.dumps({
        "framework": framework,
        "roles": [[r.name, r.kind, r.count, r.gpus_per_instance, r.launch.fingerprint] for r in roles],
        "kv": None if kv is None else [kv.name, kv.connector, kv_settings],
    }, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()
