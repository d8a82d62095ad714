"""Typed entry point for later stages: catalog files + keys -> :class:`Point` list."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infx.matrix.point import Point

if TYPE_CHECKING:
    from infx.catalog.loader import Catalog
    from infx.catalog.runners import RunnerConfig


@dataclass(frozen=True)
class Selection:
    """A catalog and its runners, loaded and validated once; what a sweep asks of them."""

    catalog: Catalog
    runners: RunnerConfig

    @classmethod
    def load(cls, config_files: Sequence[str | Path], runner_config: str | Path) -> Selection:
        from infx.catalog.loader import load_catalog_and_runners

        return cls(*load_catalog_and_runners(config_files, runner_config))

    def points(self, config_keys: Sequence[str], evals: str = "none", *, conc: Sequence[int] | None = None,
               scenario_types: Sequence[str] | None = None, runner_node_filter: str | None = None,
               on_warning: Callable[[str], None] | None = None) -> list[Point]:
        """``config_keys`` (globs allowed) expanded like ``test-config``."""
        from infx.matrix.generate import test_config_rows

        rows = test_config_rows(self.catalog, self.runners, config_keys, evals=evals, conc=conc,
                                scenario_types=scenario_types, runner_node_filter=runner_node_filter,
                                on_warning=on_warning)
        return [Point.from_row(r) for r in rows]

    def scenario_field(self, config_keys: Sequence[str], field: str) -> dict[str, Any]:
        """point-id -> the value of ``field`` (an infx extension such as ``trials`` or ``slo``) on the
        catalog scenario the point comes from (only points whose scenario sets it; ``fixed-seq-len``
        items are matched on isl/osl)."""
        from infx.matrix.generate import resolve_keys, test_config_rows

        out: dict[str, Any] = {}
        for key in resolve_keys(self.catalog, list(config_keys)):
            sc = self.catalog.entries[key].scenarios
            fixed: dict[tuple[int | None, int | None], Any] = {
                (f.isl, f.osl): getattr(f, field) for f in sc.fixed_seq_len if getattr(f, field)}
            agentic = next((getattr(a, field) for a in sc.agentic_coding if getattr(a, field)), None)
            if not fixed and agentic is None:
                continue
            for row in test_config_rows(self.catalog, self.runners, [key]):
                p = Point.from_row(row)
                v = agentic if p.is_agentic else fixed.get((p.isl, p.osl))
                if v:
                    out[p.point_id] = v
        return out

    def keyed_points(self, config_keys: Sequence[str] | None, evals: str = "none", *,
                     conc: Sequence[int] | None = None) -> list[tuple[str, Point]]:
        """Each point with the catalog key it came from (every entry when ``config_keys`` is None)."""
        from infx.matrix.generate import resolve_keys, test_config_rows

        keys = resolve_keys(self.catalog, config_keys) if config_keys else list(self.catalog.entries)
        return [(key, Point.from_row(row)) for key in keys
                for row in test_config_rows(self.catalog, self.runners, [key], evals=evals, conc=conc)]


def select_points(
    config_files: Sequence[str | Path],
    runner_config: str | Path,
    config_keys: Sequence[str],
    evals: str = "none",
    *,
    conc: Sequence[int] | None = None,
    scenario_types: Sequence[str] | None = None,
    runner_node_filter: str | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> list[Point]:
    """Load and validate the catalog, expand ``config_keys`` (globs allowed) like ``test-config``.

    Raises InfxError on bad input (file:line:col diagnostics).
    """
    return Selection.load(config_files, runner_config).points(
        config_keys, evals, conc=conc, scenario_types=scenario_types, runner_node_filter=runner_node_filter,
        on_warning=on_warning)


def scenario_field(config_files: Sequence[str | Path], runner_config: str | Path, config_keys: Sequence[str],
                   field: str) -> dict[str, Any]:
    """:meth:`Selection.scenario_field` of the files."""
    return Selection.load(config_files, runner_config).scenario_field(config_keys, field)


def scenario_trials(config_files: Sequence[str | Path], runner_config: str | Path,
                    config_keys: Sequence[str]) -> dict[str, int]:
    """point-id -> ``trials:`` of the point's catalog scenario."""
    return scenario_field(config_files, runner_config, config_keys, "trials")


def scenario_slo(config_files: Sequence[str | Path], runner_config: str | Path,
                 config_keys: Sequence[str]) -> dict[str, dict[str, dict[str, float]]]:
    """point-id -> the SLO tiers (``slo:``) of the point's catalog scenario."""
    return scenario_field(config_files, runner_config, config_keys, "slo")


def keyed_points(
    config_files: Sequence[str | Path],
    runner_config: str | Path,
    config_keys: Sequence[str] | None,
    evals: str = "none",
    *,
    conc: Sequence[int] | None = None,
) -> list[tuple[str, Point]]:
    """Like :func:`select_points`, each point with the catalog key it came from (every entry when
    ``config_keys`` is None)."""
    return Selection.load(config_files, runner_config).keyed_points(config_keys, evals, conc=conc)
