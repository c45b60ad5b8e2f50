"""Path words, switch hops, nearest NIC, GPU<->NIC relations and chipset/C2C detection (doctor.derived)."""

from __future__ import annotations

from doctor.derived.chipset import amd_chipset, behind_chipset, c2c_gpu, intel_pch
from doctor.derived.net import is_rdma_nic, subject_nics
from doctor.derived.paths import bridges_between, nearest_nic, path_word, switch_hops, word_rank
from doctor.derived.relations import gpu_idle, gpu_label, gpu_nics
from tests.checks.pcie_overlays import GPU0, GPU2, attrs, node
from tests.checks.test_pcie_chipset_slot import _pch_tree
from tests.helpers import facts, healthy, sick

NIC0 = "0000:19:00.0"


def test_path_words_on_the_hgx_node() -> None:
    f = facts(base=healthy())
    assert path_word(f.pci, GPU0, NIC0) == "PIX"  # GPU and NIC below one switch
    assert path_word(f.pci, GPU0, GPU2) in ("NODE", "SYS", "PHB")  # different root ports
    assert path_word(f.pci, GPU0, "0000:ff:00.0") is None  # a device that does not exist
    assert switch_hops(f.pci, GPU0) == 1
    assert word_rank("PIX") < word_rank("SYS") < word_rank(None)
    assert bridges_between(f.pci, GPU0, NIC0) and not bridges_between(f.pci, GPU0, GPU2)


def test_nearest_nic_and_gpu_nic_relations_agree() -> None:
    f = facts(base=sick())
    rdma = [n for n in subject_nics(f) if is_rdma_nic(f, n)]
    pairs = gpu_nics(f)
    assert len(pairs) == len(f.pci.gpus) == 8
    for pair in pairs:
        hit = nearest_nic(f.pci, pair.gpu.address, rdma, f.numa)
        assert hit is not None and (hit[0], hit[1]) == (pair.nic, pair.word)
        assert pair.gpu_numa == pair.gpu.numa_node and pair.nic is not None and pair.nic_numa == pair.nic.numa_node
    assert gpu_nics(f) == pairs  # cached: the same answer, computed once
    assert f.derived["relations.gpu_nics"] == tuple(pairs)


def test_gpu_labels_and_idleness() -> None:
    f = facts(base=healthy())
    assert gpu_label(f, GPU0) == f"GPU 0 ({GPU0})" and gpu_label(f, NIC0) == NIC0
    assert gpu_idle(f, GPU0) and not gpu_idle(facts(base=sick()), GPU0)


def test_intel_pch_is_decided_by_id_and_falls_back_to_the_lpc_bridge() -> None:
    f = facts(_pch_tree(), base=None)  # 8086:a110, a Sunrise Point-H PCH root port
    gpu = f.pci.get("0000:02:00.0")
    assert gpu is not None
    hit = intel_pch(f, gpu)
    assert hit is not None and hit[0].address == "0000:00:1c.0" and "device id" in hit[1]
    assert behind_chipset(f, gpu)
    cpu_port = facts(_pch_tree("0000:00:01.0", device="0x1901"), base=None)
    assert intel_pch(cpu_port, cpu_port.pci.get("0000:02:00.0")) is None  # type: ignore[arg-type]
    # an Intel root port whose id no table knows: a PCH position counts only with the LPC bridge present
    unknown = facts(_pch_tree(device="0x0001"), base=None)
    hit = intel_pch(unknown, unknown.pci.get("0000:02:00.0"))  # type: ignore[arg-type]
    assert hit is not None and "0000:00:1f.0" in hit[1]
    no_lpc = facts(_pch_tree(device="0x0001", lpc=False), base=None)
    assert intel_pch(no_lpc, no_lpc.pci.get("0000:02:00.0")) is None  # type: ignore[arg-type]


def test_amd_chipset_and_cpu_root_ports() -> None:
    f = node(attrs("0000:16:00.0", vendor="0x1022", device="0x43f4"))
    gpu = f.pci.get(GPU0)
    assert gpu is not None and [b.address for b, _ in amd_chipset(f, gpu)] == ["0000:16:00.0"]
    plain = facts(base=healthy())
    assert not any(behind_chipset(plain, d) for d in plain.pci.gpus)  # HGX GPUs hang off CPU root ports


def test_c2c_gpu_by_device_id_or_name() -> None:
    f = facts(base=healthy())
    assert not c2c_gpu(f, GPU0)
    gh = node(attrs(GPU0, device="0x2342"))
    assert c2c_gpu(gh, GPU0)
