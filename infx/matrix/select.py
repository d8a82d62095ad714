"""Typed entry point for later stages: catalog files + keys -> :class:`Point` list."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from infx.matrix.point import Point


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
    from infx.catalog.loader import load_catalog_and_runners
    from infx.matrix.generate import test_config_rows

    catalog, runners = load_catalog_and_runners(config_files, runner_config)
    rows = test_config_rows(
        catalog, runners, config_keys, evals=evals, conc=conc, scenario_types=scenario_types,
        runner_node_filter=runner_node_filter, on_warning=on_warning,
    )
    return [Point.from_row(r) for r in rows]


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
    from infx.catalog.loader import load_catalog_and_runners
    from infx.matrix.generate import resolve_keys, test_config_rows

    catalog, runners = load_catalog_and_runners(config_files, runner_config)
    keys = resolve_keys(catalog, config_keys) if config_keys else list(catalog.entries)
    return [(key, Point.from_row(row)) for key in keys
            for row in test_config_rows(catalog, runners, [key], evals=evals, conc=conc)]
