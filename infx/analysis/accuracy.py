"""Paired accuracy comparison of two arms on the same questions.

For the questions both arms answered: the accuracy difference A - B, its 95% interval (Newcombe's
hybrid score interval for paired proportions, method 10 of Newcombe 1998, built from Wilson intervals;
it stays inside [-1, 1] and is sensible with few discordant pairs, where the Wald interval collapses), and
the exact McNemar test: under "no difference" each discordant question (right in one arm only) is a fair
coin, so the two-sided p-value is the binomial tail min(1, 2 * P[X <= min(b, c)]) for X ~ Bin(b + c, 1/2).

Verdict: ``not comparable`` when the tasks, protocols or question sets differ; otherwise ``a worse`` /
``b worse`` when McNemar rejects at ``alpha`` (0.05), else ``same``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

Verdict = Literal["same", "a worse", "b worse", "not comparable"]
Z95 = 1.959963984540054


class AccuracyComparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    a_label: str
    b_label: str
    task: str | None = None
    filter: str = "strict-match"
    n: int = 0  # paired questions
    acc_a: float | None = None
    acc_b: float | None = None
    diff: float | None = None  # acc_a - acc_b
    ci_low: float | None = None
    ci_high: float | None = None
    both_right: int = 0
    only_a_right: int = 0  # b in McNemar's table
    only_b_right: int = 0  # c
    both_wrong: int = 0
    p_value: float | None = None
    verdict: Verdict = "not comparable"
    reason: str = ""

    @property
    def text(self) -> str:
        if self.verdict == "not comparable":
            return f"accuracy: not comparable ({self.reason})"
        return (f"accuracy ({self.task}, {self.filter}, {self.n} paired questions): {self.a_label} "
                f"{self.acc_a:.1%} vs {self.b_label} {self.acc_b:.1%}, difference {self.diff:+.1%} "
                f"(95% CI {self.ci_low:+.1%} to {self.ci_high:+.1%}); McNemar exact p = {self.p_value:.3g} on "
                f"{self.only_a_right} + {self.only_b_right} discordant: {self.verdict}")


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_interval(both: int, only_a: int, only_b: int, neither: int, z: float = Z95) -> tuple[float, float]:
    """Newcombe (1998) method 10: the 95% interval of p_a - p_b for paired binary outcomes."""
    n = both + only_a + only_b + neither
    if n == 0:
        return -1.0, 1.0
    pa, pb = (both + only_a) / n, (both + only_b) / n
    la, ua = wilson(both + only_a, n, z)
    lb, ub = wilson(both + only_b, n, z)
    rows_cols = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = (both * neither - only_a * only_b) / math.sqrt(rows_cols) if rows_cols > 0 else 0.0
    d = pa - pb
    lo = d - math.sqrt(max(0.0, (pa - la) ** 2 - 2 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2))
    hi = d + math.sqrt(max(0.0, (ua - pa) ** 2 - 2 * phi * (ua - pa) * (pb - lb) + (pb - lb) ** 2))
    return max(-1.0, lo), min(1.0, hi)


def compare_accuracy(a: Mapping[int, bool], b: Mapping[int, bool], *, a_label: str = "A", b_label: str = "B",
                     task: str | None = None, filter_name: str = "strict-match", alpha: float = 0.05,
                     not_comparable: str | None = None) -> AccuracyComparison:
    """``a``/``b``: question id -> answered right. Question sets must be equal (same ids)."""
    out = AccuracyComparison(a_label=a_label, b_label=b_label, task=task, filter=filter_name)
    if not_comparable:
        out.reason = not_comparable
        return out
    if not a or not b:
        out.reason = "no graded questions in " + (a_label if not a else b_label)
        return out
    if set(a) != set(b):
        only = len(set(a) ^ set(b))
        out.reason = f"the question sets differ ({len(a)} vs {len(b)} questions, {only} not shared)"
        return out
    both = sum(1 for q in a if a[q] and b[q])
    only_a = sum(1 for q in a if a[q] and not b[q])
    only_b = sum(1 for q in a if b[q] and not a[q])
    neither = len(a) - both - only_a - only_b
    n = len(a)
    lo, hi = paired_interval(both, only_a, only_b, neither)
    p = mcnemar_exact(only_a, only_b)
    acc_a, acc_b = (both + only_a) / n, (both + only_b) / n
    verdict: Verdict = "same"
    if p < alpha:
        verdict = "a worse" if acc_a < acc_b else "b worse"
    return out.model_copy(update={
        "n": n, "acc_a": acc_a, "acc_b": acc_b, "diff": acc_a - acc_b, "ci_low": lo, "ci_high": hi,
        "both_right": both, "only_a_right": only_a, "only_b_right": only_b, "both_wrong": neither,
        "p_value": p, "verdict": verdict})
