"""Execute InferenceX bench scripts in a bubblewrap sandbox and record what they launch.

A sandbox runs its jobs (one script + environment each; :func:`run_many` gives every job a sandbox of
its own and runs several at once) through ``sandbox/driver.sh``:

* no network (``--unshare-all``: net, pid, ipc, uts, user, cgroup), a throwaway tmpfs ``/workspace``,
  ``/tmp`` and ``$HOME`` (``/root``), wiped between jobs; the workspace's ``benchmarks/`` read-only at
  ``/workspace/benchmarks`` (where the workflow mounts it), the host's ``/usr`` read-only, nothing else;
* the real ``benchmark_lib.sh`` sourced, then ``sandbox/overrides.sh`` (server waits, GPU monitor,
  benchmark client, evals, installers replaced by recorders); a wrapper file bound over the lib does both;
* ``sandbox/shim.sh`` first on PATH under the names of the server and its launchers (``vllm``,
  ``python3``, ``trtllm-serve``, ``mpirun``, ...) and of tools that need GPUs or the network (``hf``,
  ``nvidia-smi``, ``pip``, ...): it writes argv, environment and the files its arguments name to
  ``/out/N/rec`` and exits 0;
* each script under ``timeout``; the whole batch under a host-side limit too;
* the jobs and the records on the host in a scratch dir on ``/dev/shm`` when that is a writable tmpfs
  (:func:`scratch_dir`; a record is a handful of small files, and allocating their inodes on ext4 took
  about a tenth of a render's CPU), else in the default temp dir;
* a node's facts that scripts probe, pretended (docs/architecture.md, "What the sandbox pretends"): a
  placeholder snapshot from ``hf download``, inline Python on the host's interpreter with a throwaway
  dist-packages, one ACTIVE RDMA rail under ``/sys/class/infiniband``, a ``/dev/shm`` tmpfs of
  :data:`SHM_MIB`, background services that stay up; top-level dirs a script creates are wiped between jobs.

When bubblewrap is missing or cannot start, :class:`SandboxUnavailable` is raised: never an
unsandboxed run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

HERE = Path(__file__).parent / "sandbox"
SHIM_NAMES = (
    "vllm", "python", "python3", "trtllm-serve", "mpirun", "numactl", "hf", "huggingface-cli", "nvidia-smi",
    "amd-smi", "rocm-smi", "rocminfo", "pip", "pip3", "uv", "uvx", "mooncake_master", "vllm-router",
    "sglang-router", "sglang", "sleep", "sed", "curl", "wget", "git", "sudo", "docker", "apt-get", "modal",
    "lmcache_server", "lmcache", "aiperf",
)
DEFAULT_TIMEOUT_S = 20.0
#: Size of the sandbox's tmpfs ``/dev/shm``: Linux's default (half of RAM) on the biggest single node
#: in InferenceX's runners.yaml (``available-cpu-dram-mib: 3_095_781``, b200-dgxc and mi355x-amds).
#: A tmpfs size is a cap, not an allocation: the render host needs none of it.
SHM_MIB = 3_095_781 // 2
#: The RDMA rail the sandbox's ``/sys/class/infiniband`` shows: one HCA, port 1 up.
RDMA_RAIL = "mlx5_0"
#: Sandboxes at once per core: a render's chain of short processes (fork, exec, wait) keeps a core busy
#: only 20-40% of its wall time, so one sandbox per core leaves the cores idle between processes.
SANDBOXES_PER_CORE = 4
MAX_SANDBOXES = 32
#: Free space ``/dev/shm`` needs to hold a run's scratch dir (job envs, records, log tails: KBs a job).
_SCRATCH_MIN_FREE = 64 * 1_048_576


class SandboxUnavailable(RuntimeError):
    pass


class Record(BaseModel):
    """One command a script ran (a shim) or one replaced library function it called."""

    name: str  # vllm, python3, mpirun, client, replay, eval, install, hf, ...
    kind: str  # server | client | replay | eval | install | aux
    argv: list[str]
    env: dict[str, str]
    files: dict[str, str] = Field(default_factory=dict)  # path as the argv names it -> text


class JobResult(BaseModel):
    rc: int
    log_tail: list[str]
    records: list[Record]


def _times_cpu(text: str) -> float:
    """Seconds from bash's ``times`` output ("0m0.010s 0m0.020s" per line: shell, then children)."""
    total = 0.0
    for tok in text.split():
        m, _, sec = tok.partition("m")
        try:
            total += int(m) * 60 + float(sec.rstrip("s"))
        except ValueError:
            continue
    return total


#: CPU seconds spent inside sandboxes by this process's run_jobs calls (bash ``times``; the host's
#: rusage does not see through bubblewrap's PID namespace). Read by benchmarks/scripts_preflight.py.
SANDBOX_CPU = {"seconds": 0.0}
_CPU_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def scratch_dir() -> str | None:
    """``/dev/shm`` when it is a writable tmpfs with room, else None (the default temp dir)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            tmpfs = any(f[1] == "/dev/shm" and f[2] == "tmpfs" for f in (ln.split() for ln in fh) if len(f) > 2)
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    if tmpfs and os.access("/dev/shm", os.W_OK | os.X_OK) and st.f_bavail * st.f_frsize >= _SCRATCH_MIN_FREE:
        return "/dev/shm"
    return None


def default_workers() -> int:
    """Sandboxes to run at once: :data:`SANDBOXES_PER_CORE` per core this process may use."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_SANDBOXES, SANDBOXES_PER_CORE * cores))


@lru_cache(maxsize=1)
def sandbox_version() -> str:
    """Hash of the sandbox's own files: part of every render's cache key."""
    h = hashlib.sha256()
    for f in sorted(p for p in HERE.rglob("*") if p.is_file()):  # every stand-in the sandbox ships
        h.update(str(f.relative_to(HERE)).encode() + b"\0" + f.read_bytes())
    h.update(f"{SHM_MIB}|{RDMA_RAIL}".encode())
    h.update(",".join(SHIM_NAMES).encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:16]


def bwrap_path() -> str:
    exe = shutil.which("bwrap")
    if exe is None:
        raise SandboxUnavailable("bench scripts run only in a bubblewrap sandbox, and `bwrap` is not installed "
                                 "(Debian/Ubuntu: apt-get install bubblewrap); no script was run")
    return exe


def _shim_dir(root: Path) -> Path:
    """bin/ with the shim under every name, built once per sandbox version."""
    d = root / f"sandbox-{sandbox_version()}"
    if (d / "bin" / SHIM_NAMES[-1]).exists():
        return d
    tmp = Path(tempfile.mkdtemp(prefix="sandbox-", dir=root))
    (tmp / "bin").mkdir()
    shim = tmp / "shim.sh"
    shutil.copy(HERE / "shim.sh", shim)
    shim.chmod(0o755)
    for n in SHIM_NAMES:
        os.symlink("../shim.sh", tmp / "bin" / n)
    for name in ("overrides.sh", "driver.sh", "bashenv.sh"):
        shutil.copy(HERE / name, tmp / name)
    (tmp / "real_benchmark_lib.sh").write_text("")  # mount point of the workspace's lib
    port = tmp / "infiniband" / RDMA_RAIL / "ports" / "1"  # bound at /sys/class/infiniband
    port.mkdir(parents=True)
    (port / "state").write_text("4: ACTIVE\n")
    (port / "phys_state").write_text("5: LinkUp\n")
    (port / "link_layer").write_text("InfiniBand\n")
    (tmp / "lib.sh").write_text("source /infx/real_benchmark_lib.sh\nsource /infx/overrides.sh\n")
    try:
        tmp.rename(d)
    except OSError:  # another process built it first
        shutil.rmtree(tmp, ignore_errors=True)
    return d


def _usr_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib64", "lib32"):
        p = Path("/") / top
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), f"/{top}"]
        elif p.is_dir():
            args += ["--ro-bind", str(p), f"/{top}"]
    if Path("/etc/alternatives").is_dir():  # Debian's awk, python3 ... links point through it
        args += ["--ro-bind", "/etc/alternatives", "/etc/alternatives"]
    return args


def run_jobs(benchmarks_dir: Path, jobs: list[tuple[str, dict[str, str]]], *, state_dir: Path,
             timeout_s: float = DEFAULT_TIMEOUT_S) -> list[JobResult]:
    """Run each (script path relative to the workspace root, env) in one sandbox; results in order."""
    exe = bwrap_path()
    state_dir.mkdir(parents=True, exist_ok=True)
    shims = _shim_dir(state_dir)
    lib = benchmarks_dir / "benchmark_lib.sh"
    with tempfile.TemporaryDirectory(prefix="infx-render-", dir=scratch_dir()) as tmp:
        jobs_dir, out_dir = Path(tmp) / "jobs", Path(tmp) / "out"
        jobs_dir.mkdir()
        out_dir.mkdir()
        for i, (rel, env) in enumerate(jobs):
            j = jobs_dir / f"{i:05d}"
            j.mkdir()
            (j / "script").write_text(rel)
            full = {**env, "PATH": "/infx/bin:/usr/local/bin:/usr/bin:/bin", "HOME": "/root",
                    "BASH_ENV": "/infx/bashenv.sh", "LANG": "C.UTF-8"}
            (j / "env").write_bytes(b"".join(f"{k}={v}".encode() + b"\0" for k, v in full.items()))
        argv = [exe, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
                "--setenv", "PATH", "/usr/bin:/bin", *_usr_binds(),
                "--proc", "/proc", "--dev", "/dev", "--size", str(SHM_MIB * 1_048_576), "--tmpfs", "/dev/shm",
                "--ro-bind", str(shims / "infiniband"), "/sys/class/infiniband",
                "--tmpfs", "/tmp", "--tmpfs", "/root", "--tmpfs", "/workspace",
                "--ro-bind", str(shims), "/infx",
                "--ro-bind", str(benchmarks_dir), "/workspace/benchmarks"]
        if lib.is_file():
            argv += ["--ro-bind", str(lib), "/infx/real_benchmark_lib.sh",
                     "--ro-bind", str(shims / "lib.sh"), "/workspace/benchmarks/benchmark_lib.sh"]
        argv += ["--ro-bind", str(jobs_dir), "/jobs", "--bind", str(out_dir), "/out",
                 "--chdir", "/workspace", "bash", "/infx/driver.sh", str(timeout_s)]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s * (len(jobs) + 1) + 10)
        except subprocess.TimeoutExpired:
            raise SandboxUnavailable(f"the render sandbox did not finish {len(jobs)} script(s) in time") from None
        if proc.returncode != 0 and not any(out_dir.iterdir()):
            err = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise SandboxUnavailable(f"the bubblewrap sandbox cannot start: {err}; no script was run")
        if (out_dir / "times").is_file():
            cpu = _times_cpu((out_dir / "times").read_text())
            with _CPU_LOCK:
                SANDBOX_CPU["seconds"] += cpu
        return [_collect(out_dir / f"{i:05d}") for i in range(len(jobs))]


def run_many(benchmarks_dir: Path, jobs: Sequence[tuple[str, dict[str, str]]], *, state_dir: Path,
             timeout_s: float = DEFAULT_TIMEOUT_S, workers: int | None = None, batch: int = 1,
             cost: Sequence[float] | None = None) -> list[JobResult]:
    """Run every job; results in job order.

    Each job gets a sandbox of its own (``batch`` 1): its processes' PIDs, and what a script derives
    from them (``/tmp/inferencex-agentic-$$``, ``--server-pid``), are then the same whichever jobs run
    before or beside it, so a render does not depend on how the work was split. A sandbox start is
    ~5 ms of CPU, under a tenth of the cheapest script's. ``workers`` sandboxes run at once (default
    :func:`default_workers`), costliest jobs first (``cost``, e.g. the script's size) so that the last
    ones to finish are short; a thread per sandbox only waits and reads records. ``workers`` 1 is the
    serial path: jobs in their order, one sandbox after another."""
    n = len(jobs)
    if n == 0:
        return []
    workers = max(1, workers or default_workers())
    order = list(range(n))
    if workers > 1 and cost is not None:
        order.sort(key=lambda i: -cost[i])
    size = max(1, batch)
    batches = [order[i:i + size] for i in range(0, n, size)]

    def one(idx: list[int]) -> list[JobResult]:
        return run_jobs(benchmarks_dir, [jobs[i] for i in idx], state_dir=state_dir, timeout_s=timeout_s)

    if workers == 1 or len(batches) == 1:
        results = [one(b) for b in batches]
    else:
        with ThreadPoolExecutor(min(workers, len(batches)), thread_name_prefix="infx-render") as ex:
            futures = [ex.submit(one, b) for b in batches]
            try:
                results = [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()  # a sandbox that cannot start: start no more
                raise
    out: list[JobResult | None] = [None] * n
    for idx, res in zip(batches, results, strict=True):
        for i, r in zip(idx, res, strict=True):
            out[i] = r
    assert all(r is not None for r in out)
    return [r for r in out if r is not None]


def _split0(b: bytes) -> list[str]:
    parts = b.split(b"\0")
    if parts and parts[-1] == b"":
        parts.pop()
    return [p.decode("utf-8", "replace") for p in parts]


def _collect(d: Path) -> JobResult:
    if not (d / "rc").is_file():
        return JobResult(rc=-1, log_tail=["the sandbox stopped before this script ran"], records=[])
    rc = int((d / "rc").read_text().strip() or -1)
    log = (d / "log").read_text(errors="replace").splitlines() if (d / "log").is_file() else []
    records: list[Record] = []
    rec = d / "rec"
    kinds = sorted(rec.glob("*.kind")) if rec.is_dir() else []  # written last: a record is complete
    for k in kinds:
        pre = str(k)[: -len(".kind")]
        try:
            envf = Path(pre + ".env")
            env = dict(kv.split("=", 1) for kv in _split0(envf.read_bytes()) if "=" in kv) if envf.is_file() else {}
            files: dict[str, str] = {}
            fm = Path(pre + ".filemap")
            if fm.is_file():
                for i, name in enumerate(_split0(fm.read_bytes())):
                    files[name] = Path(f"{pre}.file.{i}").read_text(errors="replace")
            records.append(Record(name=Path(pre + ".name").read_text(), kind=k.read_text(),
                                  argv=_split0(Path(pre + ".argv").read_bytes()), env=env, files=files))
        except (OSError, ValueError):
            continue
    return JobResult(rc=rc, log_tail=log, records=records)
