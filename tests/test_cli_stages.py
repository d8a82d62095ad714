"""``infx`` attaches every stage's commands; a stage module that cannot load is an error naming it, never a
command that silently goes missing."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import typer

import infx.cli as cli


def _fresh_app(monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    app = typer.Typer(add_completion=False)

    @app.callback()
    def _root() -> None:
        pass

    monkeypatch.setattr(cli, "app", app)
    return app


def test_every_stage_attaches_its_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _fresh_app(monkeypatch)
    cli._register_all()
    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    assert {"workspace", "init", "validate", "matrix", "plan", "engine", "preflight", "cards", "bench", "traces",
            "run", "run-group", "run-point", "status", "repro", "changelog", "eval", "ingest", "compare", "report",
            "serve", "cost", "export", "verify", "diff-env", "demo"} <= names


@pytest.mark.parametrize(("module", "body", "says"), [
    ("infx.sweep.clii", None, "cannot load the commands of infx.sweep.clii: ModuleNotFoundError"),
    ("infx_broken_stage", "import infx.no_such_stage\n", "cannot load the commands of infx_broken_stage: "
                                                           "ModuleNotFoundError: No module named 'infx.no_such_stage'"),
    ("infx_raising_stage", "raise RuntimeError('bug at import')\n", "RuntimeError: bug at import"),
    ("infx_no_register", "X = 1\n", "infx_no_register has no register(app)"),
])
def test_a_stage_that_cannot_load_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: str,
                                              body: str | None, says: str) -> None:
    if body is not None:
        (tmp_path / f"{module}.py").write_text(body)
        monkeypatch.syspath_prepend(str(tmp_path))
    _fresh_app(monkeypatch)
    with pytest.raises(cli.StageLoadError, match=re.escape(says)):
        cli._register_all(["infx.workspace_cli", module])


def test_infx_stops_with_one_line_naming_the_stage(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _fresh_app(monkeypatch)
    monkeypatch.setattr(cli, "_STAGE_CLIS", (*cli._STAGE_CLIS, "infx.sweep.clii"))
    monkeypatch.setattr(sys, "argv", ["infx", "--help"])
    with pytest.raises(SystemExit) as info:
        cli.main()
    err = capsys.readouterr().err
    assert info.value.code == cli.EXIT_BROKEN_STAGE == 1
    assert err.splitlines() == ["error: cannot load the commands of infx.sweep.clii: ModuleNotFoundError: "
                                "No module named 'infx.sweep.clii'"]


def test_start_up_imports_no_pydantic_and_no_request_model() -> None:
    """``infx --help`` attaches every command without importing pydantic: command modules name their request
    models lazily (``cli_options.ModelDefault``), so start-up stays quick."""
    import json
    import subprocess

    code = ("import json, sys, infx.cli as c\n"
            "sys.argv = ['infx', '--help']\n"
            "try:\n    c.main()\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m == 'pydantic' or m.startswith('infx.'))))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    loaded = set(json.loads(r.stdout.strip().splitlines()[-1]))  # printed last (the help text comes first)
    assert "pydantic" not in loaded
    assert {"infx.results.cli", "infx.report.cli", "infx.report.costcli", "infx.interop.cli"} <= loaded
    assert not loaded & {"infx.results.ingestion", "infx.report.comparison", "infx.report.build",
                         "infx.report.server", "infx.report.costexport", "infx.interop.export"}
