"""Which rows a change to InferenceX bench scripts selects: those whose script (by the launchers'
rule, at the head revision) or ``benchmark_lib.sh`` differs between the base and head revisions.

The blob ids come from ``git ls-tree`` at each revision, so nothing is checked out and no script
runs: a row's rendered launch carries the script's and the lib's content hashes in its fingerprint
(``infx.engines.scripts``), so an edit of one script changes exactly the launches of its rows.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from infx.diagnostics import Diagnostic, InfxError
from infx.engines.scripts.locate import locate_script
from infx.matrix.buckets import Row
from infx.matrix.point import Point


def tree_blobs(repo: Path, rev: str, directory: str = "benchmarks") -> dict[str, str]:
    """path -> blob id of every file under ``directory`` at ``rev`` (empty when it has none)."""
    proc = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-z", rev, "--", directory],
                          capture_output=True)
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip()
        raise InfxError(Diagnostic(f"git ls-tree {rev} -- {directory} failed: {why}"))
    out: dict[str, str] = {}
    for item in proc.stdout.split(b"\0"):
        if not item:
            continue
        meta, _, path = item.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob":
            out[path.decode()] = parts[2].decode()
    return out


def script_of(row: Row, blobs: dict[str, str], benchmarks: str = "benchmarks") -> str | None:
    if "prefill" in row:
        return None
    lookup = locate_script(Point.from_row(row), Path("."), benchmarks, exists=blobs.__contains__)
    return lookup.path if lookup is not None else None


def _blob_sha256(repo: Path, rev: str, path: str) -> str:
    import hashlib

    proc = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", f"{rev}:{path}"], capture_output=True)
    return hashlib.sha256(proc.stdout if proc.returncode == 0 else b"").hexdigest()


def launch_hashes(repo: Path, head: str, rows: list[Row], benchmarks: str = "benchmarks") -> list[dict[str, str]]:
    """Per row: point-id, script, and the sha256 of the script and of benchmark_lib.sh at ``head``."""
    blobs = tree_blobs(repo, head, benchmarks)
    lib = f"{benchmarks}/benchmark_lib.sh"
    memo: dict[str, str] = {}

    def sha(path: str) -> str:
        if path not in memo:
            memo[path] = _blob_sha256(repo, head, path)
        return memo[path]

    out = []
    for r in rows:
        script = script_of(r, blobs, benchmarks)
        if script is not None:
            out.append({"point-id": str(r.get("point-id")), "script": script, "script-sha256": sha(script),
                        "lib-sha256": sha(lib) if lib in blobs else hashlib_empty()})
    return out


def hashlib_empty() -> str:
    import hashlib

    return hashlib.sha256(b"").hexdigest()


def changed_launch_rows(repo: Path, base: str, head: str, rows: list[Row], benchmarks: str = "benchmarks") -> list[Row]:
    """The rows whose bench script or ``benchmark_lib.sh`` changed from ``base`` to ``head``."""
    head_blobs = tree_blobs(repo, head, benchmarks)
    base_blobs = tree_blobs(repo, base, benchmarks)
    lib = f"{benchmarks}/benchmark_lib.sh"
    lib_changed = head_blobs.get(lib) != base_blobs.get(lib)
    out = []
    for r in rows:
        script = script_of(r, head_blobs, benchmarks)
        if script is not None and (lib_changed or head_blobs[script] != base_blobs.get(script)):
            out.append(r)
    return out
