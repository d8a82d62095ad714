"""``eval-coverage``: every arm of a changed catalog entry keeps an eval under each eval mode the sweep can
run (default, evals-only, all-evals), by infx's own selection (:mod:`infx.matrix.evals`). With
``--eval-rule inferencex`` it also emulates InferenceX's grouping (agentic single-node rows grouped by
model, runner, framework and precision only; fixed single-node rows without tp/ep) and reports the arms
that grouping drops."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from infx.matrix.evals import MIN_EVAL_CONC, NON_ARM_FIELDS
from infx.matrix.point import Point
from infx.review.models import Finding, Location, finding
from infx.review.rules import Outcome, RuleInfo, status_of

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("eval-coverage", "Every changed arm keeps its eval",
                "For each eval mode (default, evals-only, all-evals) every arm of a changed entry keeps at least one "
                "eval row; --eval-rule inferencex also reports the arms InferenceX's grouping drops.", "error")

MODES = ("default", "evals-only", "all")
Row = dict[str, Any]


def _arm(key: str, row: Row) -> str:
    arm = {k: v for k, v in row.items() if k not in NON_ARM_FIELDS and k != "recipe-fingerprint"}
    return key + "|" + json.dumps(arm, sort_keys=True)


def _agentic_mode(row: Row, mode: str) -> bool:
    """Agentic evals run only under evals-only and all-evals (InferenceX's and infx's rule)."""
    return row.get("scenario-type") == "agentic-coding" and mode == "default"


def check(ctx: ReviewContext) -> Outcome:
    from infx.catalog.loader import load_catalog_and_runners
    from infx.matrix.generate import test_config_rows

    keys = sorted({c.key for c in ctx.changed})
    if not keys or ctx.head.ws is None:
        return Outcome("n/a", "no changed entry")
    catalog, runners = load_catalog_and_runners(ctx.head.ws.config_files(), ctx.head.ws.runner_config)
    findings: list[Finding] = []
    table: dict[str, dict[str, Any]] = {}
    for key in keys:
        plain = test_config_rows(catalog, runners, [key], evals="none")
        arms: dict[str, list[Row]] = {}
        for r in plain:
            arms.setdefault(_arm(key, r), []).append(r)
        per_mode = {m: test_config_rows(catalog, runners, [key], evals=m, on_warning=lambda _w: None) for m in MODES}
        for arm, rows in arms.items():
            p = Point.from_row(rows[0])
            label = _label(key, p)
            cells: dict[str, Any] = {}
            for mode, mrows in per_mode.items():
                if _agentic_mode(rows[0], mode):
                    cells[mode] = "n/a (agentic evals run under evals-only / all-evals)"
                    continue
                evals = [r for r in mrows if r.get("run-eval") and _arm(key, r) == arm]
                cells[mode] = sorted({_eval_conc(r) for r in evals})
            table[label] = cells
            eligible = _has_eligible(rows)
            lost = [m for m, c in cells.items() if c == []]
            if lost and eligible:
                pid = _pid(ctx, key, rows[0])
                title = f"{label} loses its eval under {', '.join(lost)}"
                findings.append(finding("eval-coverage", "error", f"{key}/{label}", title, title,
                                        locations=[Location(path=ctx.head_file(key), line=ctx.row_line(pid))],
                                        points=[r["exp-name"] for r in rows], evidence={"arm": label, "modes": cells},
                                        template="infx loses eval"))
            elif lost:
                pid = _pid(ctx, key, rows[0])
                findings.append(finding("eval-coverage", "note", f"{key}/{label}/ineligible",
                                        f"{label} has no eval-eligible concurrency", f"{label}: evals need 8k1k rows "
                                        f"(or multinode agentic rows) with conc >= {MIN_EVAL_CONC}",
                                        locations=[Location(path=ctx.head_file(key), line=ctx.row_line(pid))],
                                        evidence={"arm": label, "modes": cells}, template="ineligible"))
        if ctx.request.eval_rule == "inferencex":
            findings.extend(_inferencex(ctx, key, plain, arms))
    reason = f"{len(table)} arm(s) keep an eval in every mode that evaluates them"
    out = status_of(findings, reason)
    for f in out.findings:
        f.evidence.setdefault("table", table)
    if not out.findings:
        out.findings.append(finding("eval-coverage", "note", "table", reason, reason,
                                    locations=[Location(path=ctx.head_file(keys[0]),
                                                        line=ctx.head.places[keys[0]].key_line)],
                                    evidence={"table": table}, template="table"))
    return out


def _pid(ctx: ReviewContext, key: str, row: Row) -> str:
    return next((pid for pid, (k, pt) in ctx.head.points.items() if k == key and pt.point_id == row.get("point-id")),
                next(pid for pid, (k, _) in ctx.head.points.items() if k == key))


def _eval_conc(r: Row) -> int:
    c = r.get("eval-conc") or r["conc"]
    return max(c) if isinstance(c, list) else int(c)


def _has_eligible(rows: list[Row]) -> bool:
    for r in rows:
        cs = r["conc"] if isinstance(r["conc"], list) else [r["conc"]]
        if r.get("scenario-type") == "agentic-coding":
            if "prefill" not in r or max(cs) >= MIN_EVAL_CONC:
                return True
        elif (r.get("isl"), r.get("osl")) == (8192, 1024) and max(cs) >= MIN_EVAL_CONC:
            return True
    return False


def _label(key: str, p: Point) -> str:
    if p.multinode and p.prefill and p.decode:
        topo = f"p{p.prefill.num_worker}x{p.prefill.tp} d{p.decode.num_worker}x{p.decode.tp}"
    else:
        topo = f"tp={p.tp}" + (f" ep={p.ep}" if p.ep != 1 else "") + (" dp-attn" if p.dp_attn else "")
    seq = "" if p.is_agentic else f" {p.isl}/{p.osl}"
    return f"{topo}{seq}"


def _inferencex(ctx: ReviewContext, key: str, rows: list[Row], arms: dict[str, list[Row]]) -> list[Finding]:
    """InferenceX's selection (IX@843c625 mark_eval_entries): agentic single-node rows grouped by
    (model, runner, framework, precision), the group's single max-conc row marked (the first on ties);
    fixed single-node 8k1k rows with conc >= 16 grouped without tp/ep, every row at the group's max or
    upper-median conc marked."""
    marked: set[int] = set()
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(rows):
        if "prefill" in r:
            marked.add(i)  # multinode: per parallelism key, as infx
            continue
        if r.get("scenario-type") == "agentic-coding":
            groups.setdefault(("a", r["model"], r["runner"], r["framework"], r["precision"]), []).append(i)
        elif (r.get("isl"), r.get("osl")) == (8192, 1024) and r["conc"] >= MIN_EVAL_CONC:
            groups.setdefault(("f", r["model"], r["runner"], r["framework"], r["precision"], r["isl"], r["osl"],
                               r.get("spec-decoding"), r.get("dp-attn")), []).append(i)
    ties: dict[tuple[Any, ...], str] = {}
    for g, idx in groups.items():
        if g[0] == "a":
            top = max(idx, key=lambda i: rows[i]["conc"])
            marked.add(top)
            n_top = sum(1 for i in idx if rows[i]["conc"] == rows[top]["conc"])
            if n_top > 1:
                ties[g] = f"tie at conc {rows[top]['conc']}, first row {_label(key, Point.from_row(rows[top]))} kept"
        else:
            cs = sorted({rows[i]["conc"] for i in idx})
            targets = {cs[-1], cs[len(cs) // 2]}
            marked.update(i for i in idx if rows[i]["conc"] in targets)
    out: list[Finding] = []
    for arm, arm_rows in arms.items():
        first = rows.index(arm_rows[0])
        idx = [i for i, r in enumerate(rows) if _arm(key, r) == arm]
        if any(i in marked for i in idx) or not _has_eligible(arm_rows):
            continue
        p = Point.from_row(rows[first])
        label = _label(key, p)
        agentic = p.is_agentic
        g = ("a", p.model, p.runner, p.framework, p.precision)
        why = ties.get(g, "another arm's row holds the group's max conc") if agentic else \
            "its concurrencies are not the group's max or upper median"
        grouping = "agentic eval grouping" if agentic else "fixed-seq-len eval grouping"
        title = (f"under InferenceX's {grouping} the {label} arm gets no eval ({why}); with evals-only its "
                 f"{len(arm_rows)} points are dropped")
        pid = _pid(ctx, key, arm_rows[0])
        out.append(finding("eval-coverage", "error", f"{key}/{label}/inferencex", title, title,
                           locations=[Location(path=ctx.head_file(key), line=ctx.row_line(pid))],
                           points=[r["exp-name"] for r in arm_rows],
                           evidence={"rule": "inferencex", "arm": label, "why": why}, template="inferencex drops"))
    return out
