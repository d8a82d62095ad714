"""Receipts: every member hashed; tampering (a changed byte, an added file, a member replaced by a symlink, a
missing member, an edited payload) fails `infx verify` and ingest, naming the member."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from infx.results.receipt import RECEIPT_FILE, canonical_json, read_receipt, verify_point_dir
from infx.results.store import Store
from tests.repro.helpers import REPO, bundle, demo_point, point_dir, render


def infx(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "infx", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.fixture
def bundled(tmp_path: Path) -> Path:
    p = demo_point()
    return bundle(tmp_path / "results", "run1", p, render(p))


def test_receipt_lists_every_member_and_verifies(bundled: Path) -> None:
    r = read_receipt(bundled)
    names = [m.path for m in r.members]
    assert names == sorted(["engine.log", "engine_state.jsonl", "point.json", "records.jsonl.gz", "result.json",
                            "status.json"])
    for m in r.members:
        assert m.size == (bundled / m.path).stat().st_size
    assert r.payload_sha256 and len(r.receipt_id) == 64
    assert json.loads(canonical_json(r.payload)) == r.payload
    assert verify_point_dir(bundled).ok


def _flip_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("tamper,kind,member", [
    ("byte", "changed", "records.jsonl.gz"),
    ("add", "extra", "notes.txt"),
    ("symlink", "symlink", "engine.log"),
    ("remove", "missing", "result.json"),
    ("payload", "changed", "receipt.json"),
])
def test_tampering_fails_verify_and_ingest_naming_the_member(bundled: Path, tamper: str, kind: str,
                                                             member: str) -> None:
    if tamper == "byte":
        _flip_one_byte(bundled / member)
        # one flipped byte in the middle also breaks the gzip stream: its CRC, or the deflate data itself
        with pytest.raises((gzip.BadGzipFile, zlib.error, EOFError)):
            gzip.decompress((bundled / member).read_bytes())
    elif tamper == "add":
        (bundled / member).write_text("added later\n")
    elif tamper == "symlink":
        real = bundled.parent / "elsewhere.log"
        (bundled / member).rename(real)
        (bundled / member).symlink_to(real)  # same bytes, but no longer the bundle's own file
    elif tamper == "remove":
        (bundled / member).unlink()
    else:
        data = json.loads((bundled / RECEIPT_FILE).read_text())
        data["payload"]["load"]["seed"] = 8
        (bundled / RECEIPT_FILE).write_text(json.dumps(data))
    v = verify_point_dir(bundled)
    assert not v.ok
    assert any(p.kind == kind and p.member == member for p in v.problems), v.problems

    results = bundled.parents[2]
    with Store(results / "infx.db") as st:
        rep = st.ingest_dir(results)
    assert rep.ingested == 0 and rep.skipped == 1
    assert len(rep.problems) == 1 and member in rep.problems[0].message and kind in rep.problems[0].message

    cli = infx("verify", str(bundled))
    assert cli.returncode == 1
    assert f"{kind}: {member}" in cli.stderr


def test_point_without_receipt_still_ingests_and_verify_names_it(tmp_path: Path) -> None:
    p = demo_point()
    d = point_dir(tmp_path / "results", "old", p)  # written the way results were before bundles
    with Store(tmp_path / "results" / "infx.db") as st:
        rep = st.ingest_dir(tmp_path / "results")
    assert rep.ingested == 1 and not rep.problems
    cli = infx("verify", str(tmp_path / "results"))
    assert cli.returncode == 1 and "NO RECEIPT old/" in cli.stderr
    assert d.is_dir()


def test_verify_accepts_results_run_point_and_receipt_and_rejects_bad_input(bundled: Path, tmp_path: Path) -> None:
    run = bundled.parents[1]
    for target in (run.parent, run, bundled, bundled / RECEIPT_FILE):
        r = infx("verify", str(target))
        assert r.returncode == 0, (target, r.stderr)
        assert "1 point(s) ok, 0 failed" in r.stderr
    with Store(run.parent / "infx.db") as st:
        assert st.ingest_dir(run.parent).ingested == 1  # a verified point ingests
    assert infx("verify", str(tmp_path / "nope")).returncode == 2
    (tmp_path / "empty").mkdir()
    bad = infx("verify", str(tmp_path / "empty"))
    assert bad.returncode == 2 and "not a results directory" in bad.stderr and "Traceback" not in bad.stderr


def test_repro_refuses_a_tampered_bundle_and_a_non_bundle(bundled: Path, tmp_path: Path) -> None:
    """Nothing is launched: the bundle is verified before any run directory exists."""
    (bundled / "engine.log").write_text("edited\n")
    r = infx("repro", str(bundled), "--results", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 2 and "refusing to rerun" in r.stderr and "changed: engine.log" in r.stderr
    assert not (tmp_path / "out").exists()
    (tmp_path / "plain").mkdir()
    r = infx("repro", str(tmp_path / "plain"), cwd=tmp_path)
    assert r.returncode == 2 and "not a bundle" in r.stderr and "Traceback" not in r.stderr
    r = infx("repro", str(bundled), "--trials", "0", cwd=tmp_path)
    assert r.returncode == 2 and "--trials" in r.stderr
