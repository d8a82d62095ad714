"""A point's accuracy eval as store rows (revision 0003): ``evals`` (one row per graded or failed eval)
and ``eval_answers`` (per question: right or wrong under each filter, for paired comparisons).

Read from the point directory's ``eval-status.json`` (written last), ``eval.json`` and
``eval-samples.jsonl``; a file that does not parse is a ``FILE:LINE: error`` and the point is not ingested.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infx.diagnostics import Diagnostic, InfxError
from infx.evals.parse import iter_samples, read_eval
from infx.evals.protocol import EVAL_FILE, EVAL_STATUS_FILE, SAMPLES_FILE, EvalResult, EvalStatus


def strict_name(names: list[str]) -> str | None:
    return next((n for n in names if "strict" in n), None)


def flexible_name(names: list[str]) -> str | None:
    return next((n for n in names if "flex" in n or "extract" in n), None)


@dataclass(frozen=True)
class EvalBundle:
    status: EvalStatus
    result: EvalResult | None
    answers: list[tuple[int, bool | None, bool | None]] = field(default_factory=list)
    texts: tuple[str, ...] = ()  # the files' text, for the point digest


def read_eval_bundle(point_dir: Path) -> EvalBundle | None:
    sf = point_dir / EVAL_STATUS_FILE
    if not sf.is_file():
        return None
    from infx import jsonio

    text = jsonio.read_text(sf, what="eval status")
    jsonio.loads(text, str(sf))  # bounds and JSON errors at their line
    try:
        status = EvalStatus.model_validate_json(text)
    except ValueError as exc:
        raise InfxError(Diagnostic(f"not an eval status: {str(exc).splitlines()[0]}", str(sf))) from None
    if status.state == "failed":
        return EvalBundle(status, None, [], (text,))
    result = read_eval(point_dir)
    if result is None:
        raise InfxError(Diagnostic(f"{EVAL_FILE} missing for a graded eval", str(sf)))
    names = [f.name for f in result.filters]
    s, fl = strict_name(names), flexible_name(names)
    answers = []
    samples = point_dir / SAMPLES_FILE
    if samples.is_file():
        for smp in iter_samples(samples):
            answers.append((smp.doc_id, smp.correct.get(s) if s else None, smp.correct.get(fl) if fl else None))
    return EvalBundle(status, result, answers,
                      (text, jsonio.read_text(point_dir / EVAL_FILE),
                       jsonio.read_text(samples) if samples.is_file() else ""))


def protocol_key(status: EvalStatus) -> str:
    return json.dumps(list(status.protocol.comparable_key()))


def eval_rows(run_id: str, point_id: str, b: EvalBundle) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    st, r = b.status, b.result
    scores: dict[str, Any] = {}
    if r is not None:
        names = [f.name for f in r.filters]
        for slot, name in (("strict", strict_name(names)), ("flexible", flexible_name(names))):
            f = next((x for x in r.filters if x.name == name), None)
            scores[slot] = (f.score, f.stderr) if f else (None, None)
    ss, fs = scores.get("strict", (None, None)), scores.get("flexible", (None, None))
    row = (run_id, point_id, st.protocol.task, st.state, st.failure_class, st.reason,
           st.verdict.threshold if st.verdict else None, st.verdict.source if st.verdict else None,
           r.n if r else None, ss[0], fs[0], ss[1], fs[1], r.lm_eval_version if r else None,
           protocol_key(st), st.protocol.model_dump_json(),
           json.dumps([f.model_dump() for f in r.filters]) if r else "[]")
    answers = [(run_id, point_id, doc, None if s is None else int(s), None if f is None else int(f))
               for doc, s, f in b.answers]
    return row, answers
