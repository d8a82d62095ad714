"""The engine's own state over time: its Prometheus ``/metrics`` page scraped once a second (the scrape
and its parser are :mod:`infx.engine_metrics`) in a process of its own, the samples as JSON lines, and
their summary over the benchmark window."""

from __future__ import annotations

import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

from infx.engine_metrics import COUNTERS, EngineStateSample, scrape_once
from infx.metrics.sections import EngineStateSummary
from infx.telemetry.models import BenchWindow

ENGINE_STATE_FILE = "engine_state.jsonl"


class EngineStateScraper:
    """The scrape loop in a process of its own (``python -m infx.telemetry.engine_state``), so neither the
    scrapes nor the parsing ever hold the load generator's interpreter. It scrapes once before saying it is
    ready, then once per interval, then once more when stopped (so the window is bracketed), appending one
    JSON line per sample to ``engine_state.jsonl``."""

    def __init__(self, url: str, out: Path, interval_s: float = 1.0, timeout_s: float = 2.0):
        self.url, self.out, self.interval_s, self.timeout_s = url, out, interval_s, timeout_s
        self.proc: subprocess.Popen[str] | None = None
        self.errors = 0

    def start(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-m", "infx.telemetry.engine_state", self.url, str(self.out),
                                      str(self.interval_s), str(self.timeout_s)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 30.0)
        if ready:
            self.proc.stdout.readline()  # "ready": the first scrape is done (or failed)

    def latest(self) -> EngineStateSample | None:
        """The newest sample written so far (the live progress display follows the scrape loop instead
        of reading ``/metrics`` a second time): the last whole line of the file's tail."""
        try:
            with self.out.open("rb") as fh:
                fh.seek(max(0, fh.seek(0, 2) - 4096))
                lines = fh.read().split(b"\n")
        except OSError:
            return None
        for line in reversed(lines):
            try:
                return EngineStateSample.model_validate_json(line)
            except ValueError:  # the line being written, or the tail's cut first line
                continue
        return None

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=self.timeout_s + 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        for line in (out or "").splitlines():
            if line.startswith("errors "):
                self.errors = int(line.split()[1])


def agent(url: str, out: Path, interval_s: float, timeout_s: float) -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    errors = 0
    with out.open("w", encoding="utf-8") as fh:
        def one() -> None:
            nonlocal errors
            s = scrape_once(url, timeout_s)
            if s is None:
                errors += 1
            else:
                fh.write(s.model_dump_json(exclude_none=True) + "\n")
                fh.flush()

        one()
        print("ready", flush=True)
        while not stop.wait(interval_s):
            one()
        one()
    print(f"errors {errors}", flush=True)


def read_samples(path: Path) -> list[EngineStateSample]:
    from infx import jsonio

    return list(jsonio.iter_models(path, EngineStateSample, what="engine-state file"))


def summarise(samples: list[EngineStateSample], window: BenchWindow | None) -> EngineStateSummary:
    samples = sorted(samples, key=lambda s: s.t)
    if window is None:
        return EngineStateSummary(samples=len(samples), samples_in_window=0)
    start, end = window.start_time_unix, window.end_time_unix
    inside = [s for s in samples if start <= s.t <= end]
    out: dict[str, float | None] = {}
    for name in ("running", "waiting", "kv_usage"):
        vals = [getattr(s, name) for s in inside if getattr(s, name) is not None]
        out[f"{name}_mean"] = sum(vals) / len(vals) if vals else None
        out[f"{name}_max"] = max(vals) if vals else None
    for name in COUNTERS:
        out[name] = counter_delta([(s.t, s.t_done if s.t_done is not None else s.t, getattr(s, name))
                                   for s in samples if getattr(s, name) is not None], start, end)
    q, h = out["prefix_queries"], out["prefix_hits"]
    out["prefix_cache_hit_rate"] = h / q if (q is not None and h is not None and q > 0) else None
    return EngineStateSummary(samples=len(samples), samples_in_window=len(inside), **out)


def counter_delta(series: list[tuple[float, float, float]], start: float, end: float) -> float | None:
    """Counter increase from the last scrape served before the start (arrived <= start) to the first served
    after the end (sent >= end); None unless both exist. ``series``: (sent, arrived, value). A scrape sent
    before the start but served after it would count measured work in the 'before' value. No load runs
    after the window, so the end is exact; the start may include up to one interval of the warmup's tail."""
    before = [v for _, done, v in series if done <= start]
    after = [v for sent, _, v in series if sent >= end]
    if not before or not after:
        return None
    return after[0] - before[-1]


if __name__ == "__main__":
    agent(sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
