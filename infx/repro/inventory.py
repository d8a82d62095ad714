"""The hardware inventory of a bundle, each part read by its real tool where present and named absent
otherwise: ``nvidia-smi -q`` / ``amd-smi static --json`` (GPUs, driver), ``lscpu -J`` (CPU),
``/proc/meminfo`` (memory), ``ip -j link`` (NICs), ``ibv_devinfo`` (InfiniBand), ``uname`` (kernel).

Only static facts are parsed out (names, UUIDs, memory totals, maximum clocks, firmware, link types), so two
bundles of the same machine have the same inventory; clocks, temperatures and utilisation stay in the raw
readings. A sweep reads the inventory once per process (hardware does not change between points).
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from infx.repro.payload import GpuInfo, IbDevice, Inventory, NicInfo, ToolReading

_MAX_OUTPUT = 256 * 1024
_TIMEOUT_S = 10.0

# lscpu fields that do not change while the machine runs (MHz figures and the vulnerability notes do)
_LSCPU_STATIC = ("Architecture", "CPU(s)", "Vendor ID", "Model name", "CPU family", "Model", "Stepping",
                 "Thread(s) per core", "Core(s) per socket", "Core(s) per cluster", "Socket(s)", "Cluster(s)",
                 "NUMA node(s)", "L1d cache", "L1i cache", "L2 cache", "L3 cache", "Hypervisor vendor",
                 "Virtualization type", "BogoMIPS")


def run_tool(tool: str, argv: list[str]) -> ToolReading:
    """Run one inventory tool (argv, no shell). Absent from PATH -> ``present=False``."""
    exe = shutil.which(argv[0])
    if exe is None:
        return ToolReading(tool=tool, argv=argv, present=False, error=f"{argv[0]} not found on PATH")
    try:
        proc = subprocess.run([exe, *argv[1:]], capture_output=True, timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return ToolReading(tool=tool, argv=argv, present=True, error=f"{type(exc).__name__}: {exc}")
    out = proc.stdout
    text = out[:_MAX_OUTPUT].decode("utf-8", errors="replace")
    err = proc.stderr.decode("utf-8", errors="replace").strip()[-2000:] or None
    return ToolReading(tool=tool, argv=argv, present=True, rc=proc.returncode,
                       output_sha256=hashlib.sha256(out).hexdigest(), output=text,
                       error=err if proc.returncode != 0 else None)


# --------------------------------------------------------------------------- parsers


def parse_nvidia_smi_q(text: str) -> tuple[list[GpuInfo], str | None, str | None]:
    """``nvidia-smi -q``: (GPUs, driver version, CUDA version). The format is indented ``Key : Value`` lines
    with sections (``FB Memory Usage``, ``Max Clocks``...) and one block per GPU headed ``GPU <bus id>``."""
    driver = cuda = None
    gpus: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    stack: list[tuple[int, str]] = []  # (indent, section) of the current GPU block
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("="):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        m = re.match(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$", line)
        if m and indent == 0:
            cur = {"pci_bus_id": m.group(1)}
            gpus.append(cur)
            stack = []
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not sep or (not value and sep):
            stack.append((indent, key))
            continue
        section = stack[-1][1] if stack else ""
        if cur is None:
            if key == "Driver Version":
                driver = value
            elif key == "CUDA Version":
                cuda = value
            continue
        if not section:
            if key == "Product Name":
                cur["name"] = value
            elif key == "GPU UUID":
                cur["uuid"] = value
            elif key == "VBIOS Version":
                cur["vbios"] = value
            elif key == "Minor Number" and value.isdigit():
                cur["minor"] = int(value)
        elif section == "FB Memory Usage" and key == "Total":
            cur["memory_total_mib"] = _int(value)
        elif section == "Max Clocks" and key == "SM":
            cur["max_sm_clock_mhz"] = _int(value)
        elif section == "Max Clocks" and key == "Memory":
            cur["max_memory_clock_mhz"] = _int(value)
        elif section in ("GPU Power Readings", "Power Readings") and (
                key == "Default Power Limit" or (key == "Max Power Limit" and "power_limit_w" not in cur)):
            cur["power_limit_w"] = _float(value)
    out = []
    for i, g in enumerate(gpus):
        g.pop("minor", None)
        out.append(GpuInfo(index=i, vendor="nvidia", **g))
    return out, driver, cuda


def parse_amd_smi_static(text: str) -> tuple[list[GpuInfo], str | None]:
    """``amd-smi static --json``: a list (or ``{"gpu_data": [...]}``) of per-GPU objects."""
    try:
        data = json.loads(text[text.find("["):] if "[" in text and not text.lstrip().startswith("{") else text)
    except ValueError:
        return [], None
    items = data.get("gpu_data", []) if isinstance(data, dict) else data
    gpus: list[GpuInfo] = []
    driver = None
    for i, g in enumerate(items if isinstance(items, list) else []):
        if not isinstance(g, dict):
            continue
        asic = g.get("asic") or {}
        bus = g.get("bus") or {}
        vram = (g.get("vram") or {}).get("size")
        mem = vram.get("value") if isinstance(vram, dict) else vram
        drv = g.get("driver") or {}
        driver = driver or (drv.get("version") if isinstance(drv, dict) else None)
        gpus.append(GpuInfo(index=int(g.get("gpu", i)) if str(g.get("gpu", i)).isdigit() else i, vendor="amd",
                            name=asic.get("market_name"), uuid=asic.get("asic_serial") or g.get("uuid"),
                            pci_bus_id=bus.get("bdf"), vbios=(g.get("vbios") or {}).get("version"),
                            memory_total_mib=_int(str(mem)) if mem is not None else None))
    return gpus, driver


def parse_lscpu_json(text: str) -> dict[str, str]:
    """``lscpu -J`` (flat or nested ``children``): the static fields, keys without the trailing colon."""
    try:
        rows = json.loads(text).get("lscpu", [])
    except (ValueError, AttributeError):
        return {}
    flat: dict[str, str] = {}

    def walk(items: list[Any]) -> None:
        for it in items:
            if not isinstance(it, dict):
                continue
            name = str(it.get("field", "")).rstrip(":").strip()
            if name and it.get("data") is not None:
                flat.setdefault(name, str(it["data"]))
            walk(it.get("children") or [])

    walk(rows)
    out = {k: flat[k] for k in _LSCPU_STATIC if k in flat}
    if "Flags" in flat:
        out["Flags sha256"] = hashlib.sha256(flat["Flags"].encode()).hexdigest()[:16]
    return out


def parse_ip_link(text: str) -> list[NicInfo]:
    try:
        links = json.loads(text)
    except ValueError:
        return []
    return [NicInfo(name=str(lk.get("ifname")), link_type=lk.get("link_type"), mtu=lk.get("mtu"),
                    address=lk.get("address"))
            for lk in links if isinstance(lk, dict) and lk.get("ifname")]


def parse_ibv_devinfo(text: str) -> list[IbDevice]:
    devs: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    port: dict[str, str] = {}

    def close_port() -> None:
        if cur is not None and port:
            cur["ports"].append(" ".join(v for v in (port.get("port"), port.get("state"),
                                                     port.get("link_layer")) if v))
            port.clear()

    for raw in text.splitlines():
        key, _, value = raw.strip().partition(":")
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            close_port()
            cur = {"hca_id": value, "ports": []}
            devs.append(cur)
        elif cur is None:
            continue
        elif key in ("fw_ver", "board_id"):
            cur[key] = value
        elif key == "port":
            close_port()
            port["port"] = value
        elif key in ("state", "link_layer") and port:
            port[key] = value.split()[0] if key == "state" else value
    close_port()
    return [IbDevice(**d) for d in devs]


def _int(value: str) -> int | None:
    m = re.search(r"-?\d+", value.replace(",", ""))
    return int(m.group()) if m else None


def _float(value: str) -> float | None:
    m = re.search(r"-?\d+(?:\.\d+)?", value)
    return float(m.group()) if m else None


def memory_total_kib(meminfo: str | Path = "/proc/meminfo") -> int | None:
    try:
        for line in Path(meminfo).read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


# --------------------------------------------------------------------------- the inventory


def read_inventory() -> Inventory:
    """Run every tool now (see :func:`cached_inventory` for the per-process copy a sweep uses)."""
    readings = {
        "nvidia-smi -q": run_tool("nvidia-smi -q", ["nvidia-smi", "-q"]),
        "amd-smi static": run_tool("amd-smi static", ["amd-smi", "static", "--json"]),
        "lscpu": run_tool("lscpu", ["lscpu", "-J"]),
        "ip link": run_tool("ip link", ["ip", "-j", "link"]),
        "ibv_devinfo": run_tool("ibv_devinfo", ["ibv_devinfo"]),
    }
    inv = Inventory(kernel=f"{platform.release()} {platform.version()}", os=platform.platform(),
                    memory_total_kib=memory_total_kib(), readings=list(readings.values()))
    inv.absent = [r.tool for r in readings.values() if not r.present]
    nv = readings["nvidia-smi -q"]
    if nv.present and nv.rc == 0 and nv.output:
        inv.gpus, inv.gpu_driver, inv.cuda_version = parse_nvidia_smi_q(nv.output)
    amd = readings["amd-smi static"]
    if amd.present and amd.rc == 0 and amd.output and not inv.gpus:
        inv.gpus, inv.gpu_driver = parse_amd_smi_static(amd.output)
    cpu = readings["lscpu"]
    if cpu.rc == 0 and cpu.output:
        inv.cpu = parse_lscpu_json(cpu.output)
    ip = readings["ip link"]
    if ip.rc == 0 and ip.output:
        inv.nics = parse_ip_link(ip.output)
    ib = readings["ibv_devinfo"]
    if ib.rc == 0 and ib.output:
        inv.infiniband = parse_ibv_devinfo(ib.output)
    return inv


@functools.lru_cache(maxsize=1)
def cached_inventory() -> Inventory:
    return read_inventory()
