"""Properties of concurrency expansion and point identity."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from infx.matrix.conc import expand_range
from infx.matrix.pointid import point_id


@given(st.integers(1, 4096), st.integers(0, 4096), st.integers(2, 8))
def test_expand_range_is_geometric_and_ends_on_end(start: int, extra: int, step: int) -> None:
    end = start + extra
    out = expand_range(start, end, step)
    assert out[0] == start and out[-1] == end
    assert all(a < b for a, b in itertools.pairwise(out))
    assert all(b == a * step for a, b in zip(out[:-2], out[1:-1], strict=True))  # geometric until the clamped end
    assert len(out) == 1 or out[-2] * step >= end


def test_point_id_ignores_eval_flags_and_name_but_not_topology_or_key() -> None:
    row = {"model": "m", "tp": 4, "conc": 8, "exp-name": "a", "run-eval": False}
    pid = point_id(row, "k")
    assert len(pid) == 12 and int(pid, 16) >= 0
    assert point_id({**row, "run-eval": True, "eval-only": True, "eval-conc": 8, "exp-name": "b"}, "k") == pid
    assert point_id({**row, "tp": 2}, "k") != pid
    assert point_id({**row, "conc": 16}, "k") != pid
    assert point_id(row, "other-key") != pid
    assert point_id(dict(reversed(list(row.items()))), "k") == pid  # key order does not matter


def test_point_id_value_is_pinned() -> None:
    """Point-ids name result directories: the formula (sha256 of the sorted, compact, ASCII JSON of
    ``[config-key, identifying fields]``) must not drift, e.g. through an encoding optimisation."""
    row = {"model": "m", "tp": 4, "conc": 8, "exp-name": "a", "run-eval": False,
           "prefill": {"tp": 2, "dp-attn": True}, "image": "\u00fc", "eval-conc": 8}
    assert point_id(row, "k") == "49facd5e2cf7"
