"""The results directory: where a sweep leaves what it measured, and the typed files in it.

::

    RESULTS/
      infx.db                                  SQLite store, the default (``infx ingest``; infx.results.store)
      <run-id>/
        manifest.json                          RunManifest
        points/<point-id>/
          point.json                           PointFile: Point.to_row() + launch fingerprint
          status.json                          PointStatus: done | failed | skipped | interrupted, reason...
          result.json                          BenchResult (only when the point was measured)
          records.jsonl.gz                     raw per-request records
          engine.log                           the engine's log

The sweep writes these files (every write atomic, :mod:`infx.atomic`) through :class:`ResultsDir`;
the store, the report and the dashboard read them back through the same class, so the layout is
defined in exactly one place. Run and point ids are single path components (no ``/``, no ``..``):
anything else is refused before it reaches the file system.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from infx import atomic
from infx.diagnostics import Diagnostic, InfxError
from infx.engines.ports import PortRetry
from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.pointfiles import ENGINE_LOG as ENGINE_LOG
from infx.pointfiles import LMEVAL_LOG
from infx.pointfiles import POINT_FILE as POINT_FILE
from infx.pointfiles import RECORDS_FILE as RECORDS_FILE
from infx.pointfiles import RESULT_FILE as RESULT_FILE
from infx.pointfiles import STATUS_FILE as STATUS_FILE

LAYOUT_VERSION = 1

DB_NAME = "infx.db"
MANIFEST = "manifest.json"
POINTS = "points"

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=@,-]{0,199}$")

# interrupted: stopped mid-point by Ctrl-C or SIGTERM (infx.preemption); its result.json (complete: false) and
# records are what it measured until then, never a measurement: resume measures it again, the store skips it
PointState = Literal["done", "failed", "skipped", "interrupted"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------- manifest


class ImageRef(_Model):
    """A container image a run used, with its registry digest when it was resolved."""

    image: str
    digest: str | None = None


class HostFacts(_Model):
    """Facts about the machine that drove the run (the engine host for local runs)."""

    hostname: str | None = None
    os: str | None = None
    python: str | None = None
    cpu_count: int | None = None
    memory_gib: float | None = None
    accelerators: list[str] = Field(default_factory=list)


class PullRequest(_Model):
    """Where an unofficial (pull request / branch) run came from; drives the report's banner."""

    number: int | None = None
    branch: str | None = None
    sha: str | None = None
    url: str | None = None
    title: str | None = None


class RunManifest(_Model):
    """``<run-id>/manifest.json``: what was run, with what, where and when."""

    layout_version: int = LAYOUT_VERSION

    @field_validator("layout_version")
    @classmethod
    def _known_layout(cls, v: int) -> int:
        if not 1 <= v <= LAYOUT_VERSION:
            raise ValueError(f"layout_version {v} is not one this infx reads (1..{LAYOUT_VERSION}): "
                             "written by a newer infx, or not a manifest.json")
        return v

    run_id: str
    infx_version: str
    git_commit: str | None = None
    catalog_hash: str | None = None
    recipe_hash: str | None = None
    config_keys: list[str] = Field(default_factory=list)
    images: list[ImageRef] = Field(default_factory=list)
    engine_version: str | None = None
    host: HostFacts = Field(default_factory=HostFacts)
    # runner label -> GPUs per node, captured from runners.yaml when the run started, so that
    # per-node numbers can be recomputed from the results directory alone
    gpus_per_node: dict[str, int] = Field(default_factory=dict)
    started_at: float
    ended_at: float | None = None
    official: bool = True
    pr: PullRequest | None = None
    baseline_run: str | None = None  # the run this one should be compared with
    description: str = ""
    # ``infx run --append-only``: the run adds points to the curves it touches instead of replacing them; the
    # store chains it to the full snapshot before it under the same image (infx.results.store.snapshots)
    append_only: bool = False

    def check_id(self) -> None:
        check_name(self.run_id, "run id")


# --------------------------------------------------------------------------- per point


class PointFile(_Model):
    """``point.json``: the matrix row as run plus the fingerprint of the launch that served it."""

    point: dict[str, Any]  # Point.to_row(): hyphenated keys, exactly as the matrix emitted it
    launch_fingerprint: str | None = None

    @classmethod
    def of(cls, point: Point, launch_fingerprint: str | None = None) -> PointFile:
        return cls(point=point.to_row(), launch_fingerprint=launch_fingerprint)

    def typed(self) -> Point:
        return Point.from_row(self.point)


class StartupSummary(_Model):
    """Engine start-up facts worth keeping next to the numbers (parsed from the engine log)."""

    kv_cache_tokens: int | None = None
    kv_cache_gib: float | None = None
    max_concurrency: float | None = None
    model_load_gib: float | None = None
    startup_s: float | None = None
    engine_version: str | None = None
    other: dict[str, float | int | str | bool | None] = Field(default_factory=dict)
    # launches (engine or deployment role) that lost their port and were relaunched on another
    port_retries: list[PortRetry] = Field(default_factory=list)

    @classmethod
    def from_facts(cls, facts: BaseModel | dict[str, Any] | None) -> StartupSummary | None:
        """Take the start-up facts of any engine parser (a pydantic model or a dict): known
        fields land in their columns, other scalars in ``other``."""
        if facts is None:
            return None
        data = facts.model_dump() if isinstance(facts, BaseModel) else dict(facts)
        for alias, name in _STARTUP_ALIASES.items():
            if data.get(alias) is not None and data.get(name) is None:
                data[name] = data.pop(alias)
        known = {k: data.pop(k) for k in list(data) if k in cls.model_fields and k != "other"}
        other = {k: v for k, v in data.items() if isinstance(v, (float, int, str, bool)) or v is None}
        return cls(**known, other=other)


_STARTUP_ALIASES = {"weights_gib": "model_load_gib", "startup_seconds": "startup_s"}


class PointStatus(_Model):
    """``status.json``: how the point ended. A failed or skipped point has no ``result.json``."""

    state: PointState
    reason: str = ""
    failure_class: str | None = None  # e.g. startup-oom, graph-capture, timeout, infeasible
    log_tail: str = ""
    launch_fingerprint: str | None = None
    # hash of the load the point was measured with (requests per point, lengths...; see
    # infx.sweep.profile.LoadProfile.key): resume re-measures a point whose load differs. None: not recorded.
    load_profile: str | None = None
    startup: StartupSummary | None = None
    started_at: float | None = None
    ended_at: float | None = None


# --------------------------------------------------------------------------- file access


def results_root(path: Path | None) -> Path:
    """A results argument of a command, defaulting to the workspace's ``results/``."""
    if path is not None:
        return path
    from infx.workspace import current

    return current().results_dir


def check_name(name: str, what: str) -> str:
    """A run or point id must be one safe path component."""
    if not isinstance(name, str) or not _NAME_RE.match(name) or ".." in name:
        raise InfxError(Diagnostic(f"invalid {what} {name!r}: use letters, digits and ._+=@,- "
                                   "(one path component, no '..')"))
    return name


M = TypeVar("M", bound=BaseModel)


def read_model(path: str | Path, model: type[M]) -> M:
    """Read a JSON file into ``model``; bad JSON or bad fields -> InfxError with FILE:LINE:COL."""
    from infx import jsonio

    p = Path(path)
    if not p.exists():
        raise InfxError(Diagnostic(f"missing {p.name}", str(p)))
    text = jsonio.read_text(p, what=p.name)
    jsonio.loads(text, str(p))  # the bounds (depth, digits, NaN) and JSON errors at their line
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        raise InfxError(_json_diags(text, str(p), exc)) from None


def _json_diags(text: str, file: str, exc: ValidationError) -> list[Diagnostic]:
    from infx import jsonio

    try:
        jsonio.loads(text, file)
    except InfxError as jexc:
        return jexc.diagnostics
    try:  # JSON is YAML: reuse the YAML source map for line:col of each bad field
        from infx.yamlsource import parse_yaml

        return parse_yaml(text, file).diags_from_validation(exc)
    except Exception:
        return [Diagnostic(str(err["msg"]).removeprefix("Value error, "), file, path=tuple(err["loc"]))
                for err in exc.errors(include_url=False)]


def _dump(model: BaseModel) -> str:
    return model.model_dump_json(indent=2) + "\n"


class ResultsDir:
    """One results directory. Writers are atomic; readers raise InfxError on bad files."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    # paths ---------------------------------------------------------------
    @property
    def db_path(self) -> Path:
        return self.root / DB_NAME

    def run_dir(self, run_id: str) -> Path:
        return self.root / check_name(run_id, "run id")

    def manifest_path(self, run_id: str) -> Path:
        return self.run_dir(run_id) / MANIFEST

    def point_dir(self, run_id: str, point_id: str) -> Path:
        return self.run_dir(run_id) / POINTS / check_name(point_id, "point id")

    def file(self, run_id: str, point_id: str, name: str) -> Path:
        from infx.evals.protocol import EVAL_FILE, EVAL_STATUS_FILE, SAMPLES_FILE

        if name not in (POINT_FILE, STATUS_FILE, RESULT_FILE, RECORDS_FILE, ENGINE_LOG, EVAL_FILE, SAMPLES_FILE,
                        EVAL_STATUS_FILE, LMEVAL_LOG):
            raise ValueError(f"not a point file: {name}")
        return self.point_dir(run_id, point_id) / name

    # listing -------------------------------------------------------------
    def runs(self) -> list[str]:
        """Run ids that have a manifest, oldest first (by manifest start time, then id)."""
        if not self.root.is_dir():
            return []
        found: list[tuple[float, str]] = []
        for d in self.root.iterdir():
            if d.is_dir() and _NAME_RE.match(d.name) and (d / MANIFEST).is_file():
                try:
                    from infx import jsonio

                    started = float(jsonio.load(d / MANIFEST).get("started_at", 0.0))
                except (InfxError, ValueError, AttributeError, TypeError):
                    started = 0.0
                found.append((started, d.name))
        return [name for _, name in sorted(found)]

    def points(self, run_id: str) -> list[str]:
        d = self.run_dir(run_id) / POINTS
        if not d.is_dir():
            return []
        return sorted(p.name for p in d.iterdir() if p.is_dir() and _NAME_RE.match(p.name))

    # writers -------------------------------------------------------------
    def write_manifest(self, manifest: RunManifest) -> Path:
        path = self.manifest_path(manifest.run_id)
        atomic.write_text(path, _dump(manifest))
        return path

    def write_point(self, run_id: str, point: Point, launch_fingerprint: str | None = None) -> Path:
        path = self.file(run_id, point.point_id, POINT_FILE)
        atomic.write_text(path, _dump(PointFile.of(point, launch_fingerprint)))
        return path

    def write_status(self, run_id: str, point_id: str, status: PointStatus) -> Path:
        path = self.file(run_id, point_id, STATUS_FILE)
        atomic.write_text(path, _dump(status))
        return path

    def write_result(self, run_id: str, point_id: str, result: BenchResult) -> Path:
        path = self.file(run_id, point_id, RESULT_FILE)
        atomic.write_text(path, _dump(result))
        return path

    def write_records(self, run_id: str, point_id: str, records: Iterable[BaseModel | dict[str, Any]]) -> Path:
        path = self.file(run_id, point_id, RECORDS_FILE)
        atomic.write_jsonl_gz(path, (r.model_dump(mode="json") if isinstance(r, BaseModel) else r
                                     for r in records))
        return path

    def write_engine_log(self, run_id: str, point_id: str, text: str) -> Path:
        path = self.file(run_id, point_id, ENGINE_LOG)
        atomic.write_text(path, text)
        return path

    # readers -------------------------------------------------------------
    def read_manifest(self, run_id: str) -> RunManifest:
        m = read_model(self.manifest_path(run_id), RunManifest)
        if m.run_id != run_id:
            raise InfxError(Diagnostic(f"manifest run_id {m.run_id!r} does not match its directory "
                                       f"{run_id!r}", str(self.manifest_path(run_id)), path=("run_id",)))
        return m

    def read_point(self, run_id: str, point_id: str) -> PointFile:
        path = self.file(run_id, point_id, POINT_FILE)
        pf = read_model(path, PointFile)
        try:
            point = pf.typed()
        except ValidationError as exc:
            raise InfxError(_json_diags(path.read_text(), str(path), exc)) from None
        if point.point_id != point_id:
            raise InfxError(Diagnostic(f"point-id {point.point_id!r} does not match its directory "
                                       f"{point_id!r}", str(path), path=("point", "point-id")))
        return pf

    def read_status(self, run_id: str, point_id: str) -> PointStatus:
        return read_model(self.file(run_id, point_id, STATUS_FILE), PointStatus)

    def read_result(self, run_id: str, point_id: str) -> BenchResult:
        return read_model(self.file(run_id, point_id, RESULT_FILE), BenchResult)

    def read_engine_log(self, run_id: str, point_id: str, tail_chars: int | None = None) -> str:
        path = self.file(run_id, point_id, ENGINE_LOG)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        return text[-tail_chars:] if tail_chars else text


def write_point_outcome(
    results: ResultsDir,
    run_id: str,
    point: Point,
    status: PointStatus,
    result: BenchResult | None = None,
    *,
    records: Iterable[BaseModel | dict[str, Any]] | None = None,
    engine_log: str | None = None,
) -> Path:
    """Write everything a finished point leaves behind; ``status.json`` goes last, so a point
    directory with a status file is complete. Returns the point directory."""
    results.write_point(run_id, point, status.launch_fingerprint)
    if engine_log is not None:
        results.write_engine_log(run_id, point.point_id, engine_log)
    if records is not None:
        results.write_records(run_id, point.point_id, records)
    if result is not None:
        results.write_result(run_id, point.point_id, result)
    results.write_status(run_id, point.point_id, status)
    return results.point_dir(run_id, point.point_id)
