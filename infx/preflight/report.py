"""Rich tables for ``infx preflight``: one per point (checks + memory breakdown), then a summary."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from infx.preflight.units import gb, gib
from infx.preflight.verdict import MemoryReport, PointVerdict

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
    parts: list = [head, t]
    if v.memory is not None and (v.memory.gpu or v.memory.host):
        parts.append(memory_table(v.memory))
        findings = [f for f in v.memory.findings]
        if findings:
            parts.append(Text("\n".join("  - " + f for f in findings), style="dim"))
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


def print_report(verdicts: Sequence[PointVerdict], console: Console | None = None, *, details: bool = True) -> None:
    console = console or Console()
    if details:
        for v in verdicts:
            console.print(point_panel(v))
    console.print(summary_table(verdicts))
    n = {s: sum(1 for v in verdicts if v.status == s) for s in ("ok", "warn", "fail")}
    console.print(f"{len(verdicts)} points: {n['ok']} ok, {n['warn']} warn, {n['fail']} fail"
                  + ("  (* = estimate)" if any(v.memory and any(x.estimate for x in v.memory.gpu + v.memory.host) for v in verdicts) else ""))
