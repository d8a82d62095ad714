"""The rendered engine launch: exactly what will be executed, typed.

A :class:`Launch` is the output of :func:`infx.engines.render.render_launch` and the input of
:class:`infx.engines.server.EngineProcess`. Its ``fingerprint`` hashes image + argv + env with the
port left out, so points whose launches differ only in port can share one engine.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Runtime = Literal["local", "docker", "podman", "slurm"]

PORT_PLACEHOLDER = "{port}"

_SECRET_NAME = re.compile(r"(?:^HF_TOKEN$|_TOKEN$|_KEY$|SECRET|PASSWORD)", re.I)
REDACTED = "***"


def is_secret(name: str) -> bool:
    """Environment names whose values are never printed (HF_TOKEN, *_TOKEN, *_KEY, *SECRET*, *PASSWORD*)."""
    return bool(_SECRET_NAME.search(name))


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (REDACTED if is_secret(k) and v else v) for k, v in env.items()}


def fingerprint(image: str, argv: list[str], env: dict[str, str]) -> str:
    """sha256 over image, argv and env (sorted); callers pass the port-free argv."""
    blob = json.dumps({"image": image, "argv": argv, "env": sorted(env.items())}, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def script_hashes(script: str | None, script_sha256: str | None, lib_sha256: str | None) -> dict[str, str]:
    """The bench-script facts a scripted launch's fingerprint carries (none for a recipe launch)."""
    if script is None:
        return {}
    return {"script:path": script, "script:sha256": script_sha256 or "", "lib:sha256": lib_sha256 or ""}


class Launch(BaseModel):
    """One engine launch. ``argv`` is an argument vector (never a shell string)."""

    model_config = ConfigDict(frozen=True)

    engine: str  # adapter name: vllm | sglang | trt
    recipe: str  # recipe name
    recipe_file: str | None = None
    image: str
    runtime: Runtime = "local"
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    # extra files the launch needs (name -> text), e.g. TRT extra options
    files: dict[str, str] = Field(default_factory=dict)
    fingerprint: str
    host: str = "127.0.0.1"
    port: int
    served_model_name: str
    model_path: str  # hub id or local directory the engine loads
    model_builder: str | None = None  # "tiny-model" when the local model dir is built by infx
    readiness_path: str = "/health"
    metrics_path: str = "/metrics"
    consumed: list[str] = Field(default_factory=list)  # point fields the launch depends on
    ignored: list[str] = Field(default_factory=list)  # point fields the recipe declared irrelevant
    # A launch rendered from an InferenceX bench script (infx.engines.scripts): the script (relative to
    # the workspace root), its and benchmark_lib.sh's sha256 (both in the fingerprint), and the client
    # invocations it recorded ([kind, *argv]: run_benchmark_serving args, the agentic replay, evals).
    script: str | None = None
    script_sha256: str | None = None
    lib_sha256: str | None = None
    client: list[list[str]] = Field(default_factory=list)

    def fingerprint_extras(self) -> dict[str, str]:
        """What the fingerprint takes besides image, argv and env: the extra files and, for a scripted launch,
        the script's path and its and the lib's sha256 (``infx repro`` retakes the fingerprint over these)."""
        return {**{f"file:{k}": v for k, v in self.files.items()},
                **script_hashes(self.script, self.script_sha256, self.lib_sha256)}

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def readiness_url(self) -> str:
        return self.base_url + self.readiness_path

    @property
    def metrics_url(self) -> str:
        return self.base_url + self.metrics_path

    def display(self) -> str:
        """The command for people: env (secrets redacted) + shlex-joined argv."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(redact_env(self.env).items()))
        return (env + " " if env else "") + shlex.join(self.argv)

    def redacted(self) -> Launch:
        return self.model_copy(update={"env": redact_env(self.env)})

    def write_files(self, directory: str | Path) -> list[Path]:
        """Write the launch's extra files (e.g. the TRT-LLM options YAML) under ``directory``."""
        from infx import atomic

        out = []
        for name, text in self.files.items():
            path = Path(directory) / name
            atomic.write_text(path, text)
            out.append(path)
        return out
