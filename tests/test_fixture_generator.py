"""Tests for fixtures/tools/make_node.py and the committed trees it produces."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from fixtures.tools.make_node import COMMITTED, HEALTHY, MARKER, SICK, NodeSpec, build_node, render

REPO = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"

Snapshot = dict[str, tuple[str, bytes | str]]


def snapshot(root: pathlib.Path) -> Snapshot:
    """Every file (content) and symlink (target) under root, without following links."""
    out: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isfile(p):
                out[rel] = ("file", pathlib.Path(p).read_bytes())
    return out


def rendered(spec: NodeSpec) -> Snapshot:
    t = render(spec)
    snap: Snapshot = {k: ("file", v) for k, v in t.files.items()}
    snap.update({k: ("link", v) for k, v in t.links.items()})
    return snap


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    base = tmp_path_factory.mktemp("nodes")
    out = {}
    for name, spec in COMMITTED.items():
        build_node(base / name, spec)
        out[name] = base / name
    return out


def test_generation_is_deterministic(tmp_path: pathlib.Path, trees: dict[str, pathlib.Path]) -> None:
    for name, spec in COMMITTED.items():
        build_node(tmp_path / name, spec)
        assert snapshot(tmp_path / name) == snapshot(trees[name])


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_symlinks_resolve_inside_tree(name: str, trees: dict[str, pathlib.Path]) -> None:
    root = trees[name].resolve()
    links = [k for k, (kind, _) in snapshot(root).items() if kind == "link"]
    assert links
    for rel in links:
        target = os.readlink(root / rel)
        assert not target.startswith("/"), rel
        real = pathlib.Path(os.path.realpath(root / rel))
        assert real.is_relative_to(root), f"{rel} -> {target} leaves the tree"
        assert real.exists(), f"{rel} -> {target} dangles"


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_bus_pci_devices_resolve_to_device_dirs(name: str, trees: dict[str, pathlib.Path]) -> None:
    devices = trees[name] / "sys/bus/pci/devices"
    entries = sorted(devices.iterdir())
    assert len(entries) == 61
    for e in entries:
        assert e.is_symlink()
        real = pathlib.Path(os.path.realpath(e))
        assert real.name == e.name
        assert "/sys/devices/pci0000:" in str(real)
        for f in ("vendor", "device", "class", "config", "numa_node"):
            assert (real / f).is_file(), f"{e.name}/{f}"
        assert len((real / "config").read_bytes()) == 4096


def test_committed_trees_equal_fresh_generation() -> None:
    for name, spec in COMMITTED.items():
        root = FIXTURES / name
        if not (root / MARKER).is_file():
            pytest.fail(f"{root} missing: run python fixtures/tools/make_node.py --all")
        assert snapshot(root) == rendered(spec), f"{name} differs: run python fixtures/tools/make_node.py --all"


def _gpu_dirs() -> dict[int, tuple[str, str]]:
    """GPU index -> (GPU dir, downstream-port dir) relative to the tree root."""
    out = {}
    for i, (dom, bus) in enumerate([("15", 0x15), ("15", 0x15), ("37", 0x37), ("37", 0x37),
                                    ("97", 0x97), ("97", 0x97), ("b7", 0xB7), ("b7", 0xB7)]):
        k = 0 if i % 2 == 0 else 2
        dp = f"sys/devices/pci0000:{dom}/0000:{dom}:01.0/0000:{bus + 1:02x}:00.0/0000:{bus + 2:02x}:{k:02x}.0"
        out[i] = (f"{dp}/0000:{bus + 3 + k:02x}:00.0", dp)
    return out


def test_sick_differs_exactly_in_intended_files() -> None:
    healthy = rendered(HEALTHY)
    # Same identity (hostname, MACs, GIDs, UUIDs) so only the faults remain.
    sick = rendered(replace(SICK, hostname=HEALTHY.hostname, node_id=HEALTHY.node_id))
    changed = {k for k in set(healthy) | set(sick) if healthy.get(k) != sick.get(k)}

    expected = {
        "commands/lspci_-vvv", "commands/nvidia-smi_-q_-x", "commands/nvidia-smi_nvlink_-s",
        "etc/sysctl.d/90-gpu-net.conf", "etc/systemd/system/vllm.service", "var/lib/kubelet/config.yaml",
        "proc/cmdline", "proc/interrupts", "proc/4242/cmdline", "proc/4242/environ", "proc/4336/status",
    }
    expected |= {f"proc/{4318 + 9 * i}/environ" for i in range(8)}
    expected |= {"proc/sys/" + k.replace(".", "/") for k in (
        "kernel.numa_balancing", "net.core.default_qdisc", "net.core.netdev_max_backlog", "net.core.rmem_max",
        "net.core.wmem_max", "net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_rmem", "net.ipv4.tcp_slow_start_after_idle",
        "net.ipv4.tcp_wmem")}
    gpus = _gpu_dirs()
    for i, (gpu, dp) in gpus.items():
        if i == 5:  # 2.5 GT/s while busy: the same sysfs as the idle healthy node
            continue
        expected |= {f"{gpu}/current_link_speed", f"{dp}/current_link_speed", f"{gpu}/config", f"{dp}/config"}
    gpu3, dp3 = gpus[3]
    expected |= {f"{gpu3}/current_link_width", f"{dp3}/current_link_width"}
    sw_c = "sys/devices/pci0000:97/0000:97:01.0/0000:98:00.0"
    expected |= {f"{sw_c}/0000:99:{k:02x}.0/config" for k in range(4)}
    nic7 = "sys/devices/pci0000:b7/0000:b7:01.0/0000:b8:00.0/0000:b9:03.0/0000:bd:00.0"
    expected |= {f"{nic7}/net/enp189s0np0/{f}" for f in ("operstate", "speed", "carrier", "duplex")}
    expected |= {f"{nic7}/infiniband/mlx5_7/ports/1/{f}" for f in ("state", "phys_state")}
    expected |= {k for k in healthy if re.fullmatch(r"sys/kernel/iommu_groups/\d+/type", k)}
    expected |= {f"proc/irq/{irq}/{f}" for irq in range(217, 225)
                 for f in ("smp_affinity_list", "effective_affinity_list")}
    # NIC7 down: its port state in ibv_devinfo and its route; NIC2 DCQCN off; NIC4 sequence errors
    expected |= {"commands/ibv_devinfo_-v", "proc/net/route"}
    nic2 = "sys/devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0/0000:3b:00.0/net/enp59s0np0"
    expected |= {f"{nic2}/ecn/{p}/enable/{k}" for p in ("roce_np", "roce_rp") for k in range(8)}
    nic4 = "sys/devices/pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:01.0/0000:9b:00.0/infiniband/mlx5_4"
    expected |= {f"{nic4}/ports/1/hw_counters/{c}" for c in ("out_of_sequence", "packet_seq_err")}
    assert sorted(changed - expected) == []
    assert sorted(expected - changed) == []


def test_sick_fault_values(trees: dict[str, pathlib.Path]) -> None:
    s = trees["hgx-h100-sick"]
    h = trees["hgx-h100-healthy"]
    gpu3, dp3 = _gpu_dirs()[3]
    assert (s / gpu3 / "current_link_width").read_text() == "8\n"
    assert (h / gpu3 / "current_link_speed").read_text() == "2.5 GT/s PCIe\n"
    assert (h / gpu3 / "current_link_width").read_text() == "16\n"
    assert (s / "proc/sys/net/ipv4/tcp_rmem").read_text() == "4096\t131072\t6291456\n"
    assert (h / "proc/sys/net/ipv4/tcp_rmem").read_text() == "4096\t87380\t2147483647\n"
    env = (s / "proc/4242/environ").read_bytes().split(b"\0")
    assert b"NCCL_IB_DISABLE=1" in env and b"CUDA_LAUNCH_BLOCKING=1" in env and b"NCCL_IB_GID_INDEX=0" in env
    assert (s / "proc/4242/environ").read_bytes().endswith(b"\0")
    argv = (s / "proc/4242/cmdline").read_bytes().split(b"\0")
    assert b"--enforce-eager" in argv and b"sk-FAKE-not-a-real-key-000" in argv
    assert "iommu=pt" not in (s / "proc/cmdline").read_text()
    assert (s / "sys/kernel/iommu_groups/3/type").read_text() == "DMA-FQ\n"
    assert (h / "sys/kernel/iommu_groups/3/type").read_text() == "identity\n"
    assert (s / "sys/class/net/enp189s0np0/operstate").read_text() == "down\n"
    assert (s / "sys/class/infiniband/mlx5_7/ports/1/state").read_text() == "1: DOWN\n"
    lspci = (s / "commands/lspci_-vvv").read_text()
    assert lspci.count("ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+") == 4
    assert "Width x8 (downgraded)" in lspci
    assert "ReqRedir+" not in (h / "commands/lspci_-vvv").read_text().split("ACSCap")[0]
    xml = (s / "commands/nvidia-smi_-q_-x").read_text()
    assert "<current_link_width>8x</current_link_width>" in xml and "<gpu_util>97 %</gpu_util>" in xml
    hxml = (h / "commands/nvidia-smi_-q_-x").read_text()
    assert hxml.count("<clocks_event_reason_gpu_idle>Active<") == 8
    assert hxml.count("<current_link_gen>1</current_link_gen>") == 8
    # healthy environ holds only allowlisted names
    allow = re.compile(rb"^(NCCL_|CUDA_|TORCH_|PYTORCH_|VLLM_|SGLANG_|TRTLLM_|TLLM_|UCX_|NVIDIA_|OMP_)")
    for tree in (h, s):
        for p in tree.glob("proc/*/environ"):
            for kv in p.read_bytes().split(b"\0"):
                assert not kv or allow.match(kv), (p, kv)


def test_gid_attr_files_only_for_used_slots(trees: dict[str, pathlib.Path]) -> None:
    port = trees["hgx-h100-healthy"] / "sys/class/infiniband/mlx5_0/ports/1"
    assert len(list((port / "gids").iterdir())) == 16
    assert sorted(p.name for p in (port / "gid_attrs/types").iterdir()) == ["0", "1", "2", "3"]
    assert (port / "gids/15").read_text() == "0000:0000:0000:0000:0000:0000:0000:0000\n"
    assert (port / "gid_attrs/types/3").read_text() == "RoCE v2\n"


def test_refuses_foreign_directory(tmp_path: pathlib.Path) -> None:
    (tmp_path / "keep.txt").write_text("precious")
    with pytest.raises(ValueError):
        build_node(tmp_path, HEALTHY)
    assert (tmp_path / "keep.txt").read_text() == "precious"


def test_fleet_variant(tmp_path: pathlib.Path) -> None:
    spec = replace(HEALTHY, hostname="gpu-node-123", node_id=123, gpu_links={6: (2.5, 8)},
                   iommu_mode="off", nic_link_layer="InfiniBand")
    build_node(tmp_path / "n", spec)
    root = tmp_path / "n"
    gpu6, _ = _gpu_dirs()[6]
    assert (root / gpu6 / "current_link_width").read_text() == "8\n"
    assert not (root / "sys/kernel/iommu_groups").exists()
    assert (root / "sys/class/infiniband/mlx5_0/ports/1/link_layer").read_text() == "InfiniBand\n"
    build_node(root, HEALTHY)  # a marked fixture may be replaced
    assert (root / "etc/hostname").read_text() == "gpu-node-07\n"


@pytest.mark.skipif(shutil.which("lspci") is None, reason="pciutils not installed")
def test_lspci_text_matches_real_lspci_decoding(trees: dict[str, pathlib.Path]) -> None:
    """pciutils itself, pointed at the tree's sysfs, decodes config space like commands/lspci_-vvv."""
    keys = ("LnkCap:", "LnkSta:", "ACSCtl:", "Kernel driver in use:", "NUMA node:", "IOMMU group:", "Express (v2)")
    for name in COMMITTED:
        root = trees[name]
        proc = subprocess.run(
            ["lspci", "-A", "linux-sysfs", "-O", f"sysfs.path={root}/sys/bus/pci", "-vvv"],
            capture_output=True, text=True, check=False, timeout=60,
        )
        if proc.returncode != 0:
            pytest.skip(f"lspci cannot read a sysfs tree here: {proc.stderr.strip()}")

        def pick(text: str) -> list[str]:
            return [ln.strip() for ln in text.splitlines() if any(k in ln for k in keys)]

        assert pick(proc.stdout) == pick((root / "commands/lspci_-vvv").read_text())


def test_cli_script_runs_from_any_directory(tmp_path: pathlib.Path) -> None:
    """``python fixtures/tools/make_node.py`` (as fixtures/README.md documents) writes the tree, refuses a foreign one."""
    script = REPO / "fixtures/tools/make_node.py"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(script), "--healthy", str(tmp_path / "n")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=False, timeout=120)
    assert run.returncode == 0, run.stderr
    assert snapshot(tmp_path / "n") == rendered(HEALTHY)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign/keep.txt").write_text("precious")
    run = subprocess.run([sys.executable, str(script), "--sick", str(tmp_path / "foreign")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=False, timeout=120)
    assert run.returncode == 2 and run.stderr.startswith("make_node: refusing to replace"), run.stderr
    assert (tmp_path / "foreign/keep.txt").read_text() == "precious"
