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
