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


def scenario_trials(config_files: Sequence[str | Path], runner_config: str | Path,
                    config_keys: Sequence[str]) -> dict[str, int]:
    """point-id -> ``trials:`` of the catalog scenario the point comes from (only points whose
    scenario declares it; ``fixed-seq-len`` items are matched on isl/osl)."""
    from infx.catalog.loader import load_catalog_and_runners
    from infx.matrix.generate import resolve_keys, test_config_rows

    catalog, runners = load_catalog_and_runners(config_files, runner_config)
    out: dict[str, int] = {}
    for key in resolve_keys(catalog, list(config_keys)):
        entry = catalog.entries[key]
        sc = entry.scenarios
        fixed = {(f.isl, f.osl): f.trials for f in sc.fixed_seq_len if f.trials}
        agentic = next((a.trials for a in sc.agentic_coding if a.trials), None)
        if not fixed and agentic is None:
            continue
        for row in test_config_rows(catalog, runners, [key]):
            p = Point.from_row(row)
            n = agentic if p.is_agentic else fixed.get((p.isl, p.osl))
            if n:
                out[p.point_id] = n
    return out


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
