"""The live progress bar of ``infx bench``: requests (or seconds) done, req/s, tok/s, errors and requests
in flight, refreshed about four times a second by the measured phase's ticker, off the hot path."""

from __future__ import annotations

from infx.loadgen.drive import Counters


class Progress:
    """Rich progress bar with live req/s, tok/s and errors. ``unit`` ``"req"``: ``total`` requests;
    ``"s"``: a measurement of ``total`` seconds."""

    def __init__(self, total: float, unit: str) -> None:
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        self._unit = unit
        self._p = RichProgress(
            TextColumn("[bold]bench"),
            BarColumn(),
            TextColumn("{task.completed:.0f}/{task.total:.0f} " + unit),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            transient=False,
            auto_refresh=False,
        )
        self._task = self._p.add_task("bench", total=total, rate="")
        self._p.start()

    def update(self, c: Counters, elapsed_s: float) -> None:
        done = c.completed + c.failed
        rps = done / elapsed_s if elapsed_s > 0 else 0.0
        tps = c.output_tokens / elapsed_s if elapsed_s > 0 else 0.0
        completed = elapsed_s if self._unit == "s" else done
        self._p.update(
            self._task,
            completed=completed,
            rate=f"{rps:7.1f} req/s {tps:9.0f} tok/s  errors {c.failed}  in flight {c.issued - done}",
        )
        self._p.refresh()

    def close(self) -> None:
        self._p.stop()
