"""What infx makes of a results directory, as text to compare byte for byte: the InferenceX export
(``infx export --format inferencex``), the store's figures read back through the report's data API
(``load_report_data``: per point throughput per GPU, node and server, interactivity, latencies, the
95 % intervals, energy per token, the telemetry row and window) and ``infx compare --json``.

Read through commands and functions, never SQL, so the comparison holds whatever the store is made of.
``tests/fixtures/golden_results/make_golden.py`` wrote ``expected/`` with this function at ce04c15."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

COMPARE = ("synthetic", "tp=2", "tp=4")  # the synthetic run's arms


def _app() -> Any:
    import typer

    from infx.interop.cli import register as register_interop
    from infx.report.cli import register as register_show
    from infx.results.cli import register as register_store

    app = typer.Typer()
    register_store(app)
    register_show(app)
    register_interop(app)
    return app


def _invoke(app: Any, args: list[str]) -> str:
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return str(res.stdout)


def _text(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, allow_nan=False) + "\n"


def _fields(key: Any) -> dict[str, Any]:
    """A workload's, arm's or point line's fields by name (dataclasses at ce04c15, NamedTuples since the store's
    typed reads)."""
    return key._asdict() if hasattr(key, "_asdict") else dataclasses.asdict(key)


#: Fields a measured point gained after ce04c15 that are no figure of it: ``source_run`` names the run a
#: point of a latest/as-of view came from (None for a run's own points); the speculative-decoding acceptance
#: (store revision 0010) is None for every result written before it.
_NOT_FIGURES = frozenset({"source_run", "acceptance", "synthetic_al", "acceptance_length"})


def _measured(m: Any) -> dict[str, Any]:
    from infx.metrics.cipack import CI_KEYS

    out: dict[str, Any] = {}
    for f in dataclasses.fields(m):
        if f.name in _NOT_FIGURES:
            continue
        value = getattr(m, f.name)
        if f.name == "figures" and hasattr(value, "_asdict"):  # since the store's typed reads: the figures
            out.update(value._asdict())  # of a point are one NamedTuple; at ce04c15 they were its fields
        else:
            out[f.name] = value
    out["workload"] = _fields(m.workload)
    out["arm"] = _fields(m.arm)
    out["ci"] = None if m.ci is None else m.ci.hex()
    out["per"] = {f"{metric}/{norm}": m.throughput(metric, norm)
                  for metric in ("total", "output", "energy") for norm in ("gpu", "node", "server")}
    est = {k: m.estimate(k) for k in (*CI_KEYS, "output_tok_per_j")}
    out["estimates"] = {k: None if e is None else e.model_dump(mode="json") for k, e in est.items()}
    return out


def _report(data: Any) -> dict[str, Any]:
    return {
        "measured": [_measured(m) for m in data.measured],
        "points": [{k: v for k, v in _fields(p).items() if k != "measured"} for p in data.points],
        "telemetry": [{"point_id": t.point_id, "conc": t.conc, "window": t.window, "figures": t.figures,
                       "energy_ci": None if t.energy_ci is None else t.energy_ci.model_dump(mode="json")}
                      for t in data.telemetry],
        "notes": data.notes,
    }


def observe(results: Path, work: Path) -> dict[str, str]:
    """File name -> text: ``export.json`` (every exported file's path and text), ``report-RUN.json`` per run,
    ``compare.json``. ``results`` is copied into ``work`` first (ingest writes the store beside it)."""
    from infx.report.data import load_report_data
    from infx.results.store import Store

    root = work / "results"
    shutil.copytree(results, root)
    app = _app()
    _invoke(app, ["ingest", str(root)])
    _invoke(app, ["export", str(root), "-o", str(work / "export")])
    exported = {p.relative_to(work / "export").as_posix(): p.read_text(encoding="utf-8")
                for p in sorted((work / "export").rglob("*")) if p.is_file()}
    out = {"export.json": _text(exported)}
    with Store(root / "infx.db", readonly=True) as store:
        for run in store.measured_run_ids():
            out[f"report-{run}.json"] = _text(_report(load_report_data(store, run, results_root=root)))
    run, a, b = COMPARE
    out["compare.json"] = _invoke(app, ["compare", str(root), "--run", run, "-a", a, "-b", b, "--json"])
    return out
