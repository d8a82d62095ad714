"""CPU package energy from the Linux powercap (RAPL) counters: ``<root>/intel-rapl:N/energy_uj`` of each
top-level zone whose ``name`` starts with ``package`` (sub-zones are parts of a package and would count
twice). Counters wrap at ``max_energy_range_uj``; a decrease is a wrap. The sampler reads every zone once
per interval into ``cpu_energy.csv`` (``timestamp_unix,zone,energy_uj,max_energy_range_uj``); the energy
over the window is the unwrapped counter interpolated at both ends, with the same bracketing and 3 s gap
rules as GPU power."""

from __future__ import annotations

import csv
import re
import threading
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from infx.atomic import write_text
from infx.metrics.sections import CpuEnergy
from infx.telemetry.energy import Series, value_at, window_gap
from infx.telemetry.models import MAX_SAMPLE_GAP_S, BenchWindow
from infx.telemetry.reasons import Reason, add

DEFAULT_ROOT = "/sys/class/powercap"
_TOP_ZONE = re.compile(r"^intel-rapl:\d+$")
HEADER = "timestamp_unix,zone,energy_uj,max_energy_range_uj\n"


@dataclass(frozen=True)
class Zone:
    name: str  # e.g. package-0
    path: Path
    max_range_uj: int


def package_zones(root: str | Path = DEFAULT_ROOT) -> list[Zone]:
    base = Path(root)
    if not base.is_dir():
        return []
    zones = []
    for d in sorted(base.iterdir()):
        if not _TOP_ZONE.match(d.name):
            continue
        try:
            name = (d / "name").read_text().strip()
            max_range = int((d / "max_energy_range_uj").read_text().strip())
        except (OSError, ValueError):
            continue
        if name.startswith("package"):
            zones.append(Zone(name, d / "energy_uj", max_range))
    return zones


def unwrap(readings: list[tuple[float, int]], max_range_uj: int) -> Series:
    """(t, counter uJ) -> (t, cumulative J since the first reading), adding the range at each wrap."""
    out: Series = []
    total = 0
    prev: int | None = None
    for t, value in readings:
        if prev is not None:
            delta = value - prev
            total += delta if delta >= 0 else delta + max_range_uj
        prev = value
        out.append((t, total / 1e6))
    return out


class RaplSampler:
    """A daemon thread reading the package counters once per interval (the reads are tiny sysfs files)."""

    def __init__(self, out: Path, root: str | Path = DEFAULT_ROOT, interval_s: float = 1.0):
        self.out, self.interval_s = out, interval_s
        self.zones = package_zones(root)
        self.rows: list[str] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="infx-rapl", daemon=True)

    def sample(self) -> None:
        for z in self.zones:
            try:
                value = int(z.path.read_text().strip())
            except (OSError, ValueError) as exc:  # e.g. energy_uj is root-only on recent kernels
                self.error = f"{z.path}: {exc.__class__.__name__}"
                continue
            self.rows.append(f"{time.time():.6f},{z.name},{value},{z.max_range_uj}\n")

    def start(self) -> None:
        if self.zones:
            self.sample()
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> None:
        if self.zones:
            self._stop.set()
            self._thread.join(timeout=5)
            self.sample()  # one reading after the window's end
            write_text(self.out, HEADER + "".join(self.rows))


def read_energy_csv(path: Path) -> dict[str, tuple[list[tuple[float, int]], int]]:
    zones: dict[str, tuple[list[tuple[float, int]], int]] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            readings, _ = zones.setdefault(row["zone"], ([], int(row["max_energy_range_uj"])))
            readings.append((float(row["timestamp_unix"]), int(row["energy_uj"])))
    return zones


def cpu_energy(path: Path, window: BenchWindow | None, *, max_gap_s: float = MAX_SAMPLE_GAP_S,
               unreadable: str | None = None) -> CpuEnergy:
    """Package energy over the window (sum over packages); never a number from invalid samples."""
    reasons: list[str] = []
    if window is None:
        return CpuEnergy(valid=False, reasons=[Reason.INVALID_BENCHMARK_WINDOW])
    if unreadable:
        add(reasons, Reason.POWERCAP_UNREADABLE)
    if not path.is_file():
        add(reasons, Reason.POWERCAP_MISSING)
        return CpuEnergy(valid=False, reasons=reasons)
    try:
        zones = read_energy_csv(path)
    except (OSError, ValueError, KeyError, csv.Error):
        add(reasons, Reason.TELEMETRY_FILE_UNREADABLE)
        return CpuEnergy(valid=False, reasons=reasons)
    if not zones:
        add(reasons, Reason.INSUFFICIENT_ENERGY_SAMPLES)
    start, end = window.start_time_unix, window.end_time_unix
    per_zone: dict[str, float] = {}
    counts: dict[str, int] = {}
    gaps: dict[str, float] = {}
    for name, (readings, max_range) in zones.items():
        series = unwrap(sorted(readings), max_range)
        counts[name] = len(series)
        if len(series) < 2:
            add(reasons, Reason.INSUFFICIENT_ENERGY_SAMPLES)
            continue
        if series[0][0] > start or series[-1][0] < end:
            add(reasons, Reason.BENCHMARK_WINDOW_NOT_BRACKETED)
            continue
        gaps[name] = window_gap(series, start, end)
        if gaps[name] > max_gap_s:
            add(reasons, Reason.SAMPLING_GAP_EXCEEDED)
        per_zone[name] = value_at(series, end) - value_at(series, start)
    out = CpuEnergy(valid=not reasons, reasons=reasons, zones=sorted(zones), per_zone_sample_counts=counts,
                    per_zone_max_sample_gap_s=gaps)
    if reasons:
        return out
    total = sum(per_zone.values())
    return out.model_copy(update={
        "per_zone_energy_j": per_zone, "cpu_energy_j": total,
        "cpu_avg_power_w": total / window.integration_duration_s,
        "cpu_joules_per_output_token": total / window.total_output_tokens if window.total_output_tokens else None})


def power_series(path: Path) -> dict[str, Series]:
    """Average package power between consecutive readings (W), stamped at each interval's midpoint."""
    out: dict[str, Series] = {}
    for name, (readings, max_range) in read_energy_csv(path).items():
        series = unwrap(sorted(readings), max_range)
        out[name] = [((t0 + t1) / 2, (e1 - e0) / (t1 - t0)) for (t0, e0), (t1, e1) in pairwise(series) if t1 > t0]
    return out
