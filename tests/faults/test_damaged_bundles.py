"""A damaged result bundle is never silently accepted: status, report, compare, export and ingest each name the
file (and where the damage is inside it), and skip the point (ingest quarantines it); none shows it as measured."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx.cli import _register_all, app
from tests.interop.helpers import fixed_point, write_run

_register_all()


def _not_json(f: Path) -> None:
    f.write_text("{not json")


def _a_list(f: Path) -> None:
    f.write_text("[]")


def _bad_field(f: Path) -> None:
    d = json.loads(f.read_text())
    d["metrics"]["issued"] = "many"
    f.write_text(json.dumps(d))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("damage", [_not_json, _a_list, _bad_field], ids=["not-json", "list", "bad-field"])
def test_every_reader_names_the_damaged_file(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    write_run(tmp_path, "r1", [fixed_point(4, 8), fixed_point(4, 16)])
    bad = next(tmp_path.glob("r1/points/*conc8*/result.json"))
    damage(bad)
    for argv in (["status", str(tmp_path)], ["report", str(tmp_path), "-o", str(tmp_path / "r.html")],
                 ["export", str(tmp_path), "-o", str(tmp_path / "x")], ["ingest", str(tmp_path)]):
        r = CliRunner().invoke(app, argv)
        assert r.exception is None or isinstance(r.exception, SystemExit), (argv, r.exception)
        assert "Traceback" not in r.stderr
        named = [ln for ln in r.stderr.splitlines() if ln.startswith(f"{bad}:")]
        assert named, (argv[0], r.stderr)
    r = CliRunner().invoke(app, ["status", str(tmp_path), "--json"])
    states = {p["point_id"]: p["state"] for run in json.loads(r.stdout) for p in run["points"]}
    assert sorted(states.values()) == ["damaged", "done"]
