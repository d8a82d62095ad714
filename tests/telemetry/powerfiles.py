"""Sample power files in the real tools' formats (nvidia-smi: header units, "412.34 W" cells, local-time
stamps; amd-smi: bare numbers, ISO/epoch stamps), built around a fixed window."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

T0 = 1_767_225_600.0  # the window starts here (unix s)
NV_HEADER = ("timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm [MHz], "
             "clocks.current.memory [MHz], utilization.gpu [%], utilization.memory [%]\n")


def smi_time(t: float) -> str:
    """nvidia-smi's stamp: local wall time, milliseconds."""
    return datetime.fromtimestamp(t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def nv_row(t: float, gpu: str, power: str) -> str:
    return f"{smi_time(t)}, {gpu}, {power}, 45, 1980 MHz, 2619 MHz, 97 %, 40 %\n"


def nvidia_csv(path: Path, samples: dict[str, list[tuple[float, float | str]]], header: str = NV_HEADER,
               extra: str = "") -> Path:
    """samples: gpu -> [(offset from T0, watts or a raw cell)], interleaved by time as nvidia-smi writes."""
    rows = sorted(((T0 + off, gpu, v if isinstance(v, str) else f"{v:.2f} W")
                   for gpu, ss in samples.items() for off, v in ss), key=lambda r: (r[0], r[1]))
    path.write_text(header + "".join(nv_row(*r) for r in rows) + extra)
    return path


# The pinned hand-computed case: window [T0, T0 + 2] s.
# GPU 0: (-0.5, 100) (0.5, 200) (1.5, 300) (2.5, 100): boundary powers 150 W and 200 W;
#        0.5*(150+200)/2 + 1*(200+300)/2 + 0.5*(300+200)/2 = 87.5 + 250 + 125 = 462.5 J
# GPU 1: 50 W throughout: 100 J.   Total 562.5 J over 2 s.
PINNED = {"0": [(-0.5, 100.0), (0.5, 200.0), (1.5, 300.0), (2.5, 100.0)],
          "1": [(-0.5, 50.0), (0.5, 50.0), (1.5, 50.0), (2.5, 50.0)]}
PINNED_WINDOW = dict(start=T0, end=T0 + 2.0, duration=2.0, completed=10, input_tokens=1000, output_tokens=500)
PINNED_METRICS = {"total_gpu_energy_j": 562.5, "avg_total_gpu_power_w": 281.25, "avg_power_w": 140.625,
                  "joules_per_successful_query": 56.25, "joules_per_input_token": 0.5625,
                  "joules_per_output_token": 1.125, "joules_per_total_token": 0.375}


FAKE_SMI = Path(__file__).with_name("fake_smi.py")


def install_fake_tools(bin_dir: Path, names: tuple[str, ...] = ("nvidia-smi",)) -> Path:
    """Executables named like the real tools (no GPU can exist here) that print their formats over time;
    the caller puts ``bin_dir`` on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        exe = bin_dir / name
        exe.write_text(f"#!{sys.executable}\n" + FAKE_SMI.read_text())
        exe.chmod(0o755)
    return bin_dir
