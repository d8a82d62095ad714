"""Fake ``nvidia-smi`` / ``amd-smi`` (no GPU can exist on the test machine): print the real tools' CSV
formats over time. GPU ``i`` draws ``100 + 10 * i`` W. Tests install it on PATH under both names."""

from __future__ import annotations

import os
import signal
import sys
import time
from datetime import datetime


def nv_rows(ids: list[str]) -> str:
    stamp = datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]  # local time, like nvidia-smi
    return "".join(f"{stamp}, {i}, {100 + 10 * int(i):.2f} W, 45, 1980 MHz, 2619 MHz, 97 %, 40 %\n" for i in ids)


# ``nvidia-smi -q`` as the real tool lays it out (a banner, driver facts, then one indented block per GPU with
# nested sections); two H200s, GPU i on bus 0000000{i+1}:00.0 (values from an H200's datasheet figures)
NV_Q_GPU = """GPU 00000000:{bus:02X}:00.0
    Product Name                          : NVIDIA H200
    Product Brand                         : NVIDIA
    Product Architecture                  : Hopper
    Display Mode                          : Disabled
    Persistence Mode                      : Enabled
    Minor Number                          : {i}
    Serial Number                         : 165202400{i}
    GPU UUID                              : GPU-8c4f0e1a-0000-4000-8000-00000000000{i}
    VBIOS Version                         : 96.00.99.00.01
    PCI
        Bus                               : 0x{bus:02X}
        Bus Id                            : 00000000:{bus:02X}:00.0
    FB Memory Usage
        Total                             : 143771 MiB
        Reserved                          : 551 MiB
        Used                              : {used} MiB
        Free                              : {free} MiB
    BAR1 Memory Usage
        Total                             : 131072 MiB
    Temperature
        GPU Current Temp                  : {temp} C
    GPU Power Readings
        Power Draw                        : {power:.2f} W
        Current Power Limit               : 700.00 W
        Default Power Limit               : 700.00 W
        Max Power Limit                   : 700.00 W
    Clocks
        Graphics                          : {clock} MHz
        SM                                : {clock} MHz
        Memory                            : 2619 MHz
    Max Clocks
        Graphics                          : 1980 MHz
        SM                                : 1980 MHz
        Memory                            : 2619 MHz
        Video                             : 1965 MHz
"""


def nvidia_q() -> None:
    """``nvidia-smi -q``: dynamic readings (temperature, power, clocks, memory used) change per call."""
    stamp = datetime.now().strftime("%a %b %d %H:%M:%S %Y")
    out = ["", "==============NVSMI LOG==============", "", f"Timestamp                                 : {stamp}",
           "Driver Version                            : 550.127.08", "CUDA Version                              : 12.4",
           "", "Attached GPUs                             : 2"]
    n = int(time.time() * 1000) % 97
    text = "\n".join(out) + "\n"
    for i in range(2):
        text += NV_Q_GPU.format(i=i, bus=0x18 + i * 0x20, used=n, free=143771 - 551 - n, temp=30 + n % 10,
                                power=70.0 + n, clock=345 + n) + "\n"
    sys.stdout.write(text)


def nvidia(args: list[str]) -> None:
    if args == ["-q"]:
        nvidia_q()
        return
    ids = ["0", "1"]
    for a in args:
        if a.startswith("--id="):
            ids = a.split("=", 1)[1].split(",")
    out = sys.stdout
    if "--format=csv,noheader" in args:
        out.write(nv_rows(ids))
        return
    interval = float(args[args.index("-l") + 1])

    def killed(*_: object) -> None:  # die mid-line, as a killed logger can
        out.write(nv_rows(ids)[:17])
        out.flush()
        os._exit(0)

    signal.signal(signal.SIGTERM, killed)
    out.write("timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm [MHz], "
              "clocks.current.memory [MHz], utilization.gpu [%], utilization.memory [%]\n")
    while True:
        out.write(nv_rows(ids))
        out.flush()
        time.sleep(interval)


def amd(args: list[str]) -> None:
    if args[:1] == ["static"]:  # amd-smi static --json: one object per GPU
        import json

        sys.stdout.write(json.dumps([{"gpu": i, "asic": {"market_name": "AMD Instinct MI300X", "asic_serial":
                                                         f"0x5F3B0000000{i}"},
                                      "bus": {"bdf": f"0000:{0x0c + i * 0x20:02x}:00.0"},
                                      "vbios": {"version": "113-M3000100-102"},
                                      "driver": {"name": "amdgpu", "version": "6.10.5"},
                                      "vram": {"size": {"value": 196592, "unit": "MB"}}} for i in range(2)]))
        return
    interval = float(args[args.index("-w") + 1])
    ids = args[args.index("-g") + 1:] if "-g" in args else ["0", "1"]
    header = "timestamp,gpu,socket_power,gfx_voltage,gfx_activity,umc_activity,mm_activity,hotspot,mem\n"
    out = sys.stdout
    out.write("WARNING: User is missing the following required groups: render, video\n\n")
    n = 0
    while True:
        if n % 2 == 0:  # amd-smi repeats its header
            out.write(header)
        stamp = int(time.time())  # whole seconds
        for i in ids:
            out.write(f"{stamp},{i},{100 + 10 * int(i)},N/A,97,40,0,65,51\n")
        out.flush()
        n += 1
        time.sleep(interval)


if __name__ == "__main__":
    tool = os.path.basename(sys.argv[0])
    (amd if tool.startswith("amd") else nvidia)(sys.argv[1:])
