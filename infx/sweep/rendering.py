"""How a sweep turns a point into an engine launch: the engines stage's renderer over the workspace's
recipes (``(point, port) -> Launch``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infx.matrix.point import Point
from infx.workspace import Workspace

RenderAtPort = Callable[[Point, int], Any]  # (point, port) -> infx.engines.launch.Launch


def renderer_at_port(recipes_path: str | None, workspace: Workspace | None = None) -> RenderAtPort:
    """``(point, port) -> Launch`` from the recipes (engines stage): ``recipes_path`` when given, else
    the workspace's recipes over the built-in ones."""
    from infx.engines.recipes import workspace_recipes
    from infx.engines.render import render_launch

    recipes = workspace_recipes(recipes_path, workspace)

    def render(point: Point, port: int, **deployment: Any) -> Any:
        if point.multinode:  # every role of the deployment (engines stage, infx.engines.disagg)
            from infx.engines.disagg.render import render_deployment

            return render_deployment(point, recipes, port=port, **deployment)
        return render_launch(point, recipes, port=port)

    return render


def replay_renderer(payload_file: str) -> RenderAtPort:
    """``(point, port) -> Launch``: the launch a repro bundle recorded (``infx repro``), on ``port``.
    Values the bundle withheld as secrets come from this process's environment (a Slurm job inherits the
    submitter's); the fingerprint is taken again over the restored launch, so a launch that differs in any
    way from the recorded one fails the starter's fingerprint check."""
    from infx.repro.replay import load_replay, replay_launch

    payload = load_replay(payload_file)

    def render(point: Point, port: int, **_: Any) -> Any:
        return replay_launch(payload, port)

    return render
