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
    ident = {k: v for k, v in row.items() if k not in NON_IDENTITY_FIELDS}
    blob = json.dumps([config_key, ident], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
