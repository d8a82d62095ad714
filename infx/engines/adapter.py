"""The common base of engine adapters: how a point's topology becomes one engine's flags.

An adapter knows its engine's command, flag spellings (and short aliases), readiness and metrics
endpoints, and how to map the point's topology (tp, pp, ep, dp-attn, dcp/pcp, speculative
decoding, KV offloading, max model length, host, port) onto flags it *owns*. A recipe may repeat
an owned flag only with the same value; a different value is a contradiction (drift) error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from infx.matrix.point import Point

#: Sentinel value of an owned flag that must be absent for this point.
ABSENT = object()


@dataclass
class Topology:
    """The point's serving topology, as the adapters need it."""

    tp: int
    pp: int
    ep: int
    dp_attn: bool
    dcp_size: int
    pcp_size: int
    spec_decoding: str
    spec_tokens: int
    max_model_len: int | None
    kv_offloading: str
    kv_offload_backend: str | None
    total_cpu_dram_gb: int

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.pcp_size

    @classmethod
    def from_point(cls, point: Point, spec_tokens: int) -> Topology:
        return cls(
            tp=point.tp or 1,
            pp=point.pp,
            ep=point.ep,
            dp_attn=point.dp_attn,
            dcp_size=point.dcp_size,
            pcp_size=point.pcp_size,
            spec_decoding=point.spec_decoding,
            spec_tokens=spec_tokens if point.spec_decoding != "none" else 0,
            max_model_len=point.max_model_len,
            kv_offloading=point.kv_offloading or "none",
            kv_offload_backend=point.kv_offload_backend.name if point.kv_offload_backend else None,
            total_cpu_dram_gb=point.total_cpu_dram_gb or 0,
        )


@dataclass
class Owned:
    """Flags (and env/options) an adapter renders from the point, plus the fields it read."""

    flags: dict[str, Any] = field(default_factory=dict)  # canonical flag -> value, or ABSENT
    env: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    consumed: set[str] = field(default_factory=set)
    sources: dict[str, str] = field(default_factory=dict)  # flag -> "tp=4" (for error messages)


#: The point fields every adapter's ``topology()`` renders (its ``Owned.consumed`` starts as these).
TOPOLOGY_FIELDS = frozenset(
    {"tp", "pp", "ep", "dp-attn", "dcp-size", "pcp-size", "spec-decoding", "kv-offloading", "total-cpu-dram-gb"}
)


class UnsupportedTopology(ValueError):
    pass


class EngineAdapter:
    name: ClassVar[str]
    default_entrypoint: ClassVar[list[str]]
    readiness_path: ClassVar[str] = "/health"
    metrics_path: ClassVar[str] = "/metrics"
    #: short or alternative spellings -> canonical flag name (without dashes)
    aliases: ClassVar[dict[str, str]] = {}
    #: engines whose extra options live in a file (TRT-LLM) set this to the file name
    options_file: ClassVar[str | None] = None
    #: the flags (canonical names) that carry the served context and the tensor-parallel size
    context_flag: ClassVar[str] = "max-model-len"
    tp_flag: ClassVar[str] = "tensor-parallel-size"

    # -- flag names ------------------------------------------------------------------------------
    def canonical(self, key: str) -> str:
        name = key.lstrip("-")
        if self.dash_names:
            name = name.replace("_", "-")
        return self.aliases.get(name, name)

    dash_names: ClassVar[bool] = True  # vLLM/SGLang accept "-" and "_"; TRT-LLM keeps "_"

    def flag(self, name: str) -> str:
        return name if name.startswith("-") else f"--{name}"

    # -- rendering -------------------------------------------------------------------------------
    def serve_flags(self, model_path: str, served_name: str, host: str, port: str) -> dict[str, Any]:
        raise NotImplementedError

    def topology(self, topo: Topology) -> Owned:
        raise NotImplementedError

    def model_in_entrypoint(self) -> bool:
        """True when the model path is a positional argument right after the entrypoint."""
        return False

    def argv(self, entrypoint: list[str], model_path: str, flags: dict[str, Any]) -> list[str]:
        out = list(entrypoint)
        if self.model_in_entrypoint():
            out.append(model_path)
        for name, value in flags.items():
            out.extend(render_flag(self.flag(name), value))
        return out


    # -- reading back ----------------------------------------------------------------------------
    def settings(self, argv: Sequence[str], env: Mapping[str, str], files: Mapping[str, str]) -> LaunchSettings:
        """What :meth:`argv` (and the options file) rendered, read back: every ``--flag`` after the
        entrypoint under its canonical name (a bare flag ``True``, a JSON object parsed, several values a
        list, one value its text), the options file parsed, the environment as given."""
        flags: dict[str, Any] = {}
        name: str | None = None
        for tok in argv:
            if tok.startswith("--") and "=" in tok:  # --flag=value, as a recipe's entrypoint may spell it
                key, _, text = tok.partition("=")
                name = None
                flags[self.canonical(key)] = text
            elif tok.startswith("--"):
                name = self.canonical(tok)
                flags[name] = True
            elif name is not None:
                prev = flags[name]
                value: Any = json.loads(tok) if tok[:1] == "{" else tok
                flags[name] = value if prev is True else [*(prev if isinstance(prev, list) else [prev]), value]
        options: dict[str, Any] = {}
        if self.options_file:  # the flag naming the options file is the adapter's own, not a setting
            flags = {k: v for k, v in flags.items() if v != self.options_file}
        options_text = files.get(self.options_file) if self.options_file else None
        if options_text:
            import yaml

            loaded = yaml.safe_load(options_text)
            options = loaded if isinstance(loaded, dict) else {}
        return LaunchSettings(engine=self.name, flags=flags, options=options, env=dict(env),
                              max_model_len=_count(flags.get(self.context_flag)), tp=_count(flags.get(self.tp_flag)))


class LaunchSettings(BaseModel):
    """A rendered launch read back by its adapter (:meth:`EngineAdapter.settings`)."""

    engine: str
    flags: dict[str, Any]  # canonical flag name -> True | text | parsed JSON object | list of those
    options: dict[str, Any]  # the engine's options file (TRT-LLM), parsed
    env: dict[str, str]
    max_model_len: int | None  # the context the launch serves, when its argv says
    tp: int | None  # tensor-parallel size, when its argv says


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() else None


def format_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def render_flag(flag: str, value: Any) -> list[str]:
    """One flag as argv elements: ``True`` -> bare flag; dict -> compact JSON; list -> values."""
    if value is None or value is False or value is ABSENT:
        return []
    if value is True:
        return [flag]
    if isinstance(value, list):
        return [flag, *(format_scalar(v) for v in value)]
    return [flag, format_scalar(value)]
