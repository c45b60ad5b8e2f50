"""pcie.link_downgrade: real downgrades fire with the right subject and severity; every known trap stays quiet."""

from __future__ import annotations

from pathlib import Path

from doctor.findings import rank
from tests.checks.pcie_overlays import (
    DSP_GPU3,
    GPU0,
    GPU3,
    GPU5,
    NIC2,
    RP_37,
    USP_37,
    attrs,
    busy,
    link,
    node,
    severities,
    sick,
)
from tests.helpers import Link, facts, findings_of

CHECK = "pcie.link_downgrade"


def of(changes: dict | None = None, base=None) -> list:
    return findings_of(node(changes, base), CHECK)


def test_healthy_idle_gpus_are_info_only() -> None:
    found = of()
    assert not any(f.severity in ("critical", "high", "medium", "low", "unknown") for f in found)
    idle = [f for f in found if f.severity == "info"]
    assert idle and "idle" in idle[0].title and "2.5" in idle[0].observed


def test_busy_gpu_at_x8_is_high_and_names_its_switch_port() -> None:
    found = of({**link(GPU3, 32.0, 8), **busy(GPU3)})
    hit = [f for f in found if GPU3 in f.subject]
    assert [f.severity for f in hit] == ["high"]
    assert "x8 of x16" in hit[0].title and DSP_GPU3 in hit[0].related
    assert any(DSP_GPU3 in c for c in hit[0].fix.runtime)
    assert "31.5 GB/s" in hit[0].impact.text and "63.0 GB/s" in hit[0].impact.text


def test_busy_gpu_at_gen1_is_high() -> None:
    found = of({**link(GPU3, 2.5, 16), **busy(GPU3)})
    hit = [f for f in found if GPU3 in f.subject]
    assert [f.severity for f in hit] == ["high"] and "2.5 of 32 GT/s" in hit[0].title


def test_idle_gpu_speed_drop_is_info_not_downgrade() -> None:
    # healthy fixture: every GPU idle (P0, 0 %, idle reason active) at 2.5 GT/s x16
    assert severities(of(), "GPU") <= {"info"}
    assert severities(of(), "node") <= {"info", "pass"}


def test_width_drop_counts_even_while_idle() -> None:
    found = of(link(GPU3, 2.5, 4))
    hit = [f for f in found if GPU3 in f.subject]
    assert hit and hit[0].severity == "high" and "x4 of x16" in hit[0].title


def test_speed_drop_without_runtime_data_is_unknown() -> None:
    found = of({**link(GPU3, 2.5, 16), "commands/nvidia-smi_-q_-x": None})
    hit = [f for f in found if GPU3 in f.subject]
    assert [f.severity for f in hit] == ["unknown"]
    assert "cannot tell idle from busy" in hit[0].title


def test_gen4_card_in_gen3_slot_is_slot_limited_info() -> None:
    changes = {**attrs(GPU3, max_link_speed="16.0 GT/s PCIe"), **attrs(DSP_GPU3, max_link_speed="8.0 GT/s PCIe"),
               **link(GPU3, 8.0, 16), **busy(GPU3)}
    hit = [f for f in of(changes) if GPU3 in f.subject]
    assert [f.severity for f in hit] == ["info"] and "host caps the GPU at 8 GT/s" in hit[0].title
    assert DSP_GPU3 in hit[0].related


def test_narrow_switch_uplink_above_full_width_gpu() -> None:
    changes = {**attrs(USP_37, current_link_width="8"), **attrs(RP_37, current_link_width="8"),
               **link(GPU3, 32.0, 16), **busy(GPU3)}
    found = of(changes)
    hit = [f for f in found if GPU3 in f.subject]
    assert [f.severity for f in hit] == ["high"]
    assert "upstream" in hit[0].title and USP_37 in hit[0].related and RP_37 in hit[0].related
    assert any(RP_37 in c for c in hit[0].fix.runtime)
    nic = [f for f in found if f.subject == NIC2]
    assert nic and nic[0].severity == "high"  # the NIC under the same switch loses the same uplink


def test_nic_speed_drop_is_real_without_activity_gating() -> None:
    hit = [f for f in of(link(NIC2, 16.0, 16)) if f.subject == NIC2]
    assert [f.severity for f in hit] == ["high"] and "16 of 32 GT/s" in hit[0].title


def test_nvme_x4_under_x8_root_port_is_no_finding() -> None:
    changes = attrs("0000:c7:01.0", max_link_width="8")
    assert not [f for f in of(changes) if "c8:00.0" in f.subject or "c7:01.0" in f.subject]


def test_link_width_zero_is_unknown() -> None:
    hit = [f for f in of(attrs(NIC2, current_link_width="0")) if f.subject == NIC2]
    assert [f.severity for f in hit] == ["unknown"] and "0" in hit[0].detail


def test_missing_link_files_are_unknown_not_downgraded() -> None:
    changes = {**attrs(GPU0, current_link_speed=None, current_link_width=None, max_link_speed=None,
                       max_link_width=None), "commands/lspci_-vvv": None,  # lspci would fill them in
               "commands/nvidia-smi_-q_-x": None}  # and so would the driver's view
    hit = [f for f in of(changes) if GPU0 in f.subject]
    assert [f.severity for f in hit] == ["unknown"]


def test_missing_link_files_are_read_from_nvidia_smi() -> None:
    """sysfs link files trimmed, lspci absent: the driver's pci_gpu_link_info is the evidence."""
    changes = {**attrs(GPU0, current_link_speed=None, current_link_width=None, max_link_speed=None,
                       max_link_width=None), "commands/lspci_-vvv": None}
    hit = [f for f in of(changes) if GPU0 in f.subject]
    assert "unknown" not in {f.severity for f in hit}
    gpu = node(changes).gpus.by_address(GPU0)
    assert gpu is not None and gpu.pci is not None and gpu.pci.link_origin == "commands/nvidia-smi_-q_-x"
    assert gpu.pci.cur_width is not None and gpu.pci.attr("current_link_width").startswith("commands/nvidia-smi")


def test_sriov_vf_is_skipped() -> None:
    changes = {**attrs(NIC2, current_link_width="0", current_link_speed="Unknown"),
               **attrs(NIC2, physfn=Link("../0000:3b:00.0"))}
    assert not [f for f in of(changes) if f.subject == NIC2]


def test_virtual_machine_never_downgraded() -> None:
    changes = {**link(GPU3, 32.0, 8), **busy(GPU3), "sys/class/dmi/id/sys_vendor": "QEMU\n",
               "proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu hypervisor\n"}
    found = of(changes)
    assert severities(found) == {"info"}
    assert "virtual machine" in found[0].title


def test_sick_fixture_end_to_end() -> None:
    found = of(base=sick())
    by_subject = {f.subject: f for f in found if f.severity == "high"}
    gpu3 = next(f for s, f in by_subject.items() if GPU3 in s)
    gpu5 = next(f for s, f in by_subject.items() if GPU5 in s)
    assert "x8 of x16" in gpu3.title and "2.5 of 32 GT/s" in gpu5.title
    assert len(by_subject) == 2


def test_integrated_nic_on_root_bus_without_link_files_is_silent() -> None:
    from tests.checks.pcie_overlays import mini_device
    from tests.helpers import facts

    tree = {**mini_device("pci0000:00/0000:00:1f.6", vendor="0x8086", device="0x15bb", **{"class": "0x020000"}),
            "proc/cpuinfo": "flags\t\t: fpu sse\n"}
    assert [f for f in findings_of(facts(tree, base=None), CHECK) if f.severity != "pass"] == []


# A real sysfs tree (open-mpi/hwloc tests/hwloc/linux/32intel64-2p8co2t+8ve.tar.bz2, BSD-3-Clause): the X722 NICs
# built into the C620 chipset read current_link_speed 2.5 GT/s of max 8 GT/s at x1, a stub inside the PCH.
X722_NODE = Path(__file__).resolve().parent.parent / "realworld" / "cases" / "hwloc-xeon-sx-aurora-x722"
X722_UPLINK = "sys/devices/pci0000:5d/0000:5d:02.0/0000:5e:00.0/current_link_width"


def test_chipset_integrated_x722_slow_link_is_reported_low_with_a_throughput_test() -> None:
    found = findings_of(facts(base=X722_NODE), CHECK)
    stub = [f for f in found if f.subject.startswith("0000:60:00.")]
    assert len(stub) == 2 and all(f.severity == "low" and "chipset NIC" in f.title for f in stub)
    assert stub[0].observed.startswith("2.5 GT/s (Gen1) x1") and stub[0].expected.startswith("8 GT/s (Gen3) x1")
    assert "runs at its expected rate" in stub[0].detail and "i40e" in stub[0].detail
    assert stub[0].fix is not None and "iperf3" in stub[0].fix.notes and "reseat" not in stub[0].fix.runtime[0]
    assert stub[0].confidence < 1
    assert not [f for f in found if f.severity not in ("pass", "info", "low")]


def test_chipset_nic_ranks_below_a_downgraded_rdma_nic() -> None:
    """The X722's reading is reported, but ranked below anything on an RDMA NIC's path (here a ConnectX-4 at x8)."""
    hca = "sys/devices/pci0000:17/0000:17:00.0/0000:18:00.0/0000:19:04.0/0000:1a:00.0/current_link_width"
    ranked = rank(findings_of(facts({hca: "8\n"}, base=X722_NODE), CHECK))
    order = [f.subject for f in ranked if f.severity not in ("pass", "info")]
    assert order.index("0000:1a:00.0") < order.index("0000:60:00.0")
    assert order.index("0000:1a:00.0") < order.index("0000:60:00.1")


def test_chipset_uplink_above_the_x722_is_still_checked() -> None:
    found = findings_of(facts({X722_UPLINK: "4\n"}, base=X722_NODE), CHECK)
    hit = [f for f in found if f.subject.startswith("0000:60:00.")]
    assert hit and all(f.severity in ("low", "medium") and "upstream" in f.title for f in hit)
    assert "0000:5d:02.0" in hit[0].related


def test_impossible_link_numbers_are_unreadable_not_healthy() -> None:
    """A width of 2^64, a negative one or a speed that is no PCIe rate is no reading of a link."""
    for changes in (attrs(GPU3, current_link_width=str(2 ** 64), max_link_width=str(2 ** 64)),
                    attrs(GPU3, current_link_width="-16", max_link_width="-16"),
                    attrs(GPU3, current_link_speed="3.7 GT/s PCIe", max_link_speed="99.0 GT/s PCIe")):
        f = node({**changes, **busy(GPU3), "commands/lspci_-vvv": None})
        hit = [x for x in findings_of(f, CHECK) if GPU3 in x.subject]
        assert hit and all(x.severity == "unknown" for x in hit), [(x.severity, x.title) for x in hit]


def test_host_cap_is_named_busy_or_idle() -> None:
    """A Gen4 card under a Gen3 switch port: the host's cap is said whether the GPU is busy or idle."""
    cap = {**attrs(GPU3, max_link_speed="16.0 GT/s PCIe"), **attrs(DSP_GPU3, max_link_speed="8.0 GT/s PCIe")}
    for changes in ({**cap, **link(GPU3, 8.0, 16), **busy(GPU3)}, {**cap, **link(GPU3, 2.5, 16)},
                    {**cap, **link(GPU3, 2.5, 16), "commands/nvidia-smi_-q_-x": None}):
        hit = [f for f in of(changes) if GPU3 in f.subject and "host caps" in f.title]
        assert [f.severity for f in hit] == ["info"], changes
        # the card's own LnkCap2 (in the fixture's config space) lists 32 GT/s: that is what it can do
        assert "8 GT/s (Gen3)" in hit[0].title and "32 GT/s (Gen5)" in hit[0].title and DSP_GPU3 in hit[0].detail


def test_full_path_is_not_host_capped() -> None:
    assert not [f for f in of({**link(GPU3, 32.0, 16), **busy(GPU3)}) if "host caps" in f.title]


def test_gpu_at_x1_below_an_x1_switch_port_is_a_finding_not_unknown() -> None:
    """Riser boards: the GPU trained x1 because its switch port is x1: the path, not the link, is narrow."""
    found = of({**attrs(DSP_GPU3, max_link_width="1"), **link(GPU3, 2.5, 1), "commands/nvidia-smi_-q_-x": None})
    hit = [f for f in found if GPU3 in f.subject and f.severity != "unknown"]
    assert [f.severity for f in hit] == ["low"] and "x1 (the card is x16)" in hit[0].title


def test_soldered_laptop_gpu_at_x8_is_info() -> None:
    """nvidia-smi only (no port): a Laptop GPU at x8 of x16 is the board's wiring; a desktop card is not excused."""
    from tests.checks.test_evidence_sources import _XML

    smi = _XML.replace("<current_link_width>16x", "<current_link_width>8x").format(cur=4, pstate="P0", util=90)
    laptop = smi.replace("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "NVIDIA GeForce RTX 3060 Laptop GPU")
    for text, want in ((laptop, "info"), (smi, "high")):
        f = facts({"commands/nvidia-smi_-q_-x": text}, base=None)
        hit = [x for x in findings_of(f, CHECK) if "0000:61:00.0" in x.subject and "x8" in x.title]
        assert [x.severity for x in hit] == [want], (want, [x.title for x in hit])


def test_portable_chassis_marks_the_gpu_soldered() -> None:
    from doctor.derived.board import soldered_gpu

    f = node({"sys/class/dmi/id/chassis_type": "10\n"})
    assert soldered_gpu(f, GPU3) and "chassis_type is 10" in (soldered_gpu(f, GPU3) or "")
    assert soldered_gpu(node(), GPU3) is None


def test_nic_link_that_still_carries_its_line_rate_is_info() -> None:
    """A 400G NIC at x1 loses nearly everything (high); the same link under a 1 Gb/s port carries it (info)."""
    slow = link(NIC2, 32.0, 1)
    assert [f.severity for f in of(slow) if f.subject == NIC2] == ["high"]
    speed = "sys/devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0/0000:3b:00.0/net/enp59s0np0/speed"
    hit = [f for f in of({**slow, speed: "1000\n"}) if f.subject == NIC2]
    assert [f.severity for f in hit] == ["info"] and "still carries its line rate (1 Gb/s)" in hit[0].title


def test_nic_line_rate_from_the_chip_name() -> None:
    from doctor.derived.net import nic_line_rate
    from doctor.facts import PciDevice

    f = node({"sys/devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0/0000:3b:00.0/net/enp59s0np0/speed": "-1\n"})
    assert nic_line_rate(f, PciDevice("0000:05:00.0", 0x8086, 0x1539, 0x020000, origin="lspci",
                                      name="Intel Corporation I211 Gigabit Network Connection")) == (
        1.0, "0000:05:00.0 1 Gb/s ('Intel Corporation I211 Gigabit Network Connection')")
    assert nic_line_rate(f, f.pci.get(NIC2)) is None  # ConnectX-7: no rate in the name, link down: unknown


NIC2_SPEED = "sys/devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0/0000:3b:00.0/net/enp59s0np0/speed"


def _plain_nic() -> dict:
    """NIC2 as a plain Ethernet NIC (another vendor, no RDMA device): the kind whose downgrades were capped at medium."""
    return {**attrs(NIC2, vendor="0x8086"), "sys/class/infiniband/mlx5_2": None}


def test_nic_below_one_ports_line_rate_is_high_whatever_its_kind() -> None:
    """A 100 GbE port behind a Gen1 x16 link (32 Gb/s) cannot carry its line rate: high, RDMA or plain Ethernet."""
    gen1 = {**link(NIC2, 2.5, 16), NIC2_SPEED: "100000\n"}
    for kind, changes in (("RDMA NIC", gen1), ("NIC", {**gen1, **_plain_nic()})):
        hit = [f for f in of(changes) if f.subject == NIC2]
        assert [f.severity for f in hit] == ["high"], hit
        assert hit[0].title.startswith(f"{kind} path")
        assert "carries 32 Gb/s, below one port's line rate (100 Gb/s)" in hit[0].title
        assert ("line rate", "0000:3b:00.0 100 Gb/s (link speed)") in [(e.source, e.value) for e in hit[0].evidence]


def test_plain_nic_downgrade_without_a_known_line_rate_keeps_the_bandwidth_rule() -> None:
    """Link down (speed -1) and no rate in the name: the bandwidth-loss rule, capped at medium for a plain NIC."""
    hit = [f for f in of({**link(NIC2, 2.5, 16), NIC2_SPEED: "-1\n", **_plain_nic()}) if f.subject == NIC2]
    assert [f.severity for f in hit] == ["medium"] and "line rate" not in hit[0].title


def test_nic_link_that_carries_its_line_rate_is_info_even_when_narrow() -> None:
    """A 100 GbE port at x8 of a Gen5 x16 link (252 Gb/s) still carries its line rate: info, though half the lanes are gone."""
    hit = [f for f in of({**link(NIC2, 32.0, 8), NIC2_SPEED: "100000\n"}) if f.subject == NIC2]
    assert [f.severity for f in hit] == ["info"] and "still carries its line rate (100 Gb/s)" in hit[0].title


def test_line_rate_severity_rule() -> None:
    """One rule: every port together -> info; short of one port -> high (medium under a quarter short);
    one port carried but not all together -> medium from a quarter lost, else low."""
    from checks.pcie_link_downgrade import line_rate_severity
    from doctor.derived.net import LineRate

    quad_1g, dual_100g, one_25g = LineRate((1.0,) * 4, ""), LineRate((100.0, 100.0), ""), LineRate((25.0,), "")
    assert line_rate_severity(4.0, quad_1g) == "info"  # quad 1 GbE at Gen1 x1 of x2: 4 Gb/s carried
    assert line_rate_severity(32.0, dual_100g) == "high"  # 100 GbE at Gen1 x16
    assert line_rate_severity(21.0, one_25g) == "medium"  # 16 % short of one port
    assert line_rate_severity(126.0, dual_100g) == "medium"  # Gen4 x8: each port alone, 37 % short together
    assert line_rate_severity(170.0, dual_100g) == "low"  # 15 % short together


def _rciep_config() -> bytes:
    """Config space of a Root Complex Integrated Endpoint: a capability list whose only entry, at 0x40, is the PCI
    Express capability with device type 9 (version 2)."""
    cfg = bytearray(256)
    cfg[0:4] = bytes.fromhex("8680bb15")
    cfg[0x06], cfg[0x34] = 0x10, 0x40
    cfg[0x40:0x43] = bytes([0x10, 0x00, 0x92])
    return bytes(cfg)


def _lspci_nic(record: str) -> list:
    tree = {"commands/lspci_-nnvvv": record, "proc/cpuinfo": "flags\t\t: fpu sse\n"}
    return findings_of(facts(tree, base=None), CHECK)


I219 = ("0000:00:1f.6 Ethernet controller [0200]: Intel Corporation Ethernet Connection (2) I219-LM [8086:15b7]\n"
        "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-\n"
        "\tCapabilities: [c8] Power Management version 3\n"
        "\tCapabilities: [d0] MSI: Enable+ Count=1/1 Maskable- 64bit+\n"
        "\tCapabilities: [e0] PCI Advanced Features\n"
        "\tKernel driver in use: e1000e\n")


def test_function_without_a_pcie_link_does_not_apply_with_its_reason() -> None:
    """The X299 board's I219-LM (the real bug report's 00:1f.6) has no PCI Express capability: no link to judge,
    said so, never 'PCIe link state not readable'."""
    found = _lspci_nic(I219)
    assert [f.severity for f in found] == ["pass"]
    assert "no PCIe link to judge" in found[0].title and "no PCI Express capability" in found[0].detail
    assert "0000:00:1f.6" in found[0].related


def test_root_complex_integrated_endpoint_has_no_link_live_or_lspci() -> None:
    rciep = I219.replace("\tCapabilities: [e0] PCI Advanced Features\n",
                         "\tCapabilities: [40] Express (v2) Root Complex Integrated Endpoint, MSI 00\n")
    found = _lspci_nic(rciep)
    assert [f.severity for f in found] == ["pass"] and "Root Complex Integrated Endpoint" in found[0].detail
    # sysfs of an RCiEP: the link files exist but read 0 and Unknown (Link Status is not implemented)
    from tests.checks.pcie_overlays import mini_device

    tree = {**mini_device("pci0000:00/0000:00:1f.6", vendor="0x8086", device="0x15bb", current_link_width="0",
                          current_link_speed="Unknown", max_link_width="0", max_link_speed="Unknown",
                          **{"class": "0x020000"}),
            "sys/devices/pci0000:00/0000:00:1f.6/config": _rciep_config(), "proc/cpuinfo": "flags\t\t: fpu sse\n"}
    found = findings_of(facts(tree, base=None), CHECK)
    assert [f.severity for f in found] == ["pass"] and "part of the root complex" in found[0].detail


def test_capability_present_but_unreadable_stays_unknown() -> None:
    """Not root: lspci shows ``Capabilities: <access denied>``; the function may well have a link."""
    denied = I219.split("\tCapabilities")[0] + "\tCapabilities: <access denied>\n\tKernel driver in use: e1000e\n"
    found = _lspci_nic(denied)
    assert [f.severity for f in found] == ["unknown"] and "not readable" in found[0].title
