"""The inventory tools run on this machine (lscpu, ip, /proc/meminfo, uname; nvidia-smi, amd-smi and ibv_devinfo
are named absent here), and fakes of nvidia-smi -q / amd-smi static / ibv_devinfo (no GPU or HCA can exist on
the test machine) check the parsing."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from infx.repro.inventory import read_inventory
from tests.telemetry.powerfiles import install_fake_tools

IBV = '''hca_id:	mlx5_0
	transport:			InfiniBand (0)
	fw_ver:				28.39.1002
	node_guid:			b83f:d203:00a1:2b3c
	board_id:			MT_0000000838
	phys_port_cnt:			1
		port:	1
			state:			PORT_ACTIVE (4)
			max_mtu:		4096 (5)
			link_layer:		InfiniBand

hca_id:	mlx5_1
	fw_ver:				28.39.1002
	board_id:			MT_0000000838
		port:	1
			state:			PORT_DOWN (1)
			link_layer:		Ethernet
'''


def test_real_tools_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")  # nothing fake
    inv = read_inventory()
    by_tool = {r.tool: r for r in inv.readings}
    assert set(by_tool) == {"nvidia-smi -q", "amd-smi static", "lscpu", "ip link", "ibv_devinfo"}
    assert shutil.which("lscpu") and by_tool["lscpu"].present and by_tool["lscpu"].rc == 0
    assert inv.cpu["Architecture"] and int(inv.cpu["CPU(s)"]) >= 1 and inv.cpu["Model name"]
    assert "CPU MHz" not in inv.cpu  # dynamic figures stay in the raw reading only
    assert by_tool["ip link"].present and any(n.name == "lo" and n.link_type == "loopback" for n in inv.nics)
    assert inv.memory_total_kib and inv.memory_total_kib > 1024
    assert inv.kernel and inv.os
    for tool, exe in (("nvidia-smi -q", "nvidia-smi"), ("amd-smi static", "amd-smi"), ("ibv_devinfo", "ibv_devinfo")):
        if shutil.which(exe) is None:
            assert tool in inv.absent and not by_tool[tool].present and "not found" in (by_tool[tool].error or "")
    assert inv.gpus == [] or shutil.which("nvidia-smi") or shutil.which("amd-smi")


def test_fake_nvidia_smi_q_parses_static_gpu_facts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = install_fake_tools(tmp_path / "bin", ("nvidia-smi",))
    ibv = bin_dir / "ibv_devinfo"
    ibv.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write({IBV!r})\n")
    ibv.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/sbin:/usr/bin:/bin")
    first, second = read_inventory(), read_inventory()
    assert first.gpu_driver == "550.127.08" and first.cuda_version == "12.4"
    assert [(g.index, g.name, g.pci_bus_id, g.memory_total_mib, g.max_sm_clock_mhz, g.power_limit_w)
            for g in first.gpus] == [(0, "NVIDIA H200", "00000000:18:00.0", 143771, 1980, 700.0),
                                     (1, "NVIDIA H200", "00000000:38:00.0", 143771, 1980, 700.0)]
    assert first.gpus[1].uuid == "GPU-8c4f0e1a-0000-4000-8000-000000000001" and first.gpus[0].vbios
    assert "nvidia-smi -q" not in first.absent and "ibv_devinfo" not in first.absent
    assert [(d.hca_id, d.fw_ver, d.ports) for d in first.infiniband] == [
        ("mlx5_0", "28.39.1002", ["1 PORT_ACTIVE InfiniBand"]), ("mlx5_1", "28.39.1002", ["1 PORT_DOWN Ethernet"])]
    # the fake's power, temperature and clocks change per call: the static facts do not
    assert first.gpus == second.gpus and first.infiniband == second.infiniband
    raw = next(r for r in first.readings if r.tool == "nvidia-smi -q")
    assert raw.rc == 0 and "Power Draw" in (raw.output or "") and raw.output_sha256  # kept raw, not parsed


def test_fake_amd_smi_static(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = install_fake_tools(tmp_path / "bin", ("amd-smi",))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/sbin:/usr/bin:/bin")
    inv = read_inventory()
    assert [(g.vendor, g.name, g.memory_total_mib, g.pci_bus_id) for g in inv.gpus] == [
        ("amd", "AMD Instinct MI300X", 196592, "0000:0c:00.0"), ("amd", "AMD Instinct MI300X", 196592, "0000:2c:00.0")]
    assert inv.gpu_driver == "6.10.5" and "nvidia-smi -q" in inv.absent
