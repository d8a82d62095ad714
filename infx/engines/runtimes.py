"""Runtimes: how a rendered engine command is executed.

* ``local``: the engine argv as is, on this machine (its own process group; see ``server.py``).
* ``docker`` / ``podman``: ``run --rm`` with host networking and IPC, the vendor's GPU flags,
  a Hugging Face cache mount (and the local model directory, if any), and the environment as
  ``-e NAME=VALUE`` (secrets as ``-e NAME`` so their values come from the caller's environment
  and never appear in the argv).
* ``slurm``: ``srun`` with a Pyxis/enroot container (``--container-image``), the GPUs as
  ``--gres``, and non-secret variables through ``env NAME=VALUE`` inside the container
  (``--export=ALL`` carries the secrets).

Only ``local`` runs here; the others are rendered and golden-tested.
"""

from __future__ import annotations

import sys
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict

from infx.engines.hardware import Hardware
from infx.engines.launch import Runtime, is_secret

CONTAINER_HF_CACHE = "/root/.cache/huggingface"
CONTAINER_MODELS = "/models"
CONTAINER_WORKDIR = "/infx-work"


class RuntimeOptions(BaseModel):
    """Site settings for container runtimes (fixed defaults keep renders reproducible)."""

    model_config = ConfigDict(frozen=True)

    hf_cache: str = "/data/hf-cache"  # host directory mounted as the Hugging Face cache
    workdir: str = "/data/infx-work"  # host directory for launch files (TRT options YAML)
    shm_size: str = "32g"


def host_for(runtime: Runtime) -> str:
    return "127.0.0.1" if runtime == "local" else "0.0.0.0"


def resolve_entrypoint(entrypoint: list[str], runtime: Runtime) -> list[str]:
    """``python`` in an entrypoint means this interpreter locally, ``python3`` in a container."""
    out = list(entrypoint)
    if out and out[0] == "python":
        out[0] = sys.executable if runtime == "local" else "python3"
    return out


def model_path_in(runtime: Runtime, local_dir: str) -> str:
    if runtime == "local":
        return local_dir
    return str(PurePosixPath(CONTAINER_MODELS) / PurePosixPath(local_dir).name)


def _gpu_flags(cli: str, hw: Hardware) -> list[str]:
    if hw.vendor == "nvidia":
        return ["--device", "nvidia.com/gpu=all"] if cli == "podman" else ["--gpus", "all"]
    if hw.vendor == "amd":
        return [
            "--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video",
            "--cap-add", "SYS_PTRACE", "--security-opt", "seccomp=unconfined",
        ]
    return []


def wrap(
    runtime: Runtime,
    *,
    engine_argv: list[str],
    env: dict[str, str],
    image: str,
    hardware: Hardware,
    gpus: int,
    name: str,
    local_model_dir: str | None,
    has_files: bool,
    options: RuntimeOptions,
) -> list[str]:
    """The argv that runs ``engine_argv`` under ``runtime``."""
    if runtime == "local":
        return list(engine_argv)
    mounts = [(options.hf_cache, CONTAINER_HF_CACHE)]
    if local_model_dir:
        mounts.append((local_model_dir, model_path_in(runtime, local_model_dir)))
    if has_files:
        mounts.append((options.workdir, CONTAINER_WORKDIR))
    if runtime in ("docker", "podman"):
        argv = [runtime, "run", "--rm", "--name", name, "--network", "host", "--ipc", "host",
                "--shm-size", options.shm_size, *_gpu_flags(runtime, hardware)]
        for host, inside in mounts:
            argv += ["-v", f"{host}:{inside}"]
        if has_files:
            argv += ["-w", CONTAINER_WORKDIR]
        for k, v in env.items():
            argv += ["-e", k if is_secret(k) else f"{k}={v}"]
        return argv + [image, *engine_argv]
    if runtime == "slurm":
        argv = ["srun", "--nodes=1", "--ntasks=1", "--exclusive", f"--job-name={name}"]
        if hardware.vendor != "cpu":
            argv.append(f"--gres=gpu:{gpus}")
        argv += [
            f"--container-image={image}",
            "--container-mounts=" + ",".join(f"{h}:{i}" for h, i in mounts),
            "--no-container-mount-home",
            "--export=ALL",
        ]
        if has_files:
            argv.append(f"--container-workdir={CONTAINER_WORKDIR}")
        plain = [f"{k}={v}" for k, v in env.items() if not is_secret(k)]
        return argv + (["env", *plain] if plain else []) + list(engine_argv)
    raise ValueError(f"unknown runtime {runtime!r}")
