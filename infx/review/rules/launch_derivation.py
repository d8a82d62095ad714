"""``launch-derivation``: per changed arm, base vs head side by side per concurrency: the sequence cap,
the CUDA-graph capture ceiling, the speculative tokens, the worst case in flight and the largest decode
batch, each value with its source (argv / env / engine default) and the file line that sets it. Warns
when the head's cap is below the worst case in flight, or its ceiling below the largest decode batch."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from infx.review.models import Finding, Location, finding
from infx.review.rules import Outcome, RuleInfo, status_of

if TYPE_CHECKING:
    from infx.review.context import ReviewContext
    from infx.review.side import Side

RULE = RuleInfo("launch-derivation", "Sequence cap and CUDA-graph ceiling cover the worst case per concurrency",
                "A base-vs-head table per changed arm: max-num-seqs, capture ceiling, speculative tokens, worst-case "
                "in flight (conc x fan-out) and largest decode batch, each with its source.", "warning")

#: Spellings of each quantity in a recipe or a bench script, to find the line that sets it.
_NEEDLES = {"max_num_seqs": ("max-num-seqs", "max_num_seqs", "MAX_NUM_SEQS"),
            "graph_ceiling": ("max_cudagraph_capture_size", "cudagraph_capture_sizes", "CAPTURE_SIZE",
                              "cuda-graph-max-bs", "max-cudagraph-capture-size")}


def _line_setting(side: Side, path: str | None, what: str) -> int | None:
    if not path:
        return None
    key = (id(side), path, what)
    if key not in _LINES:
        _LINES[key] = _find_line(side, path, what)
    return _LINES[key]


_LINES: dict[tuple[int, str, str], int | None] = {}


def _find_line(side: Side, path: str, what: str) -> int | None:
    data = side.file_bytes(path)
    if data is None:
        return None
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        code = line.split("#", 1)[0] if path.endswith((".yaml", ".yml")) else line
        if any(re.search(rf"(?<![\w-]){re.escape(nd)}(?![\w-])", code) for nd in _NEEDLES[what]):
            return n
    return None


def _row(ctx: ReviewContext, side: Side, pid: str) -> dict[str, Any] | None:
    from infx.preflight.checks import worst_in_flight
    from infx.preflight.gate import settings_for

    launch = side.launch(pid)
    if isinstance(launch, str) or hasattr(launch, "roles"):
        return None
    point = side.points[pid][1]
    cards = side.cards()
    try:
        s = settings_for(point, launch, cards, cards.hardware_for_runner(point.runner))
    except ValueError:
        return None
    conc = max(point.concs)
    worst = worst_in_flight(point, conc, ctx.request.fanout)
    cap = s.max_num_seqs.value
    spec = int(s.spec_tokens.value or 0)
    largest = min(worst, int(cap)) * (1 + spec) if cap else worst * (1 + spec)
    src = side.recipe_file_of(launch)
    return {
        "conc": conc, "max_num_seqs": cap, "max_num_seqs_source": _src(s.max_num_seqs, side, src, "max_num_seqs"),
        "capture_ceiling": s.graph_ceiling.value,
        "capture_ceiling_source": _src(s.graph_ceiling, side, src, "graph_ceiling"),
        "spec_tokens": spec, "worst_in_flight": worst, "largest_decode_batch": largest,
        "file": src, "cap_line": _line_setting(side, src, "max_num_seqs"),
        "ceiling_line": _line_setting(side, src, "graph_ceiling"),
    }


def _src(setting: Any, side: Side, path: str | None, what: str) -> str:
    where = setting.describe().split(" (", 1)[1][:-1] if " (" in setting.describe() else str(setting.source)
    if setting.source == "default":
        return "engine default"
    line = _line_setting(side, path, what)
    return f"{where}, {path}:{line}" if path and line else where


def check(ctx: ReviewContext) -> Outcome:
    arms = ctx.changed_arms()
    _LINES.clear()  # keyed by the side objects of this review only
    if not arms:
        return Outcome("n/a", "no changed point")
    findings: list[Finding] = []
    tables = 0
    for pids in arms.values():
        key, point = ctx.head.points[pids[0]]
        arm_pids = [p for p in ctx.arm_points(ctx.head, _arm(ctx, pids[0]))]
        table = []
        warns = []
        for pid in arm_pids:
            head = _row(ctx, ctx.head, pid)
            bpid = ctx.base_pid_of(pid)
            base = _row(ctx, ctx.base, bpid) if bpid else None
            if head is None:
                continue
            table.append({"conc": head["conc"], "head": _public(head), "base": _public(base) if base else None,
                          "point": point_name(ctx, pid)})
            cap = head["max_num_seqs"]
            if cap is not None and int(cap) < head["worst_in_flight"]:
                warns.append(("cap", head, pid))
            elif head["capture_ceiling"] is not None and int(head["capture_ceiling"]) < head["largest_decode_batch"]:
                warns.append(("ceiling", head, pid))
        if not table:
            continue
        tables += 1
        subject = f"{key}/tp={point.tp}"
        evidence = {"arm": subject, "fanout": ctx.request.fanout, "table": table}
        for kind, h, pid in warns:
            line = h["cap_line"] if kind == "cap" else h["ceiling_line"]
            locs = [Location(path=h["file"], line=line)] if h["file"] and line else []
            locs.append(Location(path=ctx.head_file(key), line=ctx.row_line(pid), role="primary" if not locs
                                 else "related"))
            if kind == "cap":
                title = (f"sequence cap {h['max_num_seqs']} < worst-case {h['worst_in_flight']} in flight "
                         f"(conc {h['conc']} × fan-out {ctx.request.fanout:g})")
            else:
                title = (f"capture ceiling {h['capture_ceiling']} tokens < largest decode batch "
                         f"{h['largest_decode_batch']} at conc {h['conc']}")
            findings.append(finding("launch-derivation", "warning", f"{subject}/conc={h['conc']}/{kind}", title,
                                    f"{title} ({key} tp={point.tp}); source: "
                                    f"{h['max_num_seqs_source' if kind == 'cap' else 'capture_ceiling_source']}",
                                    locations=locs, points=[point_name(ctx, pid)], evidence=evidence,
                                    template=f"launch-derivation {kind}"))
        if not warns:
            findings.append(finding("launch-derivation", "note", subject,
                                    f"{key} tp={point.tp}: cap and capture ceiling cover every concurrency",
                                    _summary(table), locations=[Location(path=ctx.head_file(key),
                                                                          line=ctx.row_line(pids[0]))],
                                    points=[], evidence=evidence, template="launch-derivation table"))
    if not tables:
        return Outcome("n/a", "no changed single-node launch to derive")
    return status_of(findings, f"{tables} arm table(s); every cap and ceiling covers the worst case")


def _arm(ctx: ReviewContext, pid: str) -> str:
    from infx.review.side import arm_of

    key, point = ctx.head.points[pid]
    return arm_of(key, point)


def point_name(ctx: ReviewContext, pid: str) -> str:
    return ctx.head.points[pid][1].exp_name


def _public(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r[k] for k in ("max_num_seqs", "max_num_seqs_source", "capture_ceiling", "capture_ceiling_source",
                              "spec_tokens", "worst_in_flight", "largest_decode_batch")}


def _summary(table: list[dict[str, Any]]) -> str:
    parts = []
    for t in table:
        h, b = t["head"], t["base"]
        was = f" (base {b['max_num_seqs']}/{b['capture_ceiling']})" if b else " (new)"
        parts.append(f"c{t['conc']}: cap {h['max_num_seqs']}, ceiling {h['capture_ceiling']}{was}")
    return "; ".join(parts)
