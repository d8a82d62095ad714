"""McNemar's exact test and the paired-difference interval, pinned against hand-computed and published values."""

from __future__ import annotations

import math

import pytest

from infx.analysis.accuracy import compare_accuracy, mcnemar_exact, paired_interval, wilson


def test_mcnemar_exact_by_hand():
    # b=1, c=9: 2 * (C(10,0) + C(10,1)) / 2^10 = 22/1024
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9)
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(2, 8) == pytest.approx(2 * (1 + 10 + 45) / 1024)
    assert mcnemar_exact(5, 5) == 1.0 and mcnemar_exact(0, 0) == 1.0


def test_wilson_and_newcombe_against_published_values():
    # Newcombe (1998), single proportion 81/263: Wilson 0.2553 to 0.3662
    lo, hi = wilson(81, 263)
    assert (round(lo, 4), round(hi, 4)) == (0.2553, 0.3662)
    # Newcombe (1998), paired example (a): 36 both, 12 / 2 discordant, 0 neither: method 10 0.0569 to 0.3404
    lo, hi = paired_interval(36, 12, 2, 0)
    assert (round(lo, 4), round(hi, 4)) == (0.0569, 0.3404)
    # no discordant pairs and perfect correlation: method 10 collapses to exactly 0 (a known property)
    assert paired_interval(10, 0, 0, 10) == (0.0, 0.0)
    # swapping the arms mirrors the interval
    lo, hi = paired_interval(36, 2, 12, 0)
    assert math.isclose(lo, -0.3404276029749407) and math.isclose(hi, -0.05692958400323869)


def test_verdicts():
    a = {i: i < 6 for i in range(20)}  # 6 right
    b = {i: i < 5 or 6 <= i < 15 for i in range(20)}  # 14 right: 5 both, 1 only a, 9 only b
    c = compare_accuracy(a, b, a_label="TP=2", b_label="TP=4", task="gsm8k")
    assert (c.both_right, c.only_a_right, c.only_b_right, c.both_wrong) == (5, 1, 9, 5)
    assert c.p_value == pytest.approx(22 / 1024) and c.verdict == "a worse"
    assert c.diff == pytest.approx(-0.4) and c.ci_low < -0.4 < c.ci_high < 0
    assert compare_accuracy(b, a).verdict == "b worse"
    assert compare_accuracy(a, a).verdict == "same"
    d = compare_accuracy(a, {i: True for i in range(10)})
    assert d.verdict == "not comparable" and "question sets differ" in d.reason
    assert compare_accuracy(a, b, not_comparable="different eval protocols").verdict == "not comparable"
