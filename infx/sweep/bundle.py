"""The sweep's one call into the repro stage: when a point's files are final, write its bundle receipt
(:mod:`infx.repro.writer`). A bundle that cannot be written is a note, never a failed point."""

from __future__ import annotations

from collections.abc import Callable

from infx.matrix.point import Point
from infx.sweep import events as ev
from infx.sweep.grouping import LaunchGroup
from infx.sweep.interfaces import PointEvaluator, PointMeasurer, RunningEngine
from infx.sweep.layout import RunDir


def finalise_point(run_dir: RunDir, point: Point, group: LaunchGroup, engine: RunningEngine,
                   measurer: PointMeasurer, evaluator: PointEvaluator | None, emit: Callable[[ev.Event], None]) -> None:
    """Write ``receipt.json`` for a point that was measured (done or failed) on ``engine``; skipped points
    (never launched) and points in flight (no status) get none."""
    from infx.engines.launch import Launch
    from infx.repro.payload import EvalSettings
    from infx.repro.writer import BundleContext, write_bundle
    from infx.workspace import current

    status = run_dir.read_status(point.point_id)
    if status is None or status.state == "skipped":
        return
    # a single engine's launch as run (a deployment's roles are in groups/FP.deployment.json)
    launch = engine.launch if isinstance(engine.launch, Launch) else None
    if launch is None and isinstance(group.launch, Launch):
        launch = group.launch
    try:
        ctx = BundleContext(
            run_id=run_dir.run_id, point=point, launch=launch, startup=status.startup,
            load=measurer.load, telemetry=measurer.telemetry,
            evals=EvalSettings(enabled=evaluator is not None, limit=evaluator.limit if evaluator else None),
            workspace_root=str(current().root))
        write_bundle(run_dir.point_dir(point.point_id), ctx)
    except Exception as exc:
        emit(ev.Note(f"point {point.point_id}: no repro bundle written: {type(exc).__name__}: {exc}"))
