"""Rich tables for ``infx preflight``: one per point (checks + memory breakdown), then a summary."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from infx.preflight.units import gb, gib
from infx.preflight.verdict import MemoryReport, PointVerdict, worst

STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def _status(s: str) -> Text:
    return Text(s.upper(), style=STYLE.get(s, ""))


def _num(n: int) -> str:
    """GB with one decimal; more digits for small values (the tiny model is a few MB)."""
    return f"{n / 1e9:.1f}" if abs(n) >= 1e8 or n == 0 else f"{n / 1e9:.4f}"


def memory_table(m: MemoryReport) -> Table:
    per = "per server, host memory" if m.device == "cpu" else f"per GPU, {m.device} {gb(m.capacity_bytes)}"
    t = Table(title=f"memory ({per})", title_justify="left", show_edge=False, pad_edge=False)
    t.add_column("component")
    t.add_column("GB", justify="right")
    t.add_column("where")
    t.add_column("how")
    lines = m.gpu if m.device != "cpu" else m.host
    for line in lines:
        t.add_row(line.component + (" *" if line.estimate else ""), _num(line.bytes), line.where, line.note)
    t.add_section()
    t.add_row("needed", f"{m.needed_bytes / 1e9:.1f}", "", "")
    t.add_row("budget", f"{m.budget_bytes / 1e9:.1f}", "", m.engine_rule)
    style = "red" if m.margin_bytes < 0 else ""
    kv = ""
    if m.kv_pool_bytes is not None and m.device != "cpu":
        kv = f"KV pool {gb(m.kv_pool_bytes)}"
    if m.kv_tokens is not None:
        kv += f"{'; ' if kv else ''}{m.kv_tokens:,} tokens ({m.kv_bytes_per_token:,} B/token)"
        if m.seqs_fit is not None and m.seq_len:
            kv += f"; {m.seqs_fit:.1f} sequences of {m.seq_len:,} tokens"
    t.add_row(Text("margin", style=style), Text(f"{m.margin_bytes / 1e9:.1f}", style=style), "", kv)
    if m.device != "cpu" and m.host:
        t.add_section()
        for line in m.host:
            t.add_row(line.component + (" *" if line.estimate else ""), f"{line.bytes / 1e9:.1f}", "host", line.note)
        if m.servers_per_node:
            avail = f" of {gib(m.host_available_bytes)} node DRAM" if m.host_available_bytes else ""
            t.add_row("host per node", f"{(m.host_per_node_bytes or 0) / 1e9:.1f}", "host",
                      f"{gib(m.host_per_server_bytes)} per server x {m.servers_per_node} servers per node{avail}")
    return t


def point_panel(v: PointVerdict) -> Group:
    head = Text.assemble((v.exp_name, "bold"), f"  [{v.point_id}]  ", _status(v.status),
                         (f"  {v.config_key}" if v.config_key else "", "dim"))
    t = Table(show_edge=False, pad_edge=False, box=None)
    t.add_column("check")
    t.add_column("status")
    t.add_column("detail", overflow="fold")
    for c in v.checks:
        t.add_row(c.name, _status(c.status), c.message)
    parts: list[RenderableType] = [head, t]
    reports: list[tuple[str, MemoryReport]] = []
    if v.memory is not None:
        reports.append(("", v.memory))
    for c in v.checks:  # a deployment: one breakdown per worker role
        raw = c.details.get("memory") if c.name.startswith("memory:") else None
        if isinstance(raw, dict):
            reports.append((c.name.split(":", 1)[1], MemoryReport.model_validate(raw)))
    for role, m in reports:
        if not (m.gpu or m.host):
            continue
        table = memory_table(m)
        if role:
            table.title = f"{role}: {table.title}"
        parts.append(table)
        if m.findings:
            parts.append(Text("\n".join("  - " + f for f in m.findings), style="dim"))
    parts.append(Text(""))
    return Group(*parts)


def summary_table(verdicts: Sequence[PointVerdict]) -> Table:
    t = Table(title="preflight summary", title_justify="left")
    t.add_column("point")
    t.add_column("status")
    t.add_column("needed/GPU", justify="right")
    t.add_column("budget", justify="right")
    t.add_column("margin", justify="right")
    t.add_column("reason", overflow="fold")
    for v in verdicts:
        m = v.memory
        t.add_row(v.exp_name, _status(v.status),
                  f"{m.needed_bytes / 1e9:.1f}" if m and m.budget_bytes else "-",
                  f"{m.budget_bytes / 1e9:.1f}" if m and m.budget_bytes else "-",
                  f"{m.margin_bytes / 1e9:.1f}" if m and m.budget_bytes else "-",
                  v.reason)
    return t


_NUMBER = re.compile(r"(?<![\w.])\d[\d,._]*(?:\s?(?:GB|MB|GiB|TB|%))?(?![\w])")
_ROLE = re.compile(r"^\w+ x\d+ \([^)]*\):\s*")
_POINT_ID = re.compile(r"\bpoint [0-9a-f]{8,}\b")
# "(model-prefix=..., hardware=...)": one row per reason, not per field set
_FIELDS = re.compile(r"\s*\([^()]*=[^()]*\)")


def reason_key(check: str, message: str) -> str:
    """A reason with its figures folded (``KV pool 12.3 GB holds 4,096 tokens`` -> ``KV pool N holds N
    tokens``), so rows that fail for the same reason count together; quoted names (models, runners)
    are kept, as they say which family or fleet the reason is about. Only the first clause is kept."""
    head = message.split("; ")[0]
    head = _ROLE.sub("", head)  # "prefill x4 (8 GPU each): " -> the role is in the check name
    head = _FIELDS.sub("", _POINT_ID.sub("point", head))
    return f"{check}: " + _NUMBER.sub("N", head).rstrip(":; ")


def reason_counts(verdicts: Sequence[PointVerdict]) -> list[tuple[str, str, int, str]]:
    """(status, reason, rows, example exp-name), worst status first, then most rows. Every failing or
    warning check of a row counts once under its reason; a row with neither counts under ``ok``."""
    counts: Counter[tuple[str, str]] = Counter()
    example: dict[tuple[str, str], str] = {}
    for v in verdicts:
        seen: set[tuple[str, str]] = set()
        bad = [c for c in v.checks if c.status in ("fail", "warn")]
        for c in bad:
            k = (c.status, reason_key(c.name, c.message))
            if k not in seen:
                seen.add(k)
                counts[k] += 1
                example.setdefault(k, v.exp_name)
        if not bad:
            k = ("ok", "every check passed")
            counts[k] += 1
            example.setdefault(k, v.exp_name)
    rank = {"fail": 0, "warn": 1, "ok": 2}
    return [(st, why, n, example[(st, why)]) for (st, why), n in
            sorted(counts.items(), key=lambda kv: (rank[kv[0][0]], -kv[1], kv[0][1]))]


def verdict_table(verdicts: Sequence[PointVerdict], limit: int = 40) -> Table:
    """The whole run in one table: rows per verdict, then each reason with the rows it covers."""
    n = {s: sum(1 for v in verdicts if v.status == s) for s in ("ok", "warn", "fail")}
    t = Table(title=f"verdicts: {len(verdicts)} rows = {n['ok']} ok, {n['warn']} warn, {n['fail']} fail",
              title_justify="left")
    t.add_column("status")
    t.add_column("rows", justify="right")
    t.add_column("reason", overflow="fold")
    t.add_column("e.g.", overflow="fold", style="dim")
    rows = reason_counts(verdicts)
    for st, why, count, ex in rows[:limit]:
        t.add_row(_status(st), str(count), why, ex)
    if len(rows) > limit:
        rest = rows[limit:]
        t.add_row("", str(sum(r[2] for r in rest)), f"... {len(rest)} more reasons (--json for every row)", "")
    return t


def memory_coverage(verdicts: Sequence[PointVerdict]) -> dict[str, int]:
    """Rows by memory verdict: ``ok``/``warn``/``fail`` (checked, single server or every role), ``unverifiable``
    (no model or hardware card), ``not checked`` (no launch to read, or the check does not apply)."""
    out = {"ok": 0, "warn": 0, "fail": 0, "unverifiable": 0, "not checked": 0}
    for v in verdicts:
        mem = [c for c in v.checks if (c.name == "memory" or c.name.startswith("memory:")) and c.status != "skip"]
        if not mem:
            out["not checked"] += 1
        elif any("memory unverifiable" in c.message for c in mem):
            out["unverifiable"] += 1
        else:
            out[worst([c.status for c in mem])] += 1
    return out


def print_report(verdicts: Sequence[PointVerdict], console: Console | None = None, *, details: bool = True) -> None:
    console = console or Console()
    if details:
        for v in verdicts:
            console.print(point_panel(v))
    console.print(summary_table(verdicts))
    console.print(verdict_table(verdicts))
    mc = memory_coverage(verdicts)
    checked = mc["ok"] + mc["warn"] + mc["fail"]
    console.print(f"memory: {checked} of {len(verdicts)} rows checked ({mc['ok']} ok, {mc['warn']} warn, "
                  f"{mc['fail']} fail), {mc['unverifiable']} unverifiable (no card), "
                  f"{mc['not checked']} not checked (no launch to read)")
    n = {s: sum(1 for v in verdicts if v.status == s) for s in ("ok", "warn", "fail")}
    estimates = any(v.memory and any(x.estimate for x in v.memory.gpu + v.memory.host) for v in verdicts)
    console.print(f"{len(verdicts)} points: {n['ok']} ok, {n['warn']} warn, {n['fail']} fail"
                  + ("  (* = estimate)" if estimates else ""))
