from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from infx.analysis.frontier import Direction, StepFrontier, dominates, pareto_mask

MAX, MIN = Direction.MAX, Direction.MIN


def members(xs, ys, xd=MAX, yd=MAX) -> set[int]:
    return set(np.nonzero(pareto_mask(xs, ys, xd, yd))[0].tolist())


def test_hand_made_membership_max_max() -> None:
    # (interactivity, throughput): 0,1,3 trade off; 2 is beaten by 1; 4 is beaten by 3
    xs = [10, 20, 15, 40, 30]
    ys = [900, 600, 500, 200, 150]
    assert members(xs, ys) == {0, 1, 3}


def test_direction_matters() -> None:
    xs = [1.0, 2.0, 3.0]
    ys = [1.0, 2.0, 3.0]
    assert members(xs, ys, MAX, MAX) == {2}
    assert members(xs, ys, MIN, MIN) == {0}
    assert members(xs, ys, MIN, MAX) == {0, 1, 2}  # latency down costs throughput: all trade off
    assert members(xs, ys, MAX, MIN) == {0, 1, 2}


def test_ties() -> None:
    # exact duplicates both stay (neither dominates the other)
    assert members([5, 5, 1], [7, 7, 1]) == {0, 1}
    # same x, lower y: dominated by the higher one
    assert members([5, 5], [7, 6]) == {0}
    # same y, lower x: dominated
    assert members([5, 4], [7, 7]) == {0}


def test_nan_points_are_never_members() -> None:
    assert members([1, math.nan, 3], [3, 100, math.nan]) == {0}


def test_step_function_reads_best_measured_at_or_above_target() -> None:
    f = StepFrontier.build([10, 20, 40, 15], [900, 600, 200, 500])
    assert f.value_at(10) == 900
    assert f.value_at(12) == 600  # nothing measured between 10 and 20 beats the 20 tok/s/user point
    assert f.value_at(20) == 600
    assert f.value_at(20.01) == 200
    assert f.value_at(40) == 200


def test_step_function_never_extrapolates() -> None:
    f = StepFrontier.build([10, 20, 40], [900, 600, 200])
    assert f.value_at(9.99) is None and f.value_at(40.01) is None
    assert np.isnan(f.values_at([5, 50])).all()
    assert StepFrontier.build([], []).value_at(1) is None


def test_step_function_for_minimised_x() -> None:
    # throughput (max) vs latency (min): at a latency budget t, best y with latency <= t
    f = StepFrontier.build([100, 200, 400], [10, 30, 50], MIN, MAX)
    assert f.value_at(150) == 10 and f.value_at(399) == 30 and f.value_at(400) == 50


def test_step_polyline_is_a_staircase_through_the_frontier() -> None:
    f = StepFrontier.build([10, 20, 40], [900, 600, 200])
    px, py = f.step_polyline()
    assert px == [10, 10, 10, 20, 20, 40]
    assert py == [900, 900, 600, 600, 200, 200]


coords = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=1, max_size=40)
dirs = st.sampled_from([MAX, MIN])


@settings(max_examples=300, deadline=None)
@given(coords, dirs, dirs)
def test_frontier_properties(points, xd, yd) -> None:
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    mask = pareto_mask(xs, ys, xd, yd)
    front = [p for p, m in zip(points, mask, strict=True) if m]
    assert front, "a non-empty set always has a frontier"
    # no frontier point is dominated by any point
    for f in front:
        assert not any(dominates(q, f, xd, yd) for q in points)
    # every other point is dominated by some frontier point
    for p, m in zip(points, mask, strict=True):
        if not m:
            assert any(dominates(f, p, xd, yd) for f in front)
    # ties: every copy of a frontier point is on the frontier
    for p, m in zip(points, mask, strict=True):
        if p in front:
            assert m


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(1, 100), st.floats(1, 1e4)), min_size=1, max_size=30),
       st.floats(0, 110))
def test_step_value_is_the_best_point_at_least_as_interactive(points, t) -> None:
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    f = StepFrontier.build(xs, ys)
    v = f.value_at(t)
    if t < min(xs) or t > max(xs):
        assert v is None
    else:
        assert v == max(y for x, y in points if x >= t)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 8), st.integers(0, 8)), min_size=1, max_size=60),
       dirs, dirs)
def test_grouped_mask_equals_one_frontier_per_group(rows, xd, yd) -> None:
    from infx.analysis.frontier import grouped_pareto_mask

    g = np.array([r[0] for r in rows])
    x = np.array([r[1] for r in rows], dtype=float)
    y = np.array([r[2] for r in rows], dtype=float)
    got = grouped_pareto_mask(g, x, y, xd, yd)
    for gid in set(g.tolist()):
        sel = g == gid
        assert (got[sel] == pareto_mask(x[sel], y[sel], xd, yd)).all()
