"""Write a point's repro bundle: the point directory itself plus ``receipt.json`` (payload + member digests).

The sweep calls :func:`write_bundle` once per point, after the point's last file (result, records, engine log,
telemetry, eval files, status) is written; the receipt is written last and atomically, so a receipt always
covers a complete point. Secrets never enter the payload: launch env values and argv values whose names or
shapes look like credentials are replaced by ``***`` (and listed by name in ``redacted``).
"""

from __future__ import annotations

import functools
import json
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from infx.diagnostics import InfxError
from infx.engines.launch import PORT_PLACEHOLDER, Launch, fingerprint
from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.metrics.run_config import BenchSettings
from infx.repro.environment import (
    engine_env,
    file_digest,
    first_existing,
    redact_argv,
    redact_env,
    versions,
    workspace_state,
)
from infx.repro.inventory import cached_inventory
from infx.repro.payload import (
    BundlePayload,
    EvalSettings,
    FileDigest,
    ImageSection,
    Inputs,
    Inventory,
    LoadSection,
    RecipeSection,
    Versions,
)
from infx.results.layout import MANIFEST, RESULT_FILE, RunManifest, StartupSummary, read_model
from infx.results.receipt import Receipt, sha256_bytes, write_receipt
from infx.telemetry.session import TelemetryOptions


@dataclass
class BundleContext:
    """What the sweep knows about a point beyond its directory's files."""

    run_id: str
    point: Point
    launch: Launch | None = None  # as run (on its real port)
    startup: StartupSummary | None = None
    load: BaseModel | None = None  # infx.sweep.profile.LoadProfile
    telemetry: TelemetryOptions | None = None
    evals: EvalSettings | None = None
    workspace_root: str | None = None
    inventory: Inventory | None = None  # default: read once per process
    versions: Versions | None = None  # default: this interpreter's


def argv_template(launch: Launch) -> list[str]:
    """The launch's argv with its port as ``{port}``, checked against the launch fingerprint (which was
    taken over exactly that argv): ``[]`` when no substitution reproduces the fingerprint."""
    port = str(launch.port)
    env = {**launch.env, **launch.fingerprint_extras()}
    every = [PORT_PLACEHOLDER if a == port else a for a in launch.argv]
    after_flag = [PORT_PLACEHOLDER if a == port and i and launch.argv[i - 1] == "--port" else a
                  for i, a in enumerate(launch.argv)]
    for cand in (every, after_flag):
        if fingerprint(launch.image, cand, env) == launch.fingerprint:
            return cand
    return []


def build_payload(point_dir: Path, ctx: BundleContext) -> BundlePayload:
    launch = ctx.launch
    redacted: list[str] = []
    red_launch = None
    template: list[str] = []
    if launch is not None:
        env, names = redact_env(dict(launch.env))
        argv, anames = redact_argv(list(launch.argv))
        template = argv_template(launch)
        template = redact_argv(template)[0] if template else []
        redacted += names + anames
        red_launch = launch.model_copy(update={"env": env, "argv": argv})
    proc_env, pnames = redact_env(engine_env())
    redacted += [f"process:{n}" for n in pnames]
    bench = _bench_settings(point_dir)
    server_version = ctx.startup.engine_version if ctx.startup else None
    return BundlePayload(
        run_id=ctx.run_id, point_id=ctx.point.point_id, written_at=time.time(), host=socket.gethostname(),
        point=ctx.point.to_row(), config_hash=launch.fingerprint if launch else None, launch=red_launch,
        argv_template=template, process_env=proc_env, redacted=sorted(set(redacted)),
        recipe=_recipe(launch, ctx.workspace_root), image=_image(point_dir, ctx.point, launch, ctx.workspace_root),
        versions=ctx.versions or versions(launch.engine if launch else ctx.point.framework, server_version),
        inputs=_inputs(point_dir, ctx, bench), load=_load(ctx.load, bench), telemetry=ctx.telemetry,
        evals=ctx.evals or EvalSettings(), inventory=ctx.inventory or cached_inventory(),
        workspace=workspace_state(ctx.workspace_root), startup=ctx.startup)


def write_bundle(point_dir: str | Path, ctx: BundleContext) -> Receipt:
    """Build the payload and write ``receipt.json`` over every file of the point directory."""
    d = Path(point_dir)
    payload = build_payload(d, ctx)
    return write_receipt(d, payload.model_dump(mode="json"))


# --------------------------------------------------------------------------- sections


def _bench_settings(point_dir: Path) -> BenchSettings | None:
    """The load generator's settings the point was measured with (result.json ``config``); None for an
    agentic replay (the load profile holds its settings) or a point without a readable result."""
    try:
        result = read_model(point_dir / RESULT_FILE, BenchResult)
    except InfxError:
        return None
    return result.config if isinstance(result.config, BenchSettings) else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _recipe(launch: Launch | None, workspace_root: str | None = None) -> RecipeSection:
    """The recipe file and its text; for a launch rendered from a bench script, the script (path relative to
    the workspace, the sha256 it was rendered from, its text when the file still has that hash) and the
    lib's hash, as the launch carries them (they are in its fingerprint)."""
    if launch is None:
        return RecipeSection()
    sec = RecipeSection(name=launch.recipe, file=launch.recipe_file)
    data: bytes | None = None
    if launch.recipe_file:
        try:
            data = Path(launch.recipe_file).read_bytes()
        except OSError:
            data = None
    if launch.script is not None:
        if data is None and workspace_root:
            try:
                data = (Path(workspace_root) / launch.script).read_bytes()
            except OSError:
                data = None
        same = data is not None and sha256_bytes(data) == launch.script_sha256
        sec.sha256 = launch.script_sha256
        sec.bench_script = FileDigest(path=launch.script, sha256=launch.script_sha256,
                                      size=len(data) if same and data is not None else None)
        sec.bench_script_text = data.decode("utf-8", errors="replace") if same and data is not None else None
        if launch.lib_sha256:
            sec.lib_hashes = {"benchmark_lib.sh": launch.lib_sha256}
        return sec
    if data is not None:
        sec.sha256 = sha256_bytes(data)
        sec.text = data.decode("utf-8", errors="replace")
    return sec


def _image(point_dir: Path, point: Point, launch: Launch | None, workspace_root: str | None) -> ImageSection:
    """The image reference and its digest: from the run manifest when it resolved one, else from a
    ``name@sha256:...`` reference, else from the workspace's images lock (the digest the pin was reviewed at).
    No registry is asked while a sweep runs."""
    ref = launch.image if launch else point.image
    sec = ImageSection(reference=ref, runtime=launch.runtime if launch else None)
    try:
        manifest = RunManifest.model_validate_json((point_dir.parents[1] / MANIFEST).read_text())
        digest = next((i.digest for i in manifest.images if i.image == ref and i.digest), None)
    except (OSError, ValueError):
        digest = None
    if digest:
        sec.digest, sec.digest_source = digest, "manifest"
    elif "@sha256:" in ref:
        sec.digest, sec.digest_source = ref.split("@", 1)[1], "reference"
    elif workspace_root:
        locked = _images_lock(workspace_root).get(ref)
        if locked:
            sec.digest, sec.digest_source = locked, "images-lock"
    return sec


def _images_lock(workspace_root: str) -> dict[str, str]:
    try:
        from infx.workspace import at

        path = at(workspace_root).images_lock
        if not path.is_file():
            return {}
        st = path.stat()
        return _lock_cached(str(path), st.st_size, st.st_mtime_ns)
    except Exception:
        return {}


@functools.lru_cache(maxsize=4)
def _lock_cached(path: str, size: int, mtime_ns: int) -> dict[str, str]:
    from infx.preflight.images import load_images_lock

    return dict(load_images_lock(path).images)


def _inputs(point_dir: Path, ctx: BundleContext, bench: BenchSettings | None) -> Inputs:
    tok_dir = (bench.tokenizer if bench else None) or (ctx.launch.model_path if ctx.launch else None)
    inp = Inputs(dataset=bench.dataset if bench else None)
    if bench is not None and bench.dataset_path:
        inp.dataset_file = file_digest(bench.dataset_path)
    if ctx.point.is_agentic:
        inp.dataset = "agentic-trace"
        profile = ctx.load.model_dump() if ctx.load is not None else {}
        trace = profile.get("agentic_traces") or point_dir.parents[1] / "traces" / "synthetic.jsonl"
        inp.trace_file = file_digest(trace)
    if tok_dir and Path(tok_dir).is_dir():
        d = Path(tok_dir)
        inp.tokenizer_dir = str(d)
        inp.tokenizer = file_digest(d / "tokenizer.json")
        inp.tokenizer_config = file_digest(d / "tokenizer_config.json")
        inp.model_config_file = file_digest(d / "config.json")
        template = None
        jinja = first_existing([d / "chat_template.jinja"])
        if jinja is not None:
            template = jinja.read_text(encoding="utf-8", errors="replace")
        else:
            tc = _read_json(d / "tokenizer_config.json").get("chat_template")
            template = tc if isinstance(tc, str) else json.dumps(tc, sort_keys=True) if tc else None
        inp.chat_template_sha256 = sha256_bytes(template.encode()) if template else None
    return inp


def _load(load: BaseModel | None, bench: BenchSettings | None) -> LoadSection | None:
    if load is None:
        return None
    profile = load.model_dump(mode="json")
    key_of = getattr(load, "key", None)  # the sweep's LoadProfile names its load (a stage above this one)
    key = key_of() if callable(key_of) else None
    if bench is None:
        return LoadSection(profile=profile, key=key, seed=profile.get("seed"))
    return LoadSection(profile=profile, key=key, seed=bench.seed, warmup_requests=bench.warmup_requests,
                       num_prompts=bench.num_prompts, concurrency=bench.concurrency)
