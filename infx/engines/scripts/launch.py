"""A rendered bench script as a first-class :class:`Launch` (same runtimes, same fingerprint rules,
plus the script's and the library's content hashes)."""

from __future__ import annotations

from pathlib import PurePosixPath

from infx.diagnostics import Diagnostic, InfxError
from infx.engines.hardware import Hardware
from infx.engines.launch import PORT_PLACEHOLDER, Launch, Runtime, fingerprint, script_hashes
from infx.engines.runtimes import RuntimeOptions, host_for, wrap
from infx.engines.scripts.locate import ScriptLookup, workflow_env
from infx.engines.scripts.source import (
    ENGINE_OF,
    ScriptRender,
    ScriptSource,
    flag_value,
    port_free,
    python_for_local,
    server_env,
)
from infx.matrix.point import Point


def _fail(point: Point, source: ScriptSource, sr: ScriptRender, msg: str) -> InfxError:
    return InfxError(Diagnostic(f"point {point.point_id}: {msg}", file=str(source.root / sr.script),
                                line=sr.error_line))


def script_launch(point: Point, source: ScriptSource, lookup: ScriptLookup, hw: Hardware, *, port: int = 8000,
                  runtime: Runtime = "local", options: RuntimeOptions | None = None) -> Launch:
    """The launch InferenceX's bench script would start for ``point``. Raises a per-point
    :class:`InfxError` naming the script (and its line) when the script fails or launches nothing."""
    assert lookup.path is not None
    engine = ENGINE_OF.get(point.framework)
    if engine is None:
        raise InfxError(Diagnostic(
            f"point {point.point_id}: framework '{point.framework}' has no server a bench script launch can be read as "
            f"(known: {', '.join(sorted(ENGINE_OF))})", file=str(source.root / lookup.path)))
    renders = [source.render(point, lookup, c) for c in point.concs]
    sr = renders[0]
    for r in renders:
        if r.error:
            raise _fail(point, source, r, r.error)
    assert sr.server is not None
    if any(r.server is not None and r.server.argv != sr.server.argv for r in renders[1:]):
        raise _fail(point, source, sr,
                    "the script launches a different server at each concurrency; give one conc per point")
    env = server_env(sr, workflow_env(point, point.concs[0], lookup.path))
    argv = port_free([sr.server.name, *sr.server.argv])
    files: dict[str, str] = {}
    for name, text in sr.server.files.items():
        base = PurePosixPath(name).name
        files[base] = text
        argv = [base if a == name else (a.replace("=" + name, "=" + base) if a.endswith("=" + name) else a)
                for a in argv]
    engine_argv = python_for_local(argv) if runtime == "local" else argv
    options = options or RuntimeOptions()
    hashes = script_hashes(sr.script, sr.script_sha256, sr.lib_sha256)
    inner_fp = fingerprint(point.image, engine_argv, {**env, **files, **hashes})
    argv_t = wrap(runtime, engine_argv=engine_argv, env=env, image=point.image, hardware=hw, gpus=point.gpus_per_server,
                  name=f"infx-{inner_fp[:12]}", local_model_dir=None, has_files=bool(files), options=options)
    fp = fingerprint(point.image, argv_t, {**env, **{f"file:{k}": v for k, v in files.items()}, **hashes})
    final = [str(port) if a == PORT_PLACEHOLDER else a.replace(PORT_PLACEHOLDER, str(port)) for a in argv_t]
    raw = sr.server.argv
    model_path = (flag_value(raw, "--model-path", "--model") or
                  (raw[1] if sr.server.name == "vllm" and len(raw) > 1 else None) or
                  next((raw[i + 1] for i, a in enumerate(raw[:-1]) if a.endswith("trtllm-serve")), None) or point.model)
    served = flag_value(raw, "--served-model-name") or model_path
    return Launch(
        engine=engine, recipe=f"script:{sr.script}", recipe_file=str(source.root / sr.script), image=point.image,
        runtime=runtime, argv=final, env=env, files=files, fingerprint=fp, host=host_for(runtime), port=port,
        served_model_name=served, model_path=model_path, script=sr.script, script_sha256=sr.script_sha256,
        lib_sha256=sr.lib_sha256, client=[[r.kind, *r.argv] for r in sr.client],
        consumed=sorted(point.to_row()),
    )
