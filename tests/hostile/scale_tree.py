"""A node far larger than any real one, inside the input caps: the sick HGX fixture plus thousands
of PCI functions, a kernel log at the read cap and thousands of processes (tests/hostile/test_scale.py).

Topology of the added PCI functions, one PCI domain per switch so that bus numbers stay small:
root port ``DDDD:00:00.0`` -> upstream port ``DDDD:01:00.0`` -> 32 downstream ports ``DDDD:02:kk.0``
-> one endpoint each on bus ``3+kk`` (NICs, NVMe drives, NVIDIA GPUs the driver does not list,
in turn). Every fourth switch's ports redirect peer traffic (ACS ReqRedir set), as a BIOS
default would. The kernel log repeats Xid lines naming GPUs, a host bridge, a NIC and addresses
that are on no bus, between ordinary lines.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PORTS = 32  # downstream ports per switch
PER_DOMAIN = 2 + 2 * PORTS
_ENDPOINTS = (("0x15b3", "0x101d", "0x020000"), ("0x144d", "0xa80a", "0x010802"), ("0x10de", "0x2330", "0x030200"))
_BRIDGE = ("0x8086", "0x347a", "0x060400")
_SICK_GPUS = ("0000:18:00.0", "0000:2a:00.0")


def _config(port_type: int, acs_ctl: int | None) -> bytes:
    """A 4 KiB config space with a PCI Express capability (port type) and, for ports, ACS control."""
    space = bytearray(4096)
    space[0x06] = 0x10  # capability list present
    space[0x34] = 0x40
    space[0x40:0x44] = bytes((0x10, 0x00, 0x02 | port_type << 4, 0x00))  # PCIe cap v2, no next
    if acs_ctl is not None:
        space[0x100:0x104] = (0x000D | 1 << 16).to_bytes(4, "little")  # ACS, version 1, no next
        space[0x106:0x108] = acs_ctl.to_bytes(2, "little")
    return bytes(space)


_ROOT, _UP, _DOWN, _EP = _config(4, 0x1D), _config(5, None), _config(6, 0x1D), _config(0, None)
_DOWN_REDIRECT = _config(6, 0x1D | 0x04 | 0x08)


def _device(where: Path, ids: tuple[str, str, str], config: bytes, numa: int, width: int) -> None:
    where.mkdir()
    for name, value in (("vendor", ids[0]), ("device", ids[1]), ("class", ids[2]), ("numa_node", str(numa)),
                        ("current_link_speed", "16.0 GT/s PCIe"), ("max_link_speed", "16.0 GT/s PCIe"),
                        ("current_link_width", str(width)), ("max_link_width", str(width))):
        (where / name).write_text(value + "\n")
    (where / "config").write_bytes(config)


def add_pci(root: Path, devices: int) -> None:
    bus_dir = root / "sys/bus/pci/devices"
    made = 0
    domain = 0x100
    while made < devices:
        dom = f"{domain:04x}"
        top = root / "sys/devices" / f"pci{dom}:00"
        top.mkdir(parents=True)
        numa = domain % 2
        rp = f"{dom}:00:00.0"
        up = f"{dom}:01:00.0"
        _device(top / rp, _BRIDGE, _ROOT, numa, 16)
        _device(top / rp / up, _BRIDGE, _UP, numa, 16)
        links = [(rp, f"pci{dom}:00/{rp}"), (up, f"pci{dom}:00/{rp}/{up}")]
        for k in range(PORTS):
            down = f"{dom}:02:{k:02x}.0"
            ep = f"{dom}:{3 + k:02x}:00.0"
            dpath = top / rp / up / down
            _device(dpath, _BRIDGE, _DOWN_REDIRECT if domain % 4 == 0 else _DOWN, numa, 16)
            _device(dpath / ep, _ENDPOINTS[k % 3], _EP, numa, 8 if k % 5 == 0 else 16)
            rel = f"pci{dom}:00/{rp}/{up}/{down}"
            links += [(down, rel), (ep, f"{rel}/{ep}")]
        for bdf, rel in links:
            os.symlink(f"../../../devices/{rel}", bus_dir / bdf)
        made += PER_DOMAIN
        domain += 1


def kernel_log(size: int) -> bytes:
    """Kernel log lines up to ``size`` bytes: Xid lines for GPUs, a bridge, a NIC, absent addresses."""
    targets = (*(a[:-2] for a in _SICK_GPUS), "0000:00:00", "0100:03:00", "0000:9f:00", "ffff:ee:00")
    codes = (13, 31, 43, 45, 48, 63, 79, 94, 119, 144, 154)
    lines = []
    total, i = 0, 0
    while total < size - 200:
        t = f"[{1000 + i * 0.001:12.6f}]"
        if i % 3 == 0:
            addr, xid = targets[i % len(targets)], codes[i % len(codes)]
            if xid == 154:
                text = ("GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")
            elif xid == 144:
                text = f"NVLink: SAW MVB nonfatal error (0x{i % 7:x}) link {i % 18}"
            else:
                text = f"pid={i % 5000}, name=python3, Ch {i % 64:08x}, intr 1000{i % 97}"
            line = f"{t} NVRM: Xid (PCI:{addr}): {xid}, {text}\n"
        else:
            line = f"{t} mlx5_core 0000:9f:00.0: poll_health:123: device's health compromised? counter {i}\n"
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines).encode()


def add_processes(root: Path, count: int) -> None:
    proc = root / "proc"
    for n in range(count):
        pid = 100000 + n
        d = proc / str(pid)
        d.mkdir()
        serving = n % 50 == 0
        argv = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", f"m{n}", "--enforce-eager"] \
            if serving else ["/usr/bin/sleep", str(n)]
        (d / "cmdline").write_bytes("\0".join(argv).encode() + b"\0")
        (d / "status").write_text(f"Name:\t{'python3' if serving else 'sleep'}\nPid:\t{pid}\nPPid:\t1\n"
                                  f"Cpus_allowed_list:\t0-{n % 200}\n")
        (d / "environ").write_bytes(b"NCCL_DEBUG=INFO\0NCCL_P2P_DISABLE=1\0" if serving else b"PATH=/usr/bin\0")


def build(dest: Path, sick: Path, devices: int = 20_000, log_bytes: int = 16 << 20, processes: int = 10_000) -> Path:
    """Write the large node under ``dest`` and return it."""
    shutil.copytree(sick, dest, symlinks=True)
    add_pci(dest, devices)
    (dest / "commands/dmesg").write_bytes(kernel_log(log_bytes))
    add_processes(dest, processes)
    return dest
