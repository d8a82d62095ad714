"""Cache of validated catalog files, keyed by file content and the validating code.

Parsing the ~380 KB compat catalog with libyaml costs ~0.25 s; unpickling the validated
entries costs a few ms. Only files that validated cleanly are cached, so errors are always
recomputed with their positions. The key covers the file bytes, the schema/rules/loader
sources, ``yamlsource.py`` and the Python and pydantic versions, so a code change never serves stale entries.
Location: ``$INFX_CACHE_DIR`` or ``$XDG_CACHE_HOME/infx`` or ``~/.cache/infx``, subfolder
``catalog/``. ``INFX_NO_CACHE=1`` turns it off. Any cache failure silently falls back to parsing.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

_CODE_FILES = ("schema.py", "rules.py", "loader.py", "cache.py")


def enabled() -> bool:
    return os.environ.get("INFX_NO_CACHE", "") in ("", "0")


def cache_dir() -> Path:
    base = os.environ.get("INFX_CACHE_DIR")
    if base:
        return Path(base) / "catalog"
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg) if xdg else Path.home() / ".cache"
    return root / "infx" / "catalog"


@lru_cache(maxsize=1)
def _code_tag() -> bytes:
    import pydantic

    h = hashlib.sha256(f"{sys.version_info[:3]}|{pydantic.VERSION}".encode())
    here = Path(__file__).parent
    for name in _CODE_FILES:
        h.update((here / name).read_bytes())
    h.update((here.parent / "yamlsource.py").read_bytes())
    return h.digest()


def _path(data: bytes) -> Path:
    return cache_dir() / (hashlib.sha256(_code_tag() + data).hexdigest()[:32] + ".pickle")


def get(data: bytes) -> Any | None:
    if not enabled():
        return None
    try:
        with open(_path(data), "rb") as fh:
            return pickle.load(fh)
    except Exception:  # missing, unreadable or stale-format cache: parse instead
        return None


def put(data: bytes, value: Any) -> None:
    if not enabled():
        return
    try:
        from infx.atomic import write_bytes

        write_bytes(_path(data), pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # read-only home or similar: caching is an optimisation only
        pass
