"""The report's telemetry section: per point, power over time (GPU per device, CPU package) and the
engine's own state over time (requests running / waiting, KV-cache usage), with the throughput window
shaded; and a table of the stored energy and engine-state figures (the ``telemetry`` table)."""

from __future__ import annotations

import csv
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from infx.engine_metrics import EngineStateSample
from infx.metrics.result import BenchResult
from infx.telemetry.engine_state import ENGINE_STATE_FILE, read_samples
from infx.telemetry.powercsv import detect_columns, gpu_sort_key, parse_power, parse_timestamp
from infx.telemetry.rapl import power_series
from infx.telemetry.session import CPU_FILE, GPU_FILE

Series = list[tuple[float, float]]


@dataclass
class PointTelemetry:
    point_id: str
    conc: int
    window: tuple[float, float] | None
    gpu: dict[str, Series] = field(default_factory=dict)
    cpu: dict[str, Series] = field(default_factory=dict)
    engine: list[EngineStateSample] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)  # the stored row (telemetry table)
    energy_ci: Any = None  # the 95 % interval of J/output token across trials, when measured


def gpu_series(path: Path) -> dict[str, Series]:
    """Per-device (t, W) from a power CSV; unparseable rows are skipped (the validation reports them)."""
    out: dict[str, Series] = {}
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.DictReader(fh, skipinitialspace=True)
        reader.fieldnames = [h.strip() for h in (reader.fieldnames or [])]
        cols = detect_columns(list(reader.fieldnames))
        if not (cols.timestamp and cols.power and cols.gpu):
            return {}
        for row in reader:
            t, w = parse_timestamp(row.get(cols.timestamp) or ""), parse_power(row.get(cols.power) or "")
            gid = (row.get(cols.gpu) or "").strip()
            if t is not None and w is not None and gid:
                out.setdefault(gid, []).append((t, w))
    return {k: sorted(out[k]) for k in sorted(out, key=gpu_sort_key)}


def load_point(point_dir: Path, point_id: str, conc: int, result: BenchResult,
               figures: dict[str, Any]) -> PointTelemetry | None:
    files = [point_dir / n for n in (GPU_FILE, CPU_FILE, ENGINE_STATE_FILE)]
    if not any(f.is_file() for f in files):
        return None
    w = result.window()
    window = (w.start, w.end) if w.duration_s > 0 else None  # shaded only when something was measured
    pt = PointTelemetry(point_id, conc, window, figures=figures)
    try:
        if files[0].is_file():
            pt.gpu = gpu_series(files[0])
        if files[1].is_file():
            pt.cpu = power_series(files[1])
        if files[2].is_file():
            pt.engine = read_samples(files[2])
    except (OSError, ValueError, KeyError, csv.Error):
        return pt
    return pt


def point_figure(pt: PointTelemetry) -> go.Figure:
    t0 = pt.window[0] if pt.window else min([s[0][0] for s in (*pt.gpu.values(), *pt.cpu.values()) if s]
                                            + [s.t for s in pt.engine] or [0.0])
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("Power (W)", "Requests (engine)", "KV-cache usage (%)"))
    for gid, s in pt.gpu.items():
        fig.add_trace(go.Scatter(x=[t - t0 for t, _ in s], y=[w for _, w in s], mode="lines+markers",
                                 name=f"GPU {gid}"), row=1, col=1)
    for zone, s in pt.cpu.items():
        fig.add_trace(go.Scatter(x=[t - t0 for t, _ in s], y=[w for _, w in s], mode="lines+markers",
                                 name=f"CPU {zone}"), row=1, col=1)
    xs = [s.t - t0 for s in pt.engine]
    for name, attr in (("running", "running"), ("waiting", "waiting")):
        fig.add_trace(go.Scatter(x=xs, y=[getattr(s, attr) for s in pt.engine], mode="lines+markers", name=name,
                                 line=dict(shape="hv")), row=2, col=1)
    fig.add_trace(go.Scatter(x=xs, y=[None if s.kv_usage is None else 100 * s.kv_usage for s in pt.engine],
                             mode="lines+markers", name="KV usage", line=dict(shape="hv")), row=3, col=1)
    if pt.window:
        for row in (1, 2, 3):
            fig.add_vrect(x0=0, x1=pt.window[1] - t0, fillcolor="#2ca02c", opacity=0.08, line_width=0, row=row, col=1)
    fig.update_layout(template="plotly_white", height=620, margin=dict(l=60, r=20, t=60, b=50),
                      title=f"{pt.point_id} (conc {pt.conc}): telemetry, throughput window shaded",
                      xaxis3_title="seconds from the window's start")
    return fig


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1e-2 else f"{v:,.{digits}f}"
    return html.escape(str(v))


def _energy_ci(e: Any) -> str:
    """J/output token's 95 % interval across trials, as +-% and its bounds."""
    if e is None or not e.mean:
        return ""
    half = (e.hi - e.lo) / 2 / abs(e.mean) * 100
    return (f'<br><small class="ci">&plusmn;{half:.1f}% [{_fmt(e.lo, 6)}, {_fmt(e.hi, 6)}] '
            f"({e.n} trials)</small>")


def figures_table(points: list[PointTelemetry]) -> str:
    head = ("<tr><th>point</th><th>conc</th><th>power valid</th><th>J / output token</th><th>avg W / GPU</th>"
            "<th>CPU J / output token</th><th>running (mean / max)</th><th>waiting max</th><th>KV max</th>"
            "<th>preemptions</th><th>prefix hit rate (measured / trace)</th></tr>")
    rows = []
    for pt in points:
        f = pt.figures
        reasons = json.loads(f.get("power_reasons_json") or "[]")
        valid = "yes" if f.get("power_valid") else ("no: " + html.escape(", ".join(reasons)) if reasons else "no")
        rows.append(
            f"<tr><td><code>{html.escape(pt.point_id)}</code></td><td>{pt.conc}</td><td>{valid}</td>"
            f"<td>{_fmt(f.get('joules_per_output_token'), 6)}{_energy_ci(pt.energy_ci)}</td>"
            f"<td>{_fmt(f.get('avg_power_w'))}</td>"
            f"<td>{_fmt(f.get('cpu_joules_per_output_token'), 6)}</td>"
            f"<td>{_fmt(f.get('running_mean'), 1)} / {_fmt(f.get('running_max'), 0)}</td>"
            f"<td>{_fmt(f.get('waiting_max'), 0)}</td><td>{_fmt(f.get('kv_usage_max'))}</td>"
            f"<td>{_fmt(f.get('preemptions'), 0)}</td>"
            f"<td>{_fmt(f.get('prefix_cache_hit_rate'))} / {_fmt(f.get('theoretical_prefix_hit_rate'))}</td></tr>")
    return f'<table class="points">{head}{"".join(rows)}</table>'
