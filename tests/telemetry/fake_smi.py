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


def nvidia(args: list[str]) -> None:
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
