"""Config space read as far as it is walked (live host) gives what reading it whole gives."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from doctor.facts.pci import (
    _ACS_BITS,
    _PCIE_TYPES,
    _SPEED_CODE,
    CONFIG_MAX,
    ConfigSpace,
    _Express,
    _express,
    _pcie_capability,
)
from doctor.sources import open_source


def _reference(config: bytes) -> tuple[object, ...]:
    """The walks as they were over the whole file's bytes: (port type, ACS, link speeds)."""
    express: tuple[object, ...] = (None, None, None, None)
    if len(config) >= 64 and config[0x06] & 0x10:
        ptr, seen = config[0x34] & 0xFC, 0
        while 0x40 <= ptr < min(len(config), 256) - 4 and seen < 48:
            if config[ptr] == 0x10:
                port_type = _PCIE_TYPES.get((config[ptr + 2] >> 4) & 0xF)
                speeds: tuple[object, ...] = (None, None, None)
                if ptr + 0x32 <= len(config) and (config[ptr + 2] & 0xF) >= 2:
                    vector = (config[ptr + 0x2C] >> 1) & 0x7F
                    speeds = (_SPEED_CODE.get(config[ptr + 0x30] & 0xF),
                              _SPEED_CODE.get(vector.bit_length()) if vector else None,
                              _SPEED_CODE.get(config[ptr + 0x0C] & 0xF))
                express = (port_type, *speeds)
                break
            ptr, seen = config[ptr + 1] & 0xFC, seen + 1
    acs = None
    if len(config) >= 0x108:
        off, seen = 0x100, 0
        while 0x100 <= off < len(config) - 8 and seen < 96:
            header = int.from_bytes(config[off:off + 4], "little")
            if header in (0, 0xFFFFFFFF):
                break
            if header & 0xFFFF == 0x000D:
                ctl = int.from_bytes(config[off + 6:off + 8], "little")
                acs = {bit: bool(ctl & (1 << i)) for i, bit in enumerate(_ACS_BITS)}
                break
            off, seen = (header >> 20) & 0xFFC, seen + 1
    return (*express, acs)


def _walked(config: ConfigSpace) -> tuple[object, ...]:
    e, acs = _pcie_capability(config)
    assert _express(config) == e
    return (e.port_type, e.target_speed, e.supported_speed, e.advertised_speed, acs)


def _blob(rng: random.Random) -> bytes:
    """A config space with a capability chain, a PCI Express capability and extended capabilities, often broken."""
    size = rng.choice((0, 3, 63, 64, 100, 255, 256, 263, 264, 265, 300, 1024, 4095, 4096))
    data = bytearray(rng.randrange(256) for _ in range(size))
    if size > 0x34:
        data[0x06] = rng.choice((0x10, 0x00, 0xFF))
        data[0x34] = rng.choice((0x40, 0x50, 0x00, 0xFC, 0x3C, 0xF8))
    for ptr in range(0x40, min(size, 256) - 2, 0x10):
        data[ptr] = rng.choice((0x10, 0x05, 0x09, 0x01))
        data[ptr + 1] = rng.choice((ptr + 0x10, 0, ptr, 0xFC)) & 0xFF
        data[ptr + 2] = rng.choice((0x42, 0x02, 0x01, 0x62))
    off = 0x100
    while off + 8 <= size and rng.random() < 0.8:
        nxt = rng.choice((off + 0x40, 0, off, 0xFFC, 0x80))
        header = rng.choice((0x000D, 0x0001, 0x000B)) | (1 << 16) | (nxt << 20)
        data[off:off + 4] = rng.choice((header, 0, 0xFFFFFFFF)).to_bytes(4, "little")
        if off + 8 <= size:
            data[off + 6:off + 8] = rng.randrange(1 << 16).to_bytes(2, "little")
        if nxt <= off:
            break
        off = nxt
    return bytes(data)


def test_walking_a_file_on_demand_equals_reading_it_whole(tmp_path: Path) -> None:
    rng = random.Random(4)
    path = tmp_path / "config"
    for _ in range(1500):
        data = _blob(rng)
        _compare(path, data)


def test_a_space_without_capabilities_is_not_read_past_its_first_extended_header(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_bytes(bytes(4096))  # what a VM's host bridge shows: 6 ms to read whole under a hypervisor
    fd = os.open(path, os.O_RDONLY)
    config = ConfigSpace(b"", fd)
    reads: list[tuple[int, int]] = []
    real = os.pread

    def counting(fd: int, size: int, offset: int) -> bytes:
        reads.append((size, offset))
        return real(fd, size, offset)

    os.pread = counting  # type: ignore[assignment]
    try:
        assert _pcie_capability(config) == (_Express(), None)
    finally:
        os.pread = real  # type: ignore[assignment]
        config.close()
    assert sum(size for size, _ in reads) <= 16  # a few dwords, not 4 KiB


def test_a_read_failing_part_way_counts_as_no_config_space(tmp_path: Path) -> None:
    from doctor.facts.pci import ConfigError

    path = tmp_path / "config"
    path.write_bytes(bytes(4096))
    fd = os.open(path, os.O_RDONLY)
    config = ConfigSpace(b"", fd)
    os.close(fd)  # every later read fails
    with pytest.raises(ConfigError):
        _pcie_capability(config)


@pytest.mark.skipif(not os.path.isdir("/sys/bus/pci/devices"), reason="no PCI devices in sysfs here")
def test_the_live_host_reads_the_same_as_a_whole_read() -> None:
    src = open_source(None)
    for address in src.listdir("sys/bus/pci/devices"):
        path = f"sys/bus/pci/devices/{address}/config"
        lazy = ConfigSpace.read(src, path)
        try:
            got = _walked(lazy)
        finally:
            lazy.close()
        assert got == _reference(src.read_bytes(path, cap=CONFIG_MAX) or b""), address


def _compare(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    lazy = ConfigSpace(b"", fd)
    try:
        got = _walked(lazy)
    finally:
        lazy.close()
    assert got == _walked(ConfigSpace(data)) == _reference(data), (len(data), data.hex())


def test_capabilities_at_the_very_end_of_the_space(tmp_path: Path) -> None:
    """A capability or extended header that ends exactly at, or one byte past, the end of the file."""
    path = tmp_path / "config"
    found = 0
    for size in range(0x40, 0x150):
        for ptr in range(0x40, min(size, 256), 4):
            data = bytearray(size)
            data[0x06], data[0x34] = 0x10, ptr
            data[ptr:ptr + 3] = bytes((0x10, 0, 0x42))[:size - ptr]
            _compare(path, bytes(data))
        if size >= 0x108:
            for off in range(0x104, size, 4):
                data = bytearray(size)
                data[0x100:0x104] = (0x0001 | (1 << 16) | (off << 20)).to_bytes(4, "little")
                data[off:off + 4] = (0x000D | (1 << 16)).to_bytes(4, "little")[:size - off]
                data[off + 6:off + 8] = b"\x7f\x00"[:max(0, size - off - 6)]
                _compare(path, bytes(data))
                found += _pcie_capability(ConfigSpace(bytes(data)))[1] is not None
    assert found  # some of them do reach the ACS capability
