"""``infx verify`` and ``infx diff-env`` (``infx repro`` reruns a point, so it lives with the sweep:
:mod:`infx.sweep.rerun`)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import typer

from infx.diagnostics import exit_on_error

EXIT_FAILED = 1


@dataclass
class VerifyReport:
    ok: list[str] = field(default_factory=list)
    failed: dict[str, list[str]] = field(default_factory=dict)  # "run/point" -> problems
    no_receipt: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failed and not self.no_receipt


def point_dirs(path: str | Path) -> list[tuple[str, Path]]:
    """``(label, point directory)`` for a results directory, a run directory, a point directory or bundle
    copy, or a ``receipt.json``; InfxError (exit 2) for anything else."""
    from infx.diagnostics import Diagnostic, InfxError
    from infx.results.layout import MANIFEST, POINT_FILE, POINTS, ResultsDir
    from infx.results.receipt import RECEIPT_FILE

    p = Path(path)
    if p.is_file() and p.name == RECEIPT_FILE:
        return [(p.parent.name, p.parent)]
    if not p.is_dir():
        raise InfxError(Diagnostic("no such results directory, run, point or bundle", str(p)))
    if (p / RECEIPT_FILE).exists() or (p / POINT_FILE).is_file():
        return [(p.name, p)]
    if (p / MANIFEST).is_file():
        run = ResultsDir(p.parent)
        return [(f"{p.name}/{pid}", run.point_dir(p.name, pid)) for pid in run.points(p.name)]
    results = ResultsDir(p)
    runs = results.runs()
    if not runs and not (p / POINTS).is_dir():
        raise InfxError(Diagnostic("not a results directory, run directory, point directory or bundle "
                                   "(no manifest.json, point.json or receipt.json)", str(p)))
    return [(f"{r}/{pid}", results.point_dir(r, pid)) for r in runs for pid in results.points(r)]


def verify_path(path: str | Path) -> VerifyReport:
    """Verify every point under ``path``. A point without a receipt counts only when it holds a measurement
    (``result.json`` or ``records.jsonl.gz``): gate rejects, launches that failed and points behind an engine
    that died before them measured nothing, and a point in progress is not finished."""
    from infx.results.layout import RECORDS_FILE, RESULT_FILE, STATUS_FILE
    from infx.results.receipt import has_receipt, verify_point_dir

    rep = VerifyReport()
    for label, d in point_dirs(path):
        if not has_receipt(d):
            measured = (d / RESULT_FILE).exists() or (d / RECORDS_FILE).exists()
            if measured and (d / STATUS_FILE).exists():
                rep.no_receipt.append(label)
            continue
        v = verify_point_dir(d)
        if v.ok:
            rep.ok.append(label)
        else:
            rep.failed[label] = [str(p) for p in v.problems]
    return rep


@exit_on_error
def verify_cmd(
    path: Path = typer.Argument(..., help="A results directory, a run directory, a point directory (bundle) "
                                "or its receipt.json."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Recompute every digest of the point receipts under PATH: names each missing, extra, changed or
    symlinked member. Exit 1 when a point fails or a measured point has no receipt."""
    rep = verify_path(path)
    if as_json:
        print(json.dumps({"ok": rep.ok, "failed": rep.failed, "no_receipt": rep.no_receipt}, indent=2))
    else:
        for label, problems in rep.failed.items():
            print(f"FAIL {label}: {'; '.join(problems)}", file=sys.stderr)
        for label in rep.no_receipt:
            print(f"NO RECEIPT {label}: measured before bundles, or its bundle was not written",
                  file=sys.stderr)
        print(f"verify: {len(rep.ok)} point(s) ok, {len(rep.failed)} failed, {len(rep.no_receipt)} without a "
              "receipt", file=sys.stderr)
    raise typer.Exit(0 if rep.passed else EXIT_FAILED)


@exit_on_error
def diff_env_cmd(
    a: Path = typer.Argument(..., help="Point directory, bundle copy or receipt.json (A)."),
    b: Path = typer.Argument(..., help="Point directory, bundle copy or receipt.json (B)."),
    as_json: bool = typer.Option(False, "--json", help="Print the differences as JSON."),
) -> None:
    """What differs between two points' bundles, grouped: versions, bench script and lib hashes, argv, env,
    image, hardware, load, inputs, point, workspace."""
    from infx.repro.diffenv import GROUPS, diff_env, load_payload

    diffs = diff_env(load_payload(a), load_payload(b))
    if as_json:
        print(json.dumps([d.model_dump(mode="json") for d in diffs], indent=2))
        return
    for group in GROUPS:
        mine = [d for d in diffs if d.group == group]
        if not mine:
            continue
        print(f"{group}:")
        for d in mine:
            print(f"  {d.key}: {_show(d.a)} -> {_show(d.b)}")
    print(f"{len(diffs)} difference(s)" if diffs else "no differences", file=sys.stderr)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify_cmd)
    app.command("diff-env")(diff_env_cmd)


def _show(v: object) -> str:
    return "(absent)" if v is None else str(v)
