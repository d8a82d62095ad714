"""How a sweep turns a point into an engine launch: the engines stage's renderer over the workspace's
recipes (``(point, port) -> Launch``, or the point's :class:`~infx.engines.disagg.model.Deployment` when it
spans roles)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from infx.engines.disagg.model import Deployment
from infx.engines.launch import Launch, Runtime
from infx.matrix.point import Point
from infx.workspace import Workspace


class RenderAtPort(Protocol):
    def __call__(self, point: Point, port: int, *, ports: Mapping[str, int] | None = None,
                 kv_dir: str | None = None) -> Launch | Deployment:
        """The point's launch on ``port`` (a deployment: its entry role's; ``ports``: every role's port
        key, ``kv_dir``: the KV connector's shared directory)."""
        ...


def renderer_at_port(recipes_path: str | None, workspace: Workspace | None = None,
                     runtimes: Mapping[str, str] | None = None) -> RenderAtPort:
    """``(point, port) -> Launch`` from the recipes (engines stage): ``recipes_path`` when given, else
    the workspace's recipes over the built-in ones. ``runtimes``: runner label -> the runtime its fleet
    declares in runners.yaml (docker, podman, slurm); a runner without one renders ``local``."""
    from infx.engines.recipes import workspace_recipes
    from infx.engines.render import render_launch

    recipes = workspace_recipes(recipes_path, workspace)

    def render(point: Point, port: int, *, ports: Mapping[str, int] | None = None,
               kv_dir: str | None = None) -> Launch | Deployment:
        if point.multinode:  # every role of the deployment (engines stage, infx.engines.disagg)
            from infx.engines.disagg.render import render_deployment

            return render_deployment(point, recipes, port=port, ports=ports, kv_dir=kv_dir)
        return render_launch(point, recipes, port=port, runtime=runtime_of(point, runtimes))

    return render


def runtime_of(point: Point, runtimes: Mapping[str, str] | None) -> Runtime:
    """The runtime the point's runner declares (its label, else its fleet ``cluster:<label>``), else local."""
    found = (runtimes or {}).get(point.runner) or (runtimes or {}).get(f"cluster:{point.runner}") or ""
    return _RUNTIMES.get(found, "local")


_RUNTIMES: dict[str, Runtime] = {"docker": "docker", "podman": "podman", "slurm": "slurm"}


def replay_renderer(payload_file: str) -> RenderAtPort:
    """``(point, port) -> Launch``: the launch a repro bundle recorded (``infx repro``), on ``port``.
    Values the bundle withheld as secrets come from this process's environment (a Slurm job inherits the
    submitter's); the fingerprint is taken again over the restored launch, so a launch that differs in any
    way from the recorded one fails the starter's fingerprint check."""
    from infx.repro.replay import load_replay, replay_launch

    payload = load_replay(payload_file)

    def render(point: Point, port: int, *, ports: Mapping[str, int] | None = None,
               kv_dir: str | None = None) -> Launch | Deployment:
        return replay_launch(payload, port)

    return render
