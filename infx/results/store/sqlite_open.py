"""Opening the results database for writing, safe when several processes open it at once.

``PRAGMA journal_mode=WAL`` on a database still in rollback mode needs an exclusive lock, and
when two connections ask for it together SQLite settles the deadlock by answering one of them
``SQLITE_BUSY`` at once, without calling the busy handler. ``busy_timeout`` therefore does not
cover the first open of a fresh database by ``infx run`` and ``infx ingest`` together; this
module retries the switch (the mode is persistent, so a connection that finds WAL already set
is done) within the same bound as every other lock wait.
"""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path

from infx.diagnostics import Diagnostic, InfxError

LOCK_WAIT_S = 30.0  # how long any lock wait may take, the busy handler's bound included
PAGE_SIZE = 16384
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """True when ``exc`` says another connection holds a lock (SQLITE_BUSY / SQLITE_LOCKED)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in (_SQLITE_BUSY, _SQLITE_LOCKED)


def open_for_writing(path: Path, *, lock_wait_s: float = LOCK_WAIT_S) -> sqlite3.Connection:
    """An autocommit connection in WAL mode with the busy handler set to ``lock_wait_s``."""
    fresh = not path.exists() or path.stat().st_size == 0
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=lock_wait_s)
    try:
        conn.execute(f"PRAGMA busy_timeout={int(lock_wait_s * 1000)}")
        if fresh:
            # a new database: 16 KiB pages (a points row with its point.json is ~1 KiB; larger pages split less
            # often: ~18 % faster ingest at 100,000 points); fixed once the first page is written (WAL keeps it)
            conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
        _enable_wal(conn, path, time.monotonic() + lock_wait_s)
        conn.execute("PRAGMA synchronous=NORMAL")
        # checkpoint the WAL every ~40 MB instead of ~4 MB: an ingest then copies each page it touched back into
        # the database once or twice instead of many times (index pages are touched by every batch)
        conn.execute("PRAGMA wal_autocheckpoint=10000")
    except BaseException:
        conn.close()
        raise
    return conn


def _enable_wal(conn: sqlite3.Connection, path: Path, deadline: float) -> None:
    pause = 0.002
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            if time.monotonic() >= deadline:
                raise InfxError(Diagnostic(f"{path}: database is locked: could not switch it to WAL mode "
                                           "within the lock wait")) from exc
        time.sleep(pause * (1 + random.random()))  # jitter, so the racers do not meet again
        pause = min(pause * 2, 0.1)
