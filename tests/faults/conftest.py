"""A small real file system that can be filled: a tmpfs mounted for the test (root only; skipped with the
reason where mounting is not allowed)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pgserver import own_pg_server  # noqa: F401  (a PostgreSQL cluster a test may stop)


@pytest.fixture
def small_volume(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "vol"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True,
                       check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip() or r.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(volume: Path) -> Path:
    """Fill the volume to the last byte; the filler's path (delete it to give the space back)."""
    filler = volume / "filler"
    with filler.open("wb", buffering=0) as fh:
        for size in (65536, 1):
            try:
                while fh.write(b"\0" * size):
                    pass
            except OSError:
                pass
    return filler
