"""Expand a validated catalog into matrix rows (:func:`test_config_rows`, :func:`full_sweep_rows`).

Rows match the reference generator field for field and in the same order (spec 3.1-3.6), plus a
``point-id``. Eval selection groups by the whole topology arm (see ``evals.py``). The command line
(``python -m infx.matrix.generate full-sweep|test-config``, ``infx matrix``) is
:mod:`infx.matrix.generate_cli`. This module keeps its imports light (no typer/rich): it is the fast path.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from infx.diagnostics import Diagnostic, InfxError, list_message
from infx.matrix.conc import fixed_concs, list_concs
from infx.matrix.dram import DramBudgetError, dram_budget_gb, single_node_gpus, worker_gpus_per_node
from infx.matrix.evals import Gen, mark_all_evals, mark_evals
from infx.matrix.pointid import point_id

if TYPE_CHECKING:
    from infx.catalog.loader import Catalog
    from infx.catalog.runners import RunnerConfig
    from infx.catalog.schema import MasterEntry, MultiNodeSearchSpaceEntry

EvalMode = Literal["default", "none", "evals-only", "all"]
EVAL_MODES: tuple[str, ...] = ("default", "none", "evals-only", "all")
SCENARIO_TYPES = ("fixed-seq-len", "agentic-coding")
SEQ_NAMES = {(8192, 1024): "8k1k", (1024, 1024): "1k1k"}
DEFAULT_AGENTIC_DURATION_SECONDS = 3600


def seq_name(isl: int, osl: int) -> str:
    return SEQ_NAMES.get((isl, osl), f"{isl}_{osl}")


@dataclass
class _Opts:
    """Everything that shapes generation, for both sub-commands."""

    full_sweep: bool
    step: int = 2
    min_conc: int | None = None
    max_conc: int | None = None
    max_tp: int | None = None
    max_ep: int | None = None
    conc: frozenset[int] | None = None
    seq_lens: frozenset[str] | None = None
    scenario_types: frozenset[str] | None = None
    runner_node_filter: str | None = None


# ----------------------------------------------------------------------------------------------
# key resolution


def resolve_keys(catalog: Catalog, patterns: Sequence[str]) -> list[str]:
    """Config keys for ``patterns`` (fnmatch globs when they hold ``*``/``?``), deduplicated in order.

    Every pattern that matches nothing is reported in one InfxError.
    """
    keys = list(catalog.entries)
    out: list[str] = []
    seen: set[str] = set()
    missing: list[str] = []
    for pat in patterns:
        if "*" in pat or "?" in pat or "[" in pat:
            hits = [k for k in keys if fnmatch.fnmatchcase(k, pat)]
        else:
            hits = [pat] if pat in catalog.entries else []
        if not hits:
            missing.append(pat)
        for k in hits:
            if k not in seen:
                seen.add(k)
                out.append(k)
    if missing:
        shown = ", ".join(keys[:20]) + (f", ... ({len(keys)} keys)" if len(keys) > 20 else "")
        raise InfxError(Diagnostic(
            f"config key(s) not found: {', '.join(missing)}. Available keys: {shown}"
        ))
    return out


# ----------------------------------------------------------------------------------------------
# row building


def _base(e: MasterEntry, runner: str) -> dict[str, Any]:
    return {
        "image": e.image, "model": e.model, "model-prefix": e.model_prefix,
        "precision": e.precision, "framework": e.framework, "runner": runner,
    }


def _component(c: Any) -> dict[str, Any] | None:
    if c is None:
        return None
    return {"name": c.name, "version": c.version} if c.version is not None else {"name": c.name}


def _runner_list(label: str, runners: RunnerConfig, opts: _Opts) -> list[str]:
    f = opts.runner_node_filter
    if not f:
        return [label]
    nodes = [n for n in runners.labels.get(label, ()) if f in n]
    if not opts.full_sweep and f in label:
        nodes = [label] + nodes
    return list(dict.fromkeys(nodes))


def _worker_exp(w: Any) -> str:
    s = f"{w.num_worker}x{w.tp}"
    if w.ep is not None and w.ep > 1:
        s += f"ep{w.ep}"
    if w.dp_attn:
        s += "dpa"
    return s


def _hardware(runners: RunnerConfig, runner: str, field: str) -> Any:
    hw = runners.hardware.get(runner)
    if hw is None:
        avail = ", ".join(runners.hardware) or "(none)"
        raise DramBudgetError(
            f"Runner '{runner}' requires '{field}' in runner hardware metadata. Available hardware keys: {avail}"
        )
    return hw


def _entry_rows(key: str, e: MasterEntry, runners: RunnerConfig, opts: _Opts) -> list[Gen]:
    out: list[Gen] = []
    prefix = e.model_prefix
    want = opts.scenario_types
    runner_names = _runner_list(e.runner, runners, opts)
    if not runner_names:
        return out
    top_p2p = getattr(e, "kv_p2p_transfer", None)
    if want is None or "fixed-seq-len" in want:
        for item in e.scenarios.fixed_seq_len:
            seq = seq_name(item.isl, item.osl)
            if opts.seq_lens is not None and seq not in opts.seq_lens:
                continue
            mml = item.isl + item.osl + 256
            exp = f"{prefix}_{seq}"
            for ss in item.search_space:
                router = _component(ss.router or e.router)
                if not e.multinode:
                    out.extend(_fixed_sn(key, e, ss, item.isl, item.osl, mml, exp, router, runner_names, opts))
                    continue
                mn = cast("MultiNodeSearchSpaceEntry", ss)  # a multinode entry's search space
                concs = _entry_concs(list_concs, mn, opts)
                if not concs:
                    continue
                p2p = mn.kv_p2p_transfer or top_p2p
                for runner in runner_names:
                    row = _base(e, runner)
                    row.update({
                        "isl": item.isl, "osl": item.osl, "spec-decoding": mn.spec_decoding,
                        "prefill": mn.prefill.row_dict(), "decode": mn.decode.row_dict(),
                        "conc": list(concs), "max-model-len": mml, "exp-name": exp,
                        "disagg": e.disagg, "run-eval": False,
                    })
                    if router is not None:
                        row["router"] = router
                    if p2p is not None:
                        row["kv-p2p-transfer"] = p2p
                    out.append(Gen(key, "fixed-mn", row))
    if want is None or "agentic-coding" in want:
        for ag in e.scenarios.agentic_coding:
            for ag_ss in ag.search_space:
                out.extend(_agentic(key, e, ag, ag_ss, runners, runner_names, opts, top_p2p))
    return out


def _entry_concs(expand: Callable[..., list[int]], ss: Any, opts: _Opts, **sweep_kw: Any) -> list[int]:
    """A search-space entry's concurrencies by ``expand`` (``fixed_concs``/``list_concs``): in a
    full sweep with its step and min/max filters (plus ``sweep_kw``), otherwise as configured and
    narrowed to ``--conc`` (which a full sweep never sets)."""
    if opts.full_sweep:
        return expand(ss.conc_start, ss.conc_end, ss.conc_list, step=opts.step,
                      min_conc=opts.min_conc, max_conc=opts.max_conc, **sweep_kw)
    concs = expand(ss.conc_start, ss.conc_end, ss.conc_list)
    if opts.conc is not None:
        concs = [c for c in concs if c in opts.conc]
    return concs


def _fixed_sn(key: str, e: Any, ss: Any, isl: int, osl: int, mml: int, exp: str,
              router: dict[str, Any] | None, runner_names: list[str], opts: _Opts) -> list[Gen]:
    ep = ss.ep if ss.ep is not None else 1
    if opts.full_sweep:
        if opts.max_tp is not None and ss.tp > opts.max_tp:
            return []
        if opts.max_ep is not None and ep > opts.max_ep:
            ep = opts.max_ep
    concs = _entry_concs(fixed_concs, ss, opts)
    out = []
    for c in concs:
        for runner in runner_names:
            row = _base(e, runner)
            row.update({
                "isl": isl, "osl": osl, "tp": ss.tp, "pp": ss.pp, "dcp-size": ss.dcp_size,
                "pcp-size": ss.pcp_size, "conc": c, "max-model-len": mml, "ep": ep,
                "dp-attn": bool(ss.dp_attn), "spec-decoding": ss.spec_decoding, "exp-name": exp,
                "disagg": False, "run-eval": False,
            })
            if router is not None:
                row["router"] = router
            out.append(Gen(key, "fixed-sn", row))
    return out


def _agentic(key: str, e: Any, ag: Any, ss: Any, runners: RunnerConfig, runner_names: list[str],
             opts: _Opts, top_p2p: str | None) -> list[Gen]:
    concs = _entry_concs(list_concs, ss, opts, fabricate=False)
    if not concs:
        return []
    backend = _component(ss.kv_offload_backend)
    router = _component(ss.router or e.router)
    kv = ss.kv_offloading or "none"
    kv_tag = f"kv{kv}-{backend['name']}" if kv != "none" and backend else f"kv{kv}"
    out: list[Gen] = []
    if ss.tp is not None:  # single-node topology
        gb = 0
        if kv == "dram":
            hw = _hardware(runners, e.runner, "available-cpu-dram-mib")
            gpus = single_node_gpus(ss.tp, ss.pp, ss.pcp_size, hw.gpus_per_node, e.runner)
            gb = dram_budget_gb(hw.available_cpu_dram_mib, hw.gpus_per_node, ag.dram_utilization, gpus)
        spec = "" if ss.spec_decoding == "none" else f"_spec-{ss.spec_decoding}"
        for c in concs:
            for runner in runner_names:
                row = _base(e, runner)
                row.update({
                    "tp": ss.tp, "pp": ss.pp, "dcp-size": ss.dcp_size, "pcp-size": ss.pcp_size,
                    "ep": ss.ep if ss.ep is not None else 1, "dp-attn": bool(ss.dp_attn),
                    "spec-decoding": ss.spec_decoding, "conc": c, "kv-offloading": kv,
                    "total-cpu-dram-gb": gb, "duration": DEFAULT_AGENTIC_DURATION_SECONDS,
                    "exp-name": f"{e.model_prefix}_tp{ss.tp}_conc{c}_{kv_tag}{spec}",
                    "scenario-type": "agentic-coding",
                })
                if backend is not None:
                    row["kv-offload-backend"] = backend
                if router is not None:
                    row["router"] = router
                out.append(Gen(key, "agentic-sn", row))
        return out
    gb = 0
    if kv == "dram":
        hw = _hardware(runners, e.runner, "available-cpu-dram-mib")
        gpus = worker_gpus_per_node(ss.prefill.gpus_per_replica, hw.gpus_per_node, e.runner)
        gb = dram_budget_gb(hw.available_cpu_dram_mib, hw.gpus_per_node, ag.dram_utilization, gpus)
    topo = f"{e.model_prefix}_p{_worker_exp(ss.prefill)}_d{_worker_exp(ss.decode)}"
    p2p = ss.kv_p2p_transfer or top_p2p
    prefill, decode = ss.prefill.row_dict(), ss.decode.row_dict()
    for c in concs:
        for runner in runner_names:
            row = _base(e, runner)
            row.update({
                "spec-decoding": ss.spec_decoding, "prefill": dict(prefill), "decode": dict(decode),
                "conc": [c], "kv-offloading": kv, "total-cpu-dram-gb": gb,
                "duration": DEFAULT_AGENTIC_DURATION_SECONDS,
                "exp-name": f"{topo}_conc{c}" + (f"_{kv_tag}" if kv != "none" else ""),
                "disagg": e.disagg, "scenario-type": "agentic-coding",
            })
            if backend is not None:
                row["kv-offload-backend"] = backend
            if router is not None:
                row["router"] = router
            if p2p is not None:
                row["kv-p2p-transfer"] = p2p
            out.append(Gen(key, "agentic-mn", row))
    return out


def _generate(catalog: Catalog, runners: RunnerConfig, keys: Iterable[str], opts: _Opts) -> list[Gen]:
    gens: list[Gen] = []
    for key in keys:
        try:
            gens.extend(_entry_rows(key, catalog.entries[key], runners, opts))
        except DramBudgetError as exc:
            raise InfxError(catalog.diag(key, str(exc))) from None
    return gens


def _finish(gens: list[Gen], evals: str, on_warning: Callable[[str], None] | None) -> list[dict[str, Any]]:
    if evals not in EVAL_MODES:
        raise InfxError(f"unknown eval mode '{evals}' (expected one of {', '.join(EVAL_MODES)})")
    if evals != "none":
        orphans = mark_evals(gens, include_agentic=evals in ("evals-only", "all"))
        if evals == "all":
            gens = mark_all_evals(gens)
        if evals in ("evals-only", "all"):
            gens = [g for g in gens if g.row.get("run-eval")]
            for g in gens:
                g.row["eval-only"] = True
        if orphans:
            _warn(on_warning, list_message(f"{len(orphans)} topology arm(s) have no eval-eligible point (evals need "
                                           "8k1k rows, or multinode agentic rows, with conc >= 16)", orphans))
    rows = []
    for g in gens:
        g.row["point-id"] = point_id(g.row, g.key)
        rows.append(g.row)
    return rows


def _warn(on_warning: Callable[[str], None] | None, message: str) -> None:
    if on_warning is not None:
        on_warning(message)
    else:
        print(str(Diagnostic(message, severity="warning")), file=sys.stderr)


# ----------------------------------------------------------------------------------------------
# public API


def test_config_rows(
    catalog: Catalog,
    runners: RunnerConfig,
    config_keys: Sequence[str],
    *,
    evals: EvalMode | str = "default",
    conc: Iterable[int] | None = None,
    seq_lens: Iterable[str] | None = None,
    scenario_types: Iterable[str] | None = None,
    runner_node_filter: str | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows for the named config keys (globs allowed), exactly as ``test-config`` emits them."""
    keys = resolve_keys(catalog, config_keys)
    opts = _Opts(
        full_sweep=False,
        conc=frozenset(conc) if conc is not None else None,
        seq_lens=frozenset(seq_lens) if seq_lens is not None else None,
        scenario_types=_check_scenarios(scenario_types),
        runner_node_filter=runner_node_filter,
    )
    return _finish(_generate(catalog, runners, keys, opts), evals, on_warning)


test_config_rows.__test__ = False  # type: ignore[attr-defined]  # not a pytest test despite its name


def full_sweep_rows(
    catalog: Catalog,
    runners: RunnerConfig,
    *,
    evals: EvalMode | str = "default",
    model_prefix: Iterable[str] | None = None,
    precision: Iterable[str] | None = None,
    framework: Iterable[str] | None = None,
    runner_type: Iterable[str] | None = None,
    seq_lens: Iterable[str] | None = None,
    step_size: int = 2,
    min_conc: int | None = None,
    max_conc: int | None = None,
    max_tp: int | None = None,
    max_ep: int | None = None,
    single_node: bool = False,
    multi_node: bool = False,
    scenario_types: Iterable[str] | None = None,
    runner_node_filter: str | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows for every (filtered) catalog entry, exactly as ``full-sweep`` emits them."""
    problems = []
    if step_size <= 1:
        problems.append(f"--step-size must be > 1, got {step_size}")
    if min_conc is not None and max_conc is not None and min_conc > max_conc:
        problems.append(f"--min-conc ({min_conc}) must be <= --max-conc ({max_conc})")
    for name, val in (("--min-conc", min_conc), ("--max-conc", max_conc), ("--max-tp", max_tp), ("--max-ep", max_ep)):
        if val is not None and val <= 0:
            problems.append(f"{name} must be > 0, got {val}")
    rtypes = list(runner_type) if runner_type is not None else None
    if rtypes is not None:
        bad = sorted(set(rtypes) - set(runners.labels))
        if bad:
            problems.append(f"Invalid runner type(s): {{{', '.join(bad)}}}. Valid runner types are: "
                            f"{', '.join(sorted(runners.labels))}")
    if problems:
        raise InfxError([Diagnostic(p) for p in problems])
    prefixes = tuple(model_prefix) if model_prefix is not None else None
    precs = set(precision) if precision is not None else None
    fws = set(framework) if framework is not None else None
    both = single_node == multi_node
    keys = []
    for key, e in catalog.entries.items():
        if prefixes is not None and not key.startswith(prefixes):
            continue
        if precs is not None and e.precision not in precs:
            continue
        if fws is not None and e.framework not in fws:
            continue
        if rtypes is not None and e.runner not in rtypes:
            continue
        if not both and e.multinode != multi_node:
            continue
        keys.append(key)
    opts = _Opts(
        full_sweep=True, step=step_size, min_conc=min_conc, max_conc=max_conc, max_tp=max_tp, max_ep=max_ep,
        seq_lens=frozenset(seq_lens) if seq_lens is not None else None,
        scenario_types=_check_scenarios(scenario_types), runner_node_filter=runner_node_filter,
    )
    return _finish(_generate(catalog, runners, keys, opts), evals, on_warning)


def _check_scenarios(scenario_types: Iterable[str] | None) -> frozenset[str] | None:
    if scenario_types is None:
        return None
    st = frozenset(scenario_types)
    bad = sorted(st - set(SCENARIO_TYPES))
    if bad:
        raise InfxError(f"unknown scenario type(s): {', '.join(bad)} (expected {', '.join(SCENARIO_TYPES)})")
    return st


if __name__ == "__main__":  # `python -m infx.matrix.generate`: its command line is infx.matrix.generate_cli
    from infx.matrix.generate_cli import main

    main()
