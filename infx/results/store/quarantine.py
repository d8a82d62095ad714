"""The quarantine: every row ingest refused, kept with the rule that refused it and the reason, never dropped
silently. ``infx status`` and ``infx store quarantine`` list it.

An entry is keyed by its source (the file or point directory ingest named) and rule; seeing it again updates
its reason, last-seen time and count. Ingesting the point (or run) cleanly later **releases** it: the entries of
that point, or that run's manifest, are deleted in the same transaction that writes its rows.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from infx.diagnostics import Diagnostic, InfxError

Rule = Literal["receipt", "unreadable", "partial-result", "missing-result", "unstorable", "bad-manifest",
               "no-manifest", "import-file"]

#: What each rule refuses (``infx store quarantine`` prints these).
RULES: dict[str, str] = {
    "receipt": "the point's receipt.json does not verify (a member missing, extra or changed)",
    "unreadable": "a file of the point does not parse or validate (point.json, status.json, result.json, evals)",
    "partial-result": "result.json says complete: false (the measurement did not finish)",
    "missing-result": "status.json says done but result.json is missing",
    "unstorable": "a value the store cannot hold (an integer past 64 bits, a mapping where a number belongs)",
    "bad-manifest": "the run's manifest.json does not parse or validate: none of its points were ingested",
    "no-manifest": "a run directory without manifest.json: none of its points were ingested",
    "import-file": "a published InferenceX file that does not validate (infx ingest --format inferencex)",
}


class Refused(InfxError):
    """Bad input that ingest keeps in the quarantine under ``rule``."""

    def __init__(self, rule: Rule, diagnostics: list[Diagnostic] | Diagnostic):
        super().__init__(diagnostics)
        self.rule: Rule = rule


@dataclass(frozen=True)
class Entry:
    """One quarantined row, as stored (``quarantine`` table) and listed."""

    source: str
    rule: str
    reason: str
    run_id: str | None = None
    point_id: str | None = None
    digest: str | None = None
    line: int | None = None
    first_seen: float = 0.0
    last_seen: float = 0.0
    times: int = 1

    def __str__(self) -> str:
        where = self.source + (f":{self.line}" if self.line is not None else "")
        seen = time.strftime("%Y-%m-%d %H:%M", time.gmtime(self.last_seen))
        again = f", seen {self.times}x" if self.times > 1 else ""
        return f"{where}: [{self.rule}] {self.reason} (last {seen} UTC{again})"


def file_digest(path: str | None, limit: int = 64 << 20) -> str | None:
    """sha256 of a refused file (None: a directory, gone, unreadable or over ``limit`` bytes)."""
    if not path:
        return None
    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size > limit:
            return None
        return hashlib.sha256(p.read_bytes()).hexdigest()
    except OSError:
        return None


def entries(rule: str, diagnostics: list[Diagnostic], *, source: str, run_id: str | None = None,
            point_id: str | None = None) -> list[Entry]:
    """The entries of one refusal: one per diagnostic, under the file it names (else ``source``)."""
    now = time.time()
    out = []
    seen: set[str] = set()
    for d in diagnostics:
        where = d.file or source
        if where in seen:  # one entry per file and rule; its first problem is the reason
            continue
        seen.add(where)
        out.append(Entry(source=where, rule=rule, reason=d.message, run_id=run_id, point_id=point_id,
                         digest=file_digest(d.file), line=d.line, first_seen=now, last_seen=now))
    if not out:
        out.append(Entry(source=source, rule=rule, reason="refused", run_id=run_id, point_id=point_id,
                         first_seen=now, last_seen=now))
    return out
