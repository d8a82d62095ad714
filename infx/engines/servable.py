"""What the sweep and the preflight gate read from a rendered launch: a single engine
(:class:`~infx.engines.launch.Launch`) or a multi-role deployment (:class:`~infx.engines.disagg.model.Deployment`,
whose entry role answers the clients). Both satisfy :class:`Servable` structurally; nothing else is read from
either outside the engines stage."""

from __future__ import annotations

from typing import Protocol


class Servable(Protocol):
    @property
    def fingerprint(self) -> str:
        """sha256 over image + argv + env + files, the port left out: the launch group's identity."""
        ...

    @property
    def engine(self) -> str:
        """The adapter (``vllm``, ``sglang``, ``trt``) or ``deployment:<framework>``."""
        ...

    @property
    def recipe(self) -> str: ...

    @property
    def recipe_file(self) -> str | None: ...

    @property
    def image(self) -> str: ...

    @property
    def runtime(self) -> str: ...

    @property
    def argv(self) -> list[str]: ...

    @property
    def env(self) -> dict[str, str]: ...

    @property
    def files(self) -> dict[str, str]: ...

    @property
    def base_url(self) -> str: ...

    @property
    def served_model_name(self) -> str: ...

    @property
    def model_path(self) -> str: ...

    @property
    def model_builder(self) -> str | None: ...

    @property
    def metrics_url(self) -> str: ...
