"""``point-id``: a short stable identity for a matrix row (exp-names collide in the real catalog)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: Fields that do not distinguish a point: the derived name and the eval flags.
NON_IDENTITY_FIELDS = frozenset({"exp-name", "run-eval", "eval-only", "eval-conc", "eval-all-concs", "point-id"})


def point_id(row: dict[str, Any], config_key: str = "") -> str:
    """12 hex chars of sha256 over the config key and the canonical JSON of every identifying field.

    The config key is part of the identity: the real catalog has entries whose rows are
    field-for-field identical (e.g. an A/B power-measurement copy of an entry). Rows built
    outside the generator (no config key known) hash with an empty key.
    """
    ident = dict(row)
    for k in _DROP:
        ident.pop(k, None)
    return hashlib.sha256(_ENCODE([config_key, ident]).encode()).hexdigest()[:12]


_DROP = tuple(sorted(NON_IDENTITY_FIELDS))
#: ``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)``, without building an
#: encoder per call (the blob, hence every id, is unchanged).
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode
