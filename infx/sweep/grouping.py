"""Group matrix points by launch fingerprint into launch groups (:class:`LaunchGroup`): points that render
to the same engine launch (image + argv + env) share one engine start, measured in ascending concurrency."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from infx.engines.servable import Servable
from infx.matrix.point import Point


@dataclass
class LaunchGroup:
    """Points that share one engine launch (same launch fingerprint), in ascending concurrency."""

    fingerprint: str
    points: list[Point]
    engine: str | None = None
    image: str | None = None
    argv: list[str] = field(default_factory=list)
    launch: Servable | None = None  # the rendered launch or deployment (placeholder port); None: not rendered

    @property
    def point_ids(self) -> list[str]:
        return [p.point_id for p in self.points]

    @property
    def gpus(self) -> int:
        """GPUs the launch needs (Slurm ``--gres=gpu:N``): 0 on CPU runners."""
        return max((gpus_needed(p) for p in self.points), default=0)


def gpus_needed(point: Point) -> int:
    try:
        from infx.engines.hardware import hardware_for_runner

        if hardware_for_runner(point.runner).vendor == "cpu":
            return 0
    except Exception:  # a runner no hardware table names: the point's own GPU count
        pass
    return point.gpus_per_server


# Fields that vary between points of one launch and never change the server.
_LOAD_ONLY_FIELDS = ("conc", "exp-name", "point-id", "recipe-fingerprint", "run-eval", "eval-only", "eval-conc",
                     "eval-all-concs", "duration", "isl", "osl")


def row_fingerprint(point: Point) -> str:
    """Fallback launch identity when no recipe renders the point: sha256 of the canonical row
    without the load-only fields (the engine would be started the same way for all of them)."""
    row = {k: v for k, v in point.to_row().items() if k not in _LOAD_ONLY_FIELDS}
    blob = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def group_points(points: Iterable[Point], render: Callable[[Point], Servable] | None = None) -> list[LaunchGroup]:
    """Groups in order of first appearance; points inside a group by ascending concurrency.

    ``render(point)`` returns the rendered launch (its ``fingerprint``, ``engine``, ``image``, ``argv``);
    without it the row fingerprint is used and nothing is rendered.
    """
    groups: dict[str, LaunchGroup] = {}
    for point in points:
        if render is None:
            fp = row_fingerprint(point)
            group = groups.setdefault(fp, LaunchGroup(fp, [], engine=point.framework, image=point.image))
        else:
            launch = render(point)
            group = groups.setdefault(launch.fingerprint, LaunchGroup(
                launch.fingerprint, [], engine=launch.engine, image=launch.image, argv=list(launch.argv),
                launch=launch))
        group.points.append(point)
    for group in groups.values():
        group.points.sort(key=lambda p: (min(p.concs), p.point_id))
    return list(groups.values())
