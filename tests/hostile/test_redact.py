"""Identities do not survive ``--redact`` (issue 11 item 4): NUL-separated process files, PCI Device
Serial Numbers, short hostnames and FQDN domains are redacted, and the map keeps the original case.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import struct
import tarfile
from pathlib import Path
from typing import Any

import pytest

import doctor.redact as redact
from doctor import cli
from doctor.secrets import MASK
from tests.helpers import SICK, facts, run

redact_result, scrub_config_space = redact.redact_result, redact.scrub_config_space

HOST = "gpu-node-13"  # the fixture's hostname
IP = "10.77.{}.{}".format(*secrets.SystemRandom().sample(range(1, 250), 2))
MAC = "02:" + ":".join(f"{b:02x}" for b in secrets.token_bytes(5))
DEVICE = "0000:1b:00.0"


def _dsn_config(base: bytes, serial: bytes) -> bytes:
    """``base`` config space with AER at 0x100 pointing to a Device Serial Number capability at 0x150."""
    out = bytearray(base.ljust(4096, b"\0"))
    out[0x100:0x104] = struct.pack("<I", 0x0001 | (2 << 16) | (0x150 << 20))
    out[0x150:0x154] = struct.pack("<I", 0x0003 | (1 << 16))
    out[0x154:0x15C] = serial
    return bytes(out)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    if not SICK.exists():
        pytest.skip("sick fixture not generated")
    dest = tmp_path_factory.mktemp("ids") / "node"
    shutil.copytree(SICK, dest, symlinks=True)
    proc = dest / "proc/4242"
    (proc / "cmdline").write_bytes(proc.joinpath("cmdline").read_bytes()
                                   + f"--host\0{HOST}\0--advertise\0{IP}\0--mac\0{MAC}\0".encode())
    (proc / "environ").write_bytes(proc.joinpath("environ").read_bytes()
                                   + f"VLLM_HOST_IP={IP}\0NCCL_COMM_ID={HOST}:29500\0".encode())
    serial = secrets.token_bytes(8)
    config = Path(os.path.realpath(dest / f"sys/bus/pci/devices/{DEVICE}/config"))
    config.write_bytes(_dsn_config(config.read_bytes(), serial))
    return dest, serial


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tf:
        out = {}
        for m in tf.getmembers():
            if m.isfile():
                data = tf.extractfile(m)
                assert data is not None
                out[m.name] = data.read()
        return out


def test_collect_redact_covers_nul_separated_proc_files(node: tuple[Path, bytes], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    root, _serial = node
    out = tmp_path / "s.tar.gz"
    assert cli.main(["collect", "--root", str(root), "-o", str(out), "--redact",
                     "--redact-map", str(tmp_path / "map.json")]) == 0
    capsys.readouterr()
    members = _members(out)
    for name in ("proc/4242/cmdline", "proc/4242/environ"):
        data = members[name]
        text = data.decode()
        for value in (HOST, IP, MAC):
            assert value not in text, f"{value} left in {name}"
        assert "\0" in text
    # no check reads --host or NCCL_COMM_ID: the allowlist masks them before redaction sees them
    argv = members["proc/4242/cmdline"].decode().split("\0")
    assert argv[argv.index("--host") + 1] == MASK and "--enforce-eager" in argv
    env = members["proc/4242/environ"].decode()
    assert f"NCCL_COMM_ID={MASK}" in env
    mapping = json.loads((tmp_path / "map.json").read_text())["map"]
    assert mapping["host-1"] == HOST  # (the MAC was only in an option value, masked before redaction)


def test_collect_redact_zeroes_pci_device_serial(node: tuple[Path, bytes], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root, serial = node
    original = Path(os.path.realpath(root / f"sys/bus/pci/devices/{DEVICE}/config")).read_bytes()
    plain, redacted = tmp_path / "p.tar.gz", tmp_path / "r.tar.gz"
    assert cli.main(["collect", "--root", str(root), "-o", str(plain)]) == 0
    assert cli.main(["collect", "--root", str(root), "-o", str(redacted), "--redact",
                     "--redact-map", str(tmp_path / "map.json")]) == 0
    capsys.readouterr()
    name = next(n for n in _members(redacted) if n.endswith(f"{DEVICE}/config"))
    assert _members(plain)[name] == original  # without --redact the snapshot is the node's
    scrubbed = _members(redacted)[name]
    assert serial not in scrubbed and scrubbed[0x154:0x15C] == bytes(8)
    assert scrubbed[:0x154] == original[:0x154] and scrubbed[0x15C:] == original[0x15C:]
    # the redacted snapshot still reads: the link and AER state of the device are intact
    assert cli.main(["check", str(redacted), "--format", "json", "--only", "pcie"]) in (0, 1)
    capsys.readouterr()


def test_config_space_walk_is_bounded() -> None:
    looping = bytearray(4096)
    looping[0x100:0x104] = struct.pack("<I", 0x0001 | (0x100 << 20))  # points at itself
    assert scrub_config_space(bytes(looping)) == bytes(looping)
    assert scrub_config_space(b"\x86\x80") == b"\x86\x80"
    assert scrub_config_space(_dsn_config(b"", b"\xff" * 8)[:0x158])[0x154:] == bytes(4)


def _result(hostname: str, detail: str) -> dict[str, Any]:
    data = run(facts()).to_dict()
    data["source"]["hostname"] = hostname
    data["inventory"]["host"]["hostname"] = hostname
    data["findings"][0]["detail"] = detail
    return data


def test_short_hostname_is_redacted(tmp_path: Path) -> None:
    # a one-part name could be a word of other data: replaced in identity fields and where it is a
    # host by syntax (``root@n7``, ``n7:22``), in its own case only when shorter than 3 characters
    red = redact_result(_result("n7", "peer root@n7 answered, then n7:22; N7 is not the host in this sentence"),
                        str(tmp_path / "m.json"))
    text = json.dumps(red)
    assert not re.search(r"(?<![A-Za-z0-9])n7(?![A-Za-z0-9])", text)
    assert red["source"]["hostname"] == "host-1" and "peer root@host-1 answered, then host-1:22" in text
    assert "N7 is not" in text


def test_fqdn_domain_is_redacted_and_the_map_keeps_case(tmp_path: Path) -> None:
    map_path = tmp_path / "m.json"
    red = redact_result(_result("Node7.Corp.Example.com", "search corp.example.com; peer node8.corp.example.com"),
                        str(map_path))
    text = json.dumps(red)
    assert "example.com" not in text.lower() and "node7" not in text.lower()
    assert "peer node8.host-" in text
    mapping = json.loads(map_path.read_text())["map"]
    assert "Node7.Corp.Example.com" in mapping.values() and "Corp.Example.com" in mapping.values()
    assert "node7.corp.example.com" not in mapping.values()
    again = redact_result(_result("node7.corp.example.com", ""), str(map_path))  # same host, other case
    assert again["source"]["hostname"] == red["source"]["hostname"]


@pytest.mark.parametrize("line", ["a:" * 100_000 + "g", "1." * 100_000, "ab:" * 70_000 + "x", "0" * 200_000])
def test_redacting_a_hostile_line_takes_linear_time(line: str) -> None:
    import time

    redactor = redact.Redactor()
    redactor.learn(HOST, "host")
    start = time.monotonic()
    redactor.text(line)
    assert time.monotonic() - start < 10


def _redact_host(args: tuple[str, str]) -> str:
    hostname, map_path = args
    data = {"source": {"hostname": hostname}, "inventory": {"host": {"hostname": hostname}},
            "findings": [{"detail": f"peer {hostname} and 10.9.{len(hostname)}.7 answered"}]}
    return str(redact_result(data, map_path)["source"]["hostname"])


def test_runs_sharing_one_map_at_once_never_give_two_hosts_one_placeholder(tmp_path: Path) -> None:
    import multiprocessing

    map_path = str(tmp_path / "shared.json")
    hosts = [f"node{i:02d}" for i in range(12)]
    with multiprocessing.get_context("fork").Pool(6) as pool:
        placeholders = pool.map(_redact_host, [(h, map_path) for h in hosts], chunksize=1)
    assert len(set(placeholders)) == len(hosts), placeholders
    mapping = json.loads(Path(map_path).read_text())["map"]
    assert {mapping[p] for p in placeholders} == set(hosts)  # each placeholder maps back to its own host
    assert [p.name for p in tmp_path.iterdir()] == ["shared.json"]  # no temporary file left behind


def test_separate_gnd_processes_sharing_one_map_never_give_two_hosts_one_placeholder(tmp_path: Path) -> None:
    """Six ``gnd report --from-json --redact`` processes started at once on results of six hosts, one map."""
    import subprocess
    import sys

    base = run(facts()).to_dict()
    map_path = tmp_path / "shared.json"
    procs = []
    for i in range(6):
        data = json.loads(json.dumps(base))
        data["source"]["hostname"] = data["inventory"]["host"]["hostname"] = f"rack{i}-gpu-{i:02d}"
        data["source"]["machine_id"] = data["inventory"]["host"]["machine_id"] = f"{i:x}" * 32
        src = tmp_path / f"in{i}.json"
        src.write_text(json.dumps(data))
        procs.append(subprocess.Popen([sys.executable, "-m", "doctor", "report", "--from-json", str(src), "--format",
                                       "json", "-o", str(tmp_path / f"out{i}.json"), "--redact", "--redact-map",
                                       str(map_path)], stderr=subprocess.PIPE))
    assert all(p.wait(120) in (0, 1) for p in procs), [p.stderr.read() for p in procs if p.stderr]
    hosts = [json.loads((tmp_path / f"out{i}.json").read_text())["source"]["hostname"] for i in range(6)]
    ids = [json.loads((tmp_path / f"out{i}.json").read_text())["source"]["machine_id"] for i in range(6)]
    assert len(set(hosts)) == 6 and len(set(ids)) == 6, (hosts, ids)
    mapping = json.loads(map_path.read_text())["map"]
    assert [mapping[h] for h in hosts] == [f"rack{i}-gpu-{i:02d}" for i in range(6)]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".gnd-redact-")) == []


# --- placeholders keyed by the kind of value they replace; MACs and GPU UUIDs in every spelling ----------

UUID = "e51a1391-08fb-e45b-6956-d837f8aef667"


@pytest.mark.parametrize("hostname", [f"GPU-{UUID}", UUID, UUID.replace("-", "")])
def test_a_host_named_like_a_gpu_uuid_gets_a_host_placeholder_and_the_gpu_a_uuid_one(hostname: str) -> None:
    """The same characters are a host name in the host fields and a GPU's UUID in the GPU's: each field
    gets a placeholder of its own kind, whichever was seen first."""
    for gpu_first in (False, True):
        data: dict[str, Any] = {"source": {"hostname": hostname},
                                "inventory": {"gpus": [{"uuid": f"GPU-{UUID}", "serial": "1650123456789"}],
                                              "host": {"hostname": hostname, "board_serial": "1650123456789"}},
                                "findings": []}
        redactor = redact.Redactor()
        if gpu_first:
            redactor.learn(f"GPU-{UUID}", "uuid")
        out = redact.redact_data(data, redactor)
        assert out["source"]["hostname"] == out["inventory"]["host"]["hostname"] == "host-1"
        assert out["inventory"]["gpus"][0]["uuid"] in ("GPU-uuid-1", "uuid-1")
        assert out["inventory"]["gpus"][0]["serial"] == out["inventory"]["host"]["board_serial"] == "serial-1"
        mapping = redactor.mapping()
        assert mapping["host-1"] == hostname and mapping["serial-1"] == "1650123456789"
        assert UUID in mapping["uuid-1"].lower()


def test_a_host_named_like_a_serial_keeps_a_host_placeholder_in_the_map_file(tmp_path: Path) -> None:
    """Kinds survive the map file: a run continuing the map gives the host and the serial their own."""
    path = str(tmp_path / "m.json")
    data = {"source": {"hostname": "1650123456789"},
            "inventory": {"host": {"hostname": "1650123456789", "board_serial": "1650123456789"}}, "findings": []}
    first = redact_result(json.loads(json.dumps(data)), path)
    again = redact_result(json.loads(json.dumps(data)), path)
    for out in (first, again):
        assert out["source"]["hostname"] == "host-1" and out["inventory"]["host"]["board_serial"] == "serial-1"
    assert json.loads(Path(path).read_text())["map"] == {"host-1": "1650123456789", "serial-1": "1650123456789"}


@pytest.mark.parametrize("line", ["Base MAC: 0x02abcd001122", "Base MAC: 0X02ABCD001122", "HWaddr 02 ab cd 00 11 22",
                                  "lladdr 02AB.CD00.1122", "link/ether 02:ab:cd:00:11:22 brd ff:ff:ff:ff:ff:ff",
                                  "Permanent address: 02-AB-CD-00-11-22", "mac=02abcd001122",
                                  "port address  0x02abcd001122"])
def test_a_mac_a_line_calls_one_is_replaced_in_any_spelling(line: str) -> None:
    out = redact.Redactor().text(line)
    assert "mac-1" in out and not re.search(r"(?i)02.?ab.?cd.?00.?11.?22", out), out


@pytest.mark.parametrize("number", ["0x7ffd12345678", "12 34 56 78 9a bc", "deadbeef0000"])
def test_numbers_no_word_calls_a_mac_are_left_alone(number: str) -> None:
    """A pointer in a kernel log or a hex dump line has a MAC's length but is not one."""
    assert redact.Redactor().text(f"RIP: {number} in dump") == f"RIP: {number} in dump"


def test_a_mac_seen_once_is_replaced_in_every_other_spelling_of_the_result() -> None:
    """A MAC written with colons in one field is replaced where another field writes it bare or with a
    0x prefix, even before (in the data's order) the colon spelling."""
    data: dict[str, Any] = {"findings": [{"detail": "firmware base 0x02ABCD001122, port 02abcd001122"},
                                         {"detail": "peer 02 ab cd 00 11 22 answered"},
                                         {"evidence": [{"source": "ip link", "value": "link/ether 02:ab:cd:00:11:22"}]}]}
    out = json.dumps(redact.redact_data(data, redact.Redactor()))
    assert not re.search(r"(?i)02.?ab.?cd.?00.?11.?22", out), out
    assert out.count("mac-1") == 4 and "mac-2" not in out


@pytest.mark.parametrize("spelling", [f"GPU-{UUID}", f"GPU-{UUID.upper()}", f"gpu-{UUID}", UUID, UUID.upper(),
                                      f"GPU-{UUID.replace('-', '')}", f"GPU-{UUID.replace('-', '').upper()}",
                                      f"MIG-GPU-{UUID}/1/0", f"{{{UUID}}}"])
def test_a_gpu_uuid_is_replaced_by_its_shape_in_every_spelling(spelling: str) -> None:
    out = redact.Redactor().text(f"CUDA_VISIBLE_DEVICES={spelling} ok")
    assert "uuid-1" in out and "e51a" not in out.lower(), out


@pytest.mark.parametrize("spelling", ["0x02abcd001122", "0X02ABCD001122", "02 ab cd 00 11 22", "02 AB CD 00 11 22",
                                      "02abcd001122", "02AB.CD00.1122"])
def test_a_known_mac_is_replaced_in_every_spelling_wherever_it_stands(spelling: str) -> None:
    r = redact.Redactor()
    r.learn("02:AB:CD:00:11:22", "mac")  # sys/class/net/*/address
    assert r.text(f"value {spelling} here") == "value mac-1 here" and r.counts["mac"] == 1


def test_in_text_a_value_of_two_kinds_is_the_host_where_it_stands_as_one() -> None:
    """A host named like its GPU's UUID, or like its board serial: in text the value is the host in host
    syntax (``root@...``, ``--host ...``, ``...:22``) and what its shape or field says elsewhere."""
    r = redact.Redactor()
    r.learn(f"GPU-{UUID}", "host")
    r.learn(f"GPU-{UUID}", "uuid")
    assert r.text(f"ssh root@GPU-{UUID} ok") == "ssh root@host-1 ok"
    assert r.text(f"--host GPU-{UUID} --port 1") == "--host host-1 --port 1"
    assert r.text(f"CUDA_VISIBLE_DEVICES=GPU-{UUID}") == "CUDA_VISIBLE_DEVICES=GPU-uuid-1"
    s = redact.Redactor()
    s.learn("1650123456789", "host")
    s.learn("1650123456789", "serial")
    assert s.text("board serial 1650123456789 seen") == "board serial serial-1 seen"
    assert s.text("NCCL_COMM_ID=1650123456789:29500") == "NCCL_COMM_ID=host-1:29500"
