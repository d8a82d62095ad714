"""Which store a command uses (--store > INFX_STORE_URL > infx.toml [store] url > RESULTS/infx.db), how URLs are
read, and that a password never shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.results.store.url import mask, parse, resolve, scrub


@pytest.mark.parametrize(("text", "kind", "path", "display"), [
    ("results/infx.db", "sqlite", "results/infx.db", "results/infx.db"),
    ("sqlite:///rel/x.db", "sqlite", "rel/x.db", "rel/x.db"),
    ("sqlite:////abs/x.db", "sqlite", "/abs/x.db", "/abs/x.db"),
    ("postgres://bench@db:5432/infx", "postgresql", None, "postgresql://bench@db:5432/infx"),
    ("postgresql+psycopg://db/infx?sslmode=require", "postgresql", None, "postgresql://db/infx?sslmode=require"),
    ("postgresql://bench:s3cret@db/infx", "postgresql", None, "postgresql://bench:***@db/infx"),
])
def test_urls_are_read_and_shown_without_their_password(text: str, kind: str, path: str | None, display: str) -> None:
    url = parse(text)
    assert (url.kind, None if url.path is None else str(url.path), url.display) == (kind, path, display)
    assert "s3cret" not in url.display and "s3cret" not in str(url)
    if kind == "postgresql":
        assert url.sqlalchemy_url.startswith("postgresql+psycopg://")


@pytest.mark.parametrize(("text", "why"), [
    ("mysql://u:pw@h/db", "unsupported store URL scheme"),
    ("postgresql://u@h:99999/db", "bad port"),
    ("postgresql://u@h", "names no database"),
    ("sqlite://", "expected sqlite:///PATH"),
    ("", "empty store URL"),
])
def test_bad_urls_are_one_line_without_the_password(text: str, why: str) -> None:
    with pytest.raises(InfxError, match=why) as got:
        parse(text)
    assert "pw" not in str(got.value).replace("postgresql", "")


def test_a_driver_message_is_scrubbed_of_the_password() -> None:
    url = parse("postgresql://u:hunter2@h/db")
    assert scrub("failed for postgresql://u:hunter2@h/db (hunter2)", url) == "failed for postgresql://u:***@h/db (***)"
    assert mask("postgresql://u:x@[::1]:5/d") == "postgresql://u:***@[::1]:5/d"


def test_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    monkeypatch.delenv("INFX_WORKSPACE", raising=False)
    results = ws / "results"
    assert resolve(None, results).path == results / "infx.db"
    assert resolve(None, results).found_by == "results directory"
    (ws / "infx.toml").write_text('[store]\nurl = "postgresql://team@db/infx"\n')
    assert (resolve(None, results).display, resolve(None, results).found_by) == ("postgresql://team@db/infx",
                                                                                 "infx.toml")
    monkeypatch.setenv("INFX_STORE_URL", str(tmp_path / "env.db"))
    assert (resolve(None, results).path, resolve(None, results).found_by) == (tmp_path / "env.db", "INFX_STORE_URL")
    assert resolve("postgresql://cli@db/x", results).display == "postgresql://cli@db/x"
    (ws / "infx.toml").write_text('[store]\nurl = 3\n')
    monkeypatch.delenv("INFX_STORE_URL")
    with pytest.raises(InfxError, match="infx.toml"):
        resolve(None, results)
