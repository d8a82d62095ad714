"""A bundle's recorded launch made runnable again (``infx repro``): secrets restored from the environment,
the port substituted into the port-free argv, the fingerprint taken again over the result."""

from __future__ import annotations

import os
from pathlib import Path

from infx.diagnostics import Diagnostic, InfxError
from infx.engines.launch import PORT_PLACEHOLDER, Launch, fingerprint
from infx.repro.environment import REDACTED
from infx.repro.payload import BundlePayload
from infx.results.layout import read_model


def load_replay(path: str | Path) -> BundlePayload:
    return read_model(path, BundlePayload)


def restored_env(payload: BundlePayload, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The launch env with each withheld value taken from ``environ`` (default: this process's)."""
    env = os.environ if environ is None else environ
    if payload.launch is None:
        return {}
    out: dict[str, str] = {}
    missing = []
    for k, v in payload.launch.env.items():
        if v == REDACTED:
            if k not in env:
                missing.append(k)
                continue
            out[k] = env[k]
        else:
            out[k] = v
    if missing:
        raise InfxError(Diagnostic(f"the recorded launch needs {', '.join(missing)}, withheld from the bundle as "
                                   "secret(s): set them in the environment"))
    return out


def replay_launch(payload: BundlePayload, port: int, environ: dict[str, str] | None = None) -> Launch:
    """The recorded launch on ``port``; its ``fingerprint`` is recomputed (equal to the recorded config hash
    exactly when image, argv, env and files are the recorded ones)."""
    if payload.launch is None or not payload.argv_template:
        raise InfxError(Diagnostic(f"bundle of point {payload.point_id} records no replayable launch (no "
                                   "port-free argv)"))
    if any(REDACTED in a for a in payload.argv_template):
        raise InfxError(Diagnostic(f"bundle of point {payload.point_id}: its argv holds a withheld secret "
                                   f"({', '.join(n for n in payload.redacted if not n.startswith('process:'))}); "
                                   "it cannot be replayed from the bundle"))
    env = restored_env(payload, environ)
    rec = payload.launch
    fp = fingerprint(rec.image, list(payload.argv_template), {**env, **rec.fingerprint_extras()})
    argv = [str(port) if a == PORT_PLACEHOLDER else a for a in payload.argv_template]
    return rec.model_copy(update={"argv": argv, "env": env, "port": port, "fingerprint": fp})
