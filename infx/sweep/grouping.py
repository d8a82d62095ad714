"""Group matrix points by launch fingerprint: points that render to the same engine launch
(image + argv + env) share one engine start, measured in ascending concurrency."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any

from infx.matrix.point import Point
from infx.sweep.executors import LaunchGroup

# Fields that vary between points of one launch and never change the server.
_LOAD_ONLY_FIELDS = ("conc", "exp-name", "point-id", "recipe-fingerprint", "run-eval", "eval-only", "eval-conc",
                     "eval-all-concs", "duration", "isl", "osl")


def row_fingerprint(point: Point) -> str:
    """Fallback launch identity when no recipe renders the point: sha256 of the canonical row
    without the load-only fields (the engine would be started the same way for all of them)."""
    row = {k: v for k, v in point.to_row().items() if k not in _LOAD_ONLY_FIELDS}
    blob = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def group_points(points: Iterable[Point], render: Callable[[Point], Any] | None = None) -> list[LaunchGroup]:
    """Groups in order of first appearance; points inside a group by ascending concurrency.

    ``render(point)`` returns the engines stage's ``Launch`` (``fingerprint``, ``engine``, ``image``,
    ``argv``); without it the row fingerprint is used and nothing is rendered.
    """
    groups: dict[str, LaunchGroup] = {}
    for point in points:
        if render is None:
            fp, launch = row_fingerprint(point), None
        else:
            launch = render(point)
            fp = launch.fingerprint
        group = groups.get(fp)
        if group is None:
            group = groups[fp] = LaunchGroup(
                fingerprint=fp,
                points=[],
                engine=getattr(launch, "engine", None) if launch is not None else point.framework,
                image=getattr(launch, "image", None) if launch is not None else point.image,
                argv=list(getattr(launch, "argv", []) or []),
                launch=launch,
            )
        group.points.append(point)
    for group in groups.values():
        group.points.sort(key=lambda p: (min(p.concs), p.point_id))
    return list(groups.values())
