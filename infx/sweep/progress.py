"""Sweep progress: a live rich display on a terminal (groups, points done/failed/remaining, the current
point's req/s and tok/s, ETA) and a final table; plain timestamped lines when stderr is not a TTY."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from infx.sweep import events as ev
from infx.sweep.layout import RunDir, read_eval_status


class Progress:
    """Callable event sink. Use as a context manager around the sweep."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None):
        self.stream = stream or sys.stderr
        self.console = Console(file=self.stream, stderr=stream is None)
        self.live_mode = self.console.is_terminal if live is None else live
        self.t0 = time.monotonic()
        self.groups_total = self.groups_done = 0
        self.points_total = self.to_run = self.done = self.failed = self.reused = 0
        self.current: str | None = None
        self.current_group: str | None = None
        self.req_s = self.tok_s = 0.0
        self.point_times: list[float] = []
        self._point_t0 = 0.0
        self._live: Live | None = None

    # context -------------------------------------------------------------------------------
    def __enter__(self) -> Progress:
        if self.live_mode:
            self._live = Live(self._render(), console=self.console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None

    # events --------------------------------------------------------------------------------
    def __call__(self, e: ev.Event) -> None:
        msg: str | None = None
        if isinstance(e, ev.RunStarted):
            self.groups_total, self.points_total, self.to_run = e.groups, e.points, e.to_run
            self.reused = e.reused
            msg = (f"sweep: {e.points} point(s): {e.reused} already measured, {e.previously_failed} failed before"
                   + (" (--rerun-failed retries them)" if e.previously_failed else "")
                   + (f", {e.skipped} rejected by the gate" if e.skipped else "")
                   + f"; {e.to_run} to run in {e.groups} launch group(s)")
            if e.to_run == 0:
                msg += ": nothing to do"
        elif isinstance(e, ev.GroupStarted):
            self.current_group = e.fingerprint[:12]
            msg = f"group {e.fingerprint[:12]}: launching {e.engine or 'engine'} for {len(e.point_ids)} point(s)"
        elif isinstance(e, ev.GroupReady):
            secs = f"{e.startup_seconds:.1f}s" if e.startup_seconds is not None else "?"
            msg = f"group {e.fingerprint[:12]}: ready in {secs} (engine {e.engine_version or 'version unknown'})"
        elif isinstance(e, ev.GroupFailed):
            msg = f"group {e.fingerprint[:12]}: FAILED {e.reason}: {e.detail}"
        elif isinstance(e, ev.GroupFinished):
            self.groups_done += 1
            self.current_group = None
            msg = f"group {e.fingerprint[:12]}: {e.state}" + (f" ({e.reason})" if e.reason else "")
        elif isinstance(e, ev.PointStarted):
            self.current, self.req_s, self.tok_s = e.point_id, 0.0, 0.0
            self._point_t0 = time.monotonic()
            msg = f"point {e.point_id}: measuring at concurrency {e.conc}"
        elif isinstance(e, ev.PointProgress):
            self.req_s, self.tok_s = e.stats.req_per_s, e.stats.tok_per_s
        elif isinstance(e, ev.PointFinished):
            if e.state == "done":
                self.done += 1
                self.point_times.append(time.monotonic() - self._point_t0)
                msg = f"point {e.point_id}: done  {e.req_per_s or 0:.2f} req/s  {e.tok_per_s or 0:.1f} tok/s"
            else:
                self.failed += e.state != "interrupted"
                msg = f"point {e.point_id}: {e.state.upper()} {e.reason or ''}"
            self.current = None
        elif isinstance(e, ev.EvalFinished):
            msg = f"point {e.point_id}: eval {e.state}" + (f" ({e.reason})" if e.reason else "")
        elif isinstance(e, ev.Note):
            msg = e.message
        elif isinstance(e, ev.RunFinished):
            s = e.summary
            msg = (f"sweep finished in {time.monotonic() - self.t0:.1f}s: {len(s.done)} done, {len(s.failed)} failed,"
                   f" {len(s.skipped)} skipped, {len(s.reused)} reused, {len(s.not_run)} not run;"
                   f" {s.launches} launch(es), {s.startup_seconds:.1f}s engine start-up")
        if msg:
            self._line(msg)
        if self._live is not None:
            self._live.update(self._render())

    # rendering -----------------------------------------------------------------------------
    def eta_seconds(self) -> float | None:
        if not self.point_times:
            return None
        remaining = self.to_run - self.done - self.failed
        return max(0.0, remaining * sum(self.point_times) / len(self.point_times))

    def _line(self, msg: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        if self._live is not None:
            self._live.console.print(f"[dim]{stamp}[/dim] {msg}", highlight=False, markup=True)
        else:
            print(f"{stamp} {msg}", file=self.stream, flush=True)

    def _render(self) -> Group:
        remaining = self.to_run - self.done - self.failed
        eta = self.eta_seconds()
        head = Text.assemble(
            ("groups ", "bold"), f"{self.groups_done}/{self.groups_total}  ",
            ("points ", "bold"), (f"{self.done} done", "green"), "  ", (f"{self.failed} failed", "red"),
            f"  {remaining} remaining  {self.reused} reused",
            f"  ETA {eta:.0f}s" if eta is not None else "",
        )
        cur = Text(f"current: {self.current}  {self.req_s:.2f} req/s  {self.tok_s:.1f} tok/s" if self.current
                   else (f"launching group {self.current_group}" if self.current_group else ""))
        return Group(head, cur)


def results_table(run_dir: RunDir, point_ids: list[str] | None = None) -> Table:
    """Final table: one row per point with state, throughput and latency medians or the failure."""
    t = Table(title=f"run {run_dir.run_id}", show_lines=False)
    for col in ("point", "conc", "state", "req/s", "out tok/s", "TTFT p50 ms", "TPOT p50 ms", "reason"):
        t.add_column(col, justify="right" if col not in ("point", "state", "reason") else "left",
                     no_wrap=col in ("point", "state"), min_width=12 if col == "point" else None)
    ids = point_ids if point_ids is not None else run_dir.results.points(run_dir.run_id)
    for pid in ids:
        st = run_dir.read_status(pid)
        pf = run_dir.read_point(pid)
        conc = str(pf.point.get("conc", "")) if pf else ""
        if st is None:
            t.add_row(pid, conc, "pending", "", "", "", "", "")
            continue
        res = run_dir.read_result(pid) if st.state == "done" else None
        ev_st = read_eval_status(run_dir.point_dir(pid))
        eval_note = f"eval {ev_st.state}" + (f": {ev_st.reason}" if ev_st.reason else "") if ev_st else ""
        if res is None and ev_st is not None and st.state == "done":
            t.add_row(pid, conc, "[green]done[/green]", "", "", "", "", eval_note[:80])
        elif res is not None:
            m = res.metrics
            t.add_row(pid, conc, "[green]done[/green]", f"{m.throughput.request_per_s:.2f}",
                      f"{m.throughput.output_tok_per_s:.1f}", _fmt(m.ttft_ms.median), _fmt(m.tpot_ms.median),
                      eval_note[:80])
        else:
            colour = "red" if st.state == "failed" else "yellow"
            t.add_row(pid, conc, f"[{colour}]{st.state}[/{colour}]", "", "", "", "",
                      f"{st.failure_class or ''} {st.reason}".strip()[:80])
    return t


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.1f}"
