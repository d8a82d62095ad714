"""Read lm-eval's output (``results_<ts>.json``, ``samples_<task>_<ts>.jsonl``) and infx's own eval files
into typed models. Anything that does not parse is a one-line ``FILE:LINE: error`` (InfxError)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from infx.diagnostics import Diagnostic, InfxError
from infx.evals.protocol import EVAL_FILE, SAMPLES_FILE, EvalResult, EvalSample, FilterScore


def newest(directory: Path, pattern: str) -> Path | None:
    files = sorted(directory.rglob(pattern), key=lambda p: (p.stat().st_mtime, p.name))
    return files[-1] if files else None


def _load_json(path: Path) -> Any:
    from infx import jsonio

    return jsonio.load(path, what="eval file")


def read_lmeval_scores(path: Path, task: str) -> tuple[list[FilterScore], int, str, str]:
    """``(filters, n, lm_eval_version, metric)`` from an lm-eval results file."""
    data = _load_json(path)
    try:
        res = data["results"][task]
        cfg = data.get("configs", {}).get(task, {})
        metric = (cfg.get("metric_list") or [{}])[0].get("metric", "exact_match")
        filters = [f["name"] for f in cfg.get("filter_list") or []] or ["none"]
        out = []
        for name in filters:
            value = res.get(f"{metric},{name}")
            if not isinstance(value, (int, float)):
                continue
            if isinstance(value, bool) or not 0 <= value <= 1:  # jsonio already refused NaN and inf
                raise InfxError(Diagnostic(f"{metric} score {value!r} of filter {name!r} is not between 0 and 1",
                                           str(path), path=("results", task, f"{metric},{name}")))
            se = res.get(f"{metric}_stderr,{name}")
            out.append(FilterScore(name=name, score=float(value), stderr=float(se) if isinstance(se, (int, float))
                                   else None))
        n = int(data["n-samples"][task]["effective"])
        version = str(data.get("lm_eval_version", "unknown"))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a list or a number where a mapping belongs
        what = f"missing {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise InfxError(Diagnostic(f"not an lm-eval results file for task {task!r} ({what})",
                                   str(path))) from None
    if not out:
        raise InfxError(Diagnostic(f"no {metric} score for task {task!r}", str(path)))
    return out, n, version, metric


def _text(x: Any) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, list) and x:
        return _text(x[0])
    return "" if x is None else json.dumps(x)


def read_lmeval_samples(path: Path) -> list[EvalSample]:
    """One :class:`EvalSample` per question from lm-eval's per-(doc, filter) sample lines."""
    from infx import jsonio

    by_doc: dict[int, EvalSample] = {}
    for lineno, row in jsonio.iter_jsonl(path, what="eval samples file"):
        try:
            doc_id = int(row["doc_id"])
            filt = str(row.get("filter", "none"))
            metric = next((k for k in ("exact_match", "acc") if k in row), None)
            correct = bool(row[metric]) if metric else False
            s = by_doc.get(doc_id)
            if s is None:
                args = row.get("arguments") or {}
                first = next(iter(args.values()), {}) if isinstance(args, dict) else (args[0] if args else {})
                prompt = _text(first.get("arg_0") if isinstance(first, dict) else first)
                s = by_doc[doc_id] = EvalSample(doc_id=doc_id, prompt=prompt, response=_text(row.get("resps")),
                                                target=_text(row.get("target")))
            s.extracted[filt] = _text(row.get("filtered_resps"))
            s.correct[filt] = correct
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InfxError(Diagnostic(f"not an lm-eval sample line ({type(exc).__name__}: {exc})", str(path),
                                       lineno)) from None
    return [by_doc[k] for k in sorted(by_doc)]


def read_eval(point_dir: Path) -> EvalResult | None:
    f = point_dir / EVAL_FILE
    if not f.is_file():
        return None
    try:
        return EvalResult.model_validate(_load_json(f))
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        raise InfxError(Diagnostic(e["msg"], str(f), path=tuple(e["loc"]))) from None


def iter_samples(path: Path) -> Iterator[EvalSample]:
    from infx import jsonio

    for lineno, row in jsonio.iter_jsonl(path, what="eval samples file"):
        try:
            yield EvalSample.model_validate(row)
        except ValidationError as exc:
            e = exc.errors(include_url=False)[0]
            raise InfxError(Diagnostic(e["msg"], str(path), lineno, path=tuple(e["loc"]))) from None


def read_samples(point_dir: Path) -> list[EvalSample]:
    f = point_dir / SAMPLES_FILE
    return list(iter_samples(f)) if f.is_file() else []
