"""Accuracy evals read from the store: per point and per arm, and the paired arm comparison
(:mod:`infx.analysis.accuracy`) that ``infx compare`` and the report show next to throughput."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from infx.analysis.accuracy import AccuracyComparison, compare_accuracy
from infx.analysis.dataset import ArmKey, WorkloadKey, match_arm
from infx.results.store.reads import EvalRow

if TYPE_CHECKING:
    from infx.results.store import Store


#: A point's accuracy eval as the store keeps it, with the workload and arm it is grouped by.
EvalPoint = EvalRow


def load_evals(store: Store, run_ids: Sequence[str] | None = None) -> list[EvalPoint]:
    return store.evals(run_ids)


def answers(store: Store, run_id: str, point_id: str, column: str = "strict") -> dict[int, bool]:
    return store.answers(run_id, point_id, column)


def _arm_eval(evals: list[EvalPoint]) -> EvalPoint | None:
    """An arm's representative eval: the graded one at the highest concurrency."""
    graded = [e for e in evals if e.state != "failed"]
    return max(graded, key=lambda e: (e.conc, e.point_id)) if graded else None


def compare_arm_accuracy(store: Store, evals: Sequence[EvalPoint], run_id: str, a: str | None, b: str | None,
                         baseline: str | None = None) -> list[AccuracyComparison]:
    """Accuracy of arm A vs arm B on the same questions (within ``run_id``), or, with ``baseline``,
    each arm of ``run_id`` against the same arm of the baseline."""
    by_arm: dict[tuple[str, WorkloadKey, ArmKey], list[EvalPoint]] = {}
    for e in evals:
        by_arm.setdefault((e.run_id, e.workload, e.arm), []).append(e)
    pairs: list[tuple[EvalPoint | None, EvalPoint | None, str, str]] = []
    workloads = sorted({w for r, w, _ in by_arm if r == run_id}, key=lambda w: w.label)
    for w in workloads:
        arms = sorted({k[2] for k in by_arm if k[0] == run_id and k[1] == w}, key=lambda k: k.label)
        if baseline:
            for arm in arms:
                if (baseline, w, arm) in by_arm:
                    pairs.append((_arm_eval(by_arm[(run_id, w, arm)]), _arm_eval(by_arm[(baseline, w, arm)]),
                                  f"{arm.label} ({run_id})", f"{arm.label} ({baseline})"))
            continue
        left = [x for x in arms if a and match_arm(a, x)] if a or b else arms
        right = [x for x in arms if b and match_arm(b, x)] if a or b else arms
        for i, x in enumerate(left):
            for y in right:
                if x == y or (not (a or b) and arms.index(y) <= i):
                    continue
                pairs.append((_arm_eval(by_arm[(run_id, w, x)]), _arm_eval(by_arm[(run_id, w, y)]),
                              x.label, y.label))
    out = []
    for ea, eb, la, lb in pairs:
        if ea is None or eb is None:
            out.append(compare_accuracy({}, {}, a_label=la, b_label=lb,
                                        not_comparable=f"no graded eval for {la if ea is None else lb}"))
            continue
        why = None
        if ea.task != eb.task:
            why = f"different tasks ({ea.task} vs {eb.task})"
        elif ea.protocol_key != eb.protocol_key:
            why = "different eval protocols (shots, template, sampling or output budget)"
        out.append(compare_accuracy(answers(store, ea.run_id, ea.point_id), answers(store, eb.run_id, eb.point_id),
                                    a_label=la, b_label=lb, task=ea.task, not_comparable=why))
    return out
