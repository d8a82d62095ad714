"""Rerun a point exactly, from its bundle alone (``infx repro POINT|BUNDLE``, in :mod:`infx.sweep.cli`), to judge
the rerun against it.

The bundle (a point directory with its ``receipt.json``, possibly copied anywhere) is verified first. Its
payload carries what the launch needs: the catalog row, the launch as run (image, port-free argv, env with
secrets withheld, extra files), the load profile with its seed and warmup, and the telemetry settings. The
rerun is a new run (``repro-<point-id>-<UTC time>``) whose single launch group replays the recorded launch
(:func:`infx.sweep.rendering.replay_renderer`, also on Slurm nodes through ``plan.json``'s ``replay``), so no
recipe, catalog or workspace of the original is read; the launch's fingerprint (the config hash) must come
out equal to the recorded one before anything starts. ``--trials N`` is the sweep's own ``--trials`` (the
point measured N times on one launch, warmup before the first only); without it the rerun measures as many
trials as the original's load profile did. The verdict comes from :func:`infx.repro.verdict.compare_point`
(the shared noise-aware comparison) and is written to the run's ``repro-verdict.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from infx.diagnostics import Diagnostic, InfxError

if TYPE_CHECKING:
    from infx.repro.payload import BundlePayload
    from infx.sweep.prepare import Prepared


class RerunRequest(BaseModel):
    """What ``infx repro`` is asked beyond the bundle: where to run, how many trials, the verdict's margin."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["local", "slurm"] = "local"
    trials: int | None = Field(None, ge=1)  # None: as many as the original's load profile
    margin: float | None = Field(None, gt=0, lt=1)  # None: the comparison's default (5%)


def prepare_rerun(bundle: Path, results: Path, run_id: str, backend: Literal["local", "slurm"] = "local",
                  trials: int | None = None) -> tuple[Prepared, BundlePayload]:
    """A prepared one-point sweep replaying ``bundle``'s launch into ``results/run_id`` (``trials``: the
    sweep's trials per point, overriding the recorded profile's)."""
    from infx.matrix.point import Point
    from infx.repro.diffenv import load_payload
    from infx.repro.replay import replay_launch
    from infx.results.receipt import verify_point_dir
    from infx.sweep.layout import RunDir
    from infx.sweep.prepare import RunRequest, prepare
    from infx.sweep.profile import LoadProfile
    from infx.telemetry.session import TelemetryOptions
    from infx.workspace import current

    check = verify_point_dir(bundle)
    if not check.ok:
        raise InfxError(Diagnostic(f"refusing to rerun: {check.reason()}", str(bundle)))
    payload = load_payload(bundle)
    if payload.load is None:
        raise InfxError(Diagnostic("the bundle records no load profile", str(bundle)))
    point = Point.from_row(payload.point)
    load = LoadProfile.model_validate(payload.load.profile)
    if trials is not None:
        # the sweep's --trials; an adaptive profile keeps its ceiling only where it still lies above N
        load = load.model_copy(update={"trials": trials, "max_trials": load.max_trials
                                       if load.max_trials and load.max_trials > trials else None})
    replayed = replay_launch(payload, 8000)  # before anything is written: a launch that cannot replay stops here
    if replayed.fingerprint != payload.config_hash:
        raise InfxError(Diagnostic(f"the replayed launch's config hash {replayed.fingerprint[:16]} differs from "
                                   f"the recorded {str(payload.config_hash)[:16]} (a withheld secret has another "
                                   "value here?)", str(bundle)))
    rd = RunDir(results, run_id)
    rd.root.mkdir(parents=True, exist_ok=True)
    replay_file = rd.root / "replay" / f"{payload.point_id}.json"
    from infx.atomic import write_text

    write_text(replay_file, payload.model_dump_json(indent=1) + "\n")  # what `infx run-group` replays on a node
    req = RunRequest(config_files=[], runner_config="", config_keys=[payload.point_id], results=str(results),
                     run_id=run_id, workspace=str(current().root), backend=backend,
                     preflight=False, load=load,
                     telemetry=payload.telemetry or TelemetryOptions(),
                     replay=str(replay_file), description=f"infx repro of {payload.run_id}/{payload.point_id}")
    prep = prepare(req, points=[point], render=lambda p: replay_launch(payload, 8000))
    return prep, payload
