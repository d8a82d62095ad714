"""A point's measurement receipt (``points/<point-id>/receipt.json``): what proves that a point directory is
what was measured.

The receipt holds the bundle's payload (what was run, with what, where: written by :mod:`infx.repro`), the
sha256 of the payload's canonical JSON, and the path, sha256 and size of every other file of the point
directory (its *members*: ``point.json``, ``status.json``, ``result.json``, ``records.jsonl.gz``,
``engine.log``, telemetry and eval files). ``receipt_id`` is the sha256 of the canonical JSON of the payload
digest and the member list, so no part of the receipt can change without the id changing.

Verification (``infx verify``, and ingest before any row is written) recomputes every digest and names each
member that is missing, extra, changed, or not a plain file (symlinks and special files are refused, as
InferenceX-app's ingest refuses them). It lives in the results stage so that ingest can verify without
reaching up to the stage that writes bundles. The payload is opaque JSON here (hashed verbatim); its typed
model is :class:`infx.repro.payload.BundlePayload`.

Canonical JSON: keys sorted, no whitespace, UTF-8, no NaN/Infinity (``json.dumps(sort_keys=True,
separators=(",", ":"), ensure_ascii=False, allow_nan=False)``). The payloads hold strings, integers,
booleans and a few floats as Python prints them; RFC 8785's number formatting is not needed for the digests
to be stable, since the same writer and reader serialise them.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from infx import atomic
from infx.diagnostics import Diagnostic, InfxError

RECEIPT_FILE = "receipt.json"
RECEIPT_KIND: Final = "infx-point-receipt"
RECEIPT_VERSION = 1
_CHUNK = 1 << 20


def canonical_json(obj: Any) -> bytes:
    """The canonical JSON bytes that digests are taken over."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> tuple[str, int]:
    """(hex sha256, size in bytes) of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


class Member(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str  # relative to the point directory, '/'-separated
    sha256: str
    size: int


class Receipt(BaseModel):
    """``receipt.json``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["infx-point-receipt"] = RECEIPT_KIND
    version: int = RECEIPT_VERSION
    receipt_id: str
    payload_sha256: str
    members: list[Member] = Field(default_factory=list)
    payload: dict[str, Any]  # infx.repro.payload.BundlePayload, hashed verbatim

    @staticmethod
    def compute_id(payload_sha256: str, members: list[Member]) -> str:
        return sha256_bytes(canonical_json({"payload_sha256": payload_sha256,
                                            "members": [m.model_dump() for m in members]}))


def _walk(point_dir: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """(plain files, refused entries as 'PATH (why)') under ``point_dir``, sorted, receipt excluded.
    Directories are descended (``lm-eval/``); a symlink is never followed."""
    files: list[tuple[str, Path]] = []
    refused: list[str] = []
    for dirpath, dirnames, filenames in os.walk(point_dir, followlinks=False):
        base = Path(dirpath)
        for name in sorted(dirnames):  # a symlinked directory shows up here; os.walk does not enter it
            if (base / name).is_symlink():
                refused.append(f"{(base / name).relative_to(point_dir).as_posix()} (symlink)")
        dirnames[:] = sorted(d for d in dirnames if not (base / d).is_symlink())
        for name in sorted(filenames):
            p = base / name
            rel = p.relative_to(point_dir).as_posix()
            if rel == RECEIPT_FILE:
                continue
            mode = os.lstat(p).st_mode
            if stat.S_ISLNK(mode):
                refused.append(f"{rel} (symlink)")
            elif not stat.S_ISREG(mode):
                refused.append(f"{rel} (not a regular file)")
            else:
                files.append((rel, p))
    files.sort()
    return files, sorted(refused)


def member_list(point_dir: str | Path) -> list[Member]:
    """Every plain file of a point directory, hashed. A symlink or special file is an error (a bundle
    never holds one)."""
    d = Path(point_dir)
    files, refused = _walk(d)
    if refused:
        raise InfxError([Diagnostic(f"refusing to bundle {r}", str(d)) for r in refused])
    out = []
    for rel, p in files:
        digest, size = sha256_file(p)
        out.append(Member(path=rel, sha256=digest, size=size))
    return out


def write_receipt(point_dir: str | Path, payload: dict[str, Any]) -> Receipt:
    """Hash the payload and every member, write ``receipt.json`` atomically (last, after every member)."""
    d = Path(point_dir)
    payload_sha = sha256_bytes(canonical_json(payload))
    members = member_list(d)
    receipt = Receipt(receipt_id=Receipt.compute_id(payload_sha, members), payload_sha256=payload_sha,
                      members=members, payload=payload)
    atomic.write_text(d / RECEIPT_FILE, receipt.model_dump_json(indent=1) + "\n")
    return receipt


def discard_receipt(point_dir: str | Path) -> None:
    """Remove a point's receipt (before the point is measured again: an old receipt never covers new files)."""
    (Path(point_dir) / RECEIPT_FILE).unlink(missing_ok=True)


# --------------------------------------------------------------------------- verification

ProblemKind = Literal["missing", "extra", "changed", "symlink", "special", "receipt"]


@dataclass(frozen=True)
class Problem:
    kind: ProblemKind
    member: str  # the member's path ('receipt.json' for problems of the receipt itself)
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.member}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class Verification:
    point_dir: Path
    receipt: Receipt | None
    problems: list[Problem]
    members: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def reason(self) -> str:
        """One line naming every problem (the ingest refusal's reason)."""
        return "receipt verification failed: " + "; ".join(str(p) for p in self.problems)


def has_receipt(point_dir: str | Path) -> bool:
    p = Path(point_dir) / RECEIPT_FILE
    return p.exists() or p.is_symlink()


def read_receipt(point_dir: str | Path) -> Receipt:
    """The receipt of a point directory; InfxError (with FILE) when absent or not a valid receipt."""
    p = Path(point_dir) / RECEIPT_FILE
    if p.is_symlink():
        raise InfxError(Diagnostic("receipt.json is a symlink", str(p)))
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InfxError(Diagnostic("no receipt.json", str(p))) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InfxError(Diagnostic(f"cannot read receipt.json: {exc}", str(p))) from None
    try:
        return Receipt.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise InfxError(Diagnostic(f"invalid receipt: {first['msg']}", str(p),
                                   path=tuple(first["loc"]))) from None


def verify_point_dir(point_dir: str | Path) -> Verification:
    """Recompute every digest of a point directory against its receipt."""
    d = Path(point_dir)
    try:
        receipt = read_receipt(d)
    except InfxError as exc:
        return Verification(d, None, [Problem("receipt", RECEIPT_FILE, exc.diagnostics[0].message)])
    problems: list[Problem] = []
    try:
        payload_sha = sha256_bytes(canonical_json(receipt.payload))
    except ValueError as exc:
        payload_sha = f"unhashable: {exc}"
    if payload_sha != receipt.payload_sha256:
        problems.append(Problem("changed", RECEIPT_FILE, "payload digest differs"))
    if Receipt.compute_id(receipt.payload_sha256, receipt.members) != receipt.receipt_id:
        problems.append(Problem("changed", RECEIPT_FILE, "receipt_id differs from its payload and members"))
    files, refused = _walk(d)
    for r in refused:
        rel, _, why = r.rpartition(" (")
        problems.append(Problem("symlink" if why.startswith("symlink") else "special", rel, why.rstrip(")")))
    refused_paths = {r.rpartition(" (")[0] for r in refused}
    on_disk = dict(files)
    expected = {m.path: m for m in receipt.members}
    for path, m in expected.items():
        if path in refused_paths:
            continue  # already named (a member replaced by a symlink)
        p = on_disk.get(path)
        if p is None:
            problems.append(Problem("missing", path))
            continue
        digest, size = sha256_file(p)
        if size != m.size:
            problems.append(Problem("changed", path, f"size {size} != {m.size}"))
        elif digest != m.sha256:
            problems.append(Problem("changed", path, "sha256 differs"))
    for path in sorted(set(on_disk) - set(expected)):
        problems.append(Problem("extra", path))
    return Verification(d, receipt, problems, len(expected))
