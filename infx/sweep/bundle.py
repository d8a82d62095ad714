"""The sweep's one call into the repro stage: when a point's files are final, write its bundle receipt
(:mod:`infx.repro.writer`). A bundle that cannot be written is a note, never a failed point."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infx.matrix.point import Point
from infx.sweep import events as ev
from infx.sweep.grouping import LaunchGroup
from infx.sweep.layout import RunDir


def finalise_point(run_dir: RunDir, point: Point, group: LaunchGroup, engine: Any, measurer: Any,
                   evaluator: Any, emit: Callable[[ev.Event], None]) -> None:
    """Write ``receipt.json`` for a point that was measured (done or failed) on ``engine``; skipped points
    (never launched) and points in flight (no status) get none."""
    from infx.engines.launch import Launch
    from infx.repro.payload import EvalSettings
    from infx.repro.writer import BundleContext, write_bundle
    from infx.workspace import current

    status = run_dir.read_status(point.point_id)
    if status is None or status.state == "skipped":
        return
    launch = getattr(engine, "launch", None)
    if not isinstance(launch, Launch):
        launch = group.launch if isinstance(group.launch, Launch) else None
    try:
        ctx = BundleContext(
            run_id=run_dir.run_id, point=point, launch=launch, startup=status.startup,
            load=getattr(measurer, "load", None), telemetry=getattr(measurer, "telemetry", None),
            evals=EvalSettings(enabled=evaluator is not None, limit=getattr(evaluator, "limit", None)),
            workspace_root=str(current().root))
        write_bundle(run_dir.point_dir(point.point_id), ctx)
    except Exception as exc:
        emit(ev.Note(f"point {point.point_id}: no repro bundle written: {type(exc).__name__}: {exc}"))
