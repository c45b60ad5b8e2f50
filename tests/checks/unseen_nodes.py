"""Node shapes the committed HGX fixtures do not cover, built as overlays on an empty tree.

Values follow what Linux and NVIDIA print on such machines (public recordings). Formats the HGX
generator (``fixtures/tools/node/``) already writes come from it: link speed strings, RoCE GID tables,
``/proc/<pid>/status`` and the kubelet config.

* DGX A100: 2x AMD EPYC 7742 (Rome, root ports 1022:1483 "Starship/Matisse GPP Bridge"), PLX/Broadcom
  PEX88096 Gen4 switches (1000:c010) with 2 A100-SXM4 (10de:20b0, class 0x0302) and 2 ConnectX-6
  (15b3:101b, InfiniBand HDR "200 Gb/sec (4X HDR)") each; NVSwitches (10de:1af1, class 0x0680); idle
  A100s report P0, 0 %, clocks_event_reason_gpu_idle Active and train at 2.5 GT/s x16.
* Workstation: Intel Z790 (PCH root ports 00:1c.x 8086:7a38..., LPC/eSPI 00:1f.0 8086:7a06 class 0x0601),
  CPU PEG port 00:01.0 (8086:a70d), RTX 4090 (10de:2684, class 0x0300) idle P8 at 2.5 GT/s x16.
* AWS p4d: 440FX chipset (ISA bridge at 00:01.0), GPUs and EFA (1d0f:efa0, class 0x0200) straight on
  per-NUMA root buses ``10:1c.0``; EFA ports have ``link_layer`` "Unknown"; DMI "Amazon EC2".
* GH200: aarch64 ``Features`` line, one Grace CPU node (0-71) and 8 CPU-less nodes; the GPU
  (10de:2342) at 0009:01:00.0 on its own root port; one ConnectX-7 (15b3:1021).
* L40S: 2x Xeon (Sapphire Rapids root ports 8086:352a), 4 L40S (10de:26b9) on CPU root ports, ConnectX-6 Dx
  (15b3:101d) RoCE with the kernel's four-entry GID table (fe80 v1/v2, ::ffff:IPv4 v1/v2).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from doctor.facts import Facts
from fixtures.tools.node.net import roce_gid_table
from fixtures.tools.node.procs import proc_status
from fixtures.tools.node.system import KUBELET_TEMPLATE
from fixtures.tools.node.topology import GEN_SPEED
from tests.helpers import Link
from tests.helpers import facts as helper_facts

Changes = dict[str, "bytes | str | Link | None"]

NVIDIA, MELLANOX, INTEL, AMD, PLX, AMAZON = 0x10DE, 0x15B3, 0x8086, 0x1022, 0x1000, 0x1D0F
GPU_3D, GPU_VGA, BRIDGE, NIC_ETH, NIC_IB, BRIDGE_OTHER, ISA, NVME = (
    0x030200, 0x030000, 0x060400, 0x020000, 0x020700, 0x068000, 0x060100, 0x010802)
#: PCI Express capability port types (config offset cap+2 bits 7:4).
PORT_TYPE = {"endpoint": 0, "root": 4, "upstream": 5, "downstream": 6}
SMI_XML = "commands/nvidia-smi_-q_-x"


def config_space(port_type: str | None, acs_ctl: int | None = None) -> bytes:
    """A 4 KiB config space with a PCIe capability (port type) and, optionally, ACS control."""
    data = bytearray(4096)
    if port_type is not None:
        data[0x06] = 0x10  # capabilities list
        data[0x34] = 0x40
        data[0x40], data[0x41] = 0x10, 0x00
        data[0x42] = (PORT_TYPE[port_type] << 4) | 0x2
    if acs_ctl is not None:
        data[0x100:0x104] = (0x000D | (1 << 16)).to_bytes(4, "little")  # ACS, version 1, last capability
        data[0x106:0x108] = acs_ctl.to_bytes(2, "little")
    return bytes(data)


@dataclass
class Node:
    """Accumulates sysfs/procfs/command files of one node, as an overlay for an empty tree."""

    files: Changes = field(default_factory=dict)
    _groups: int = 0

    def put(self, path: str, value: str | bytes | Link) -> Node:
        self.files[path] = value if isinstance(value, (bytes, Link)) else value
        return self

    # --- PCI -----------------------------------------------------------------------------------
    def pci(self, chain: str, vendor: int, device: int, cls: int, *, driver: str | None = None,
            numa: int | None = -1, cpus: str | None = None, speed: str | None = None, width: int | None = None,
            max_speed: str | None = None, max_width: int | None = None, port: str | None = None,
            acs: int | None = None, group: int | None = None, override: str | None = None) -> str:
        """A PCI function at ``chain`` (``pci0000:00/0000:00:01.0/0000:01:00.0``); returns its address."""
        bdf = chain.rsplit("/", 1)[-1]
        folder = f"sys/devices/{chain}"
        self.files[f"sys/bus/pci/devices/{bdf}"] = Link(f"../../../devices/{chain}")
        values = {"vendor": f"0x{vendor:04x}", "device": f"0x{device:04x}", "class": f"0x{cls:06x}",
                  "numa_node": None if numa is None else str(numa), "local_cpulist": cpus,
                  "current_link_speed": speed, "current_link_width": None if width is None else str(width),
                  "max_link_speed": max_speed or speed,
                  "max_link_width": None if (max_width or width) is None else str(max_width or width),
                  "driver_override": override or "(null)", "power_state": "D0"}
        for name, value in values.items():
            if value is not None:
                self.files[f"{folder}/{name}"] = f"{value}\n"
        self.files[f"{folder}/config"] = config_space(port, acs)
        if driver:
            self.files[f"{folder}/driver"] = Link(f"../../../../bus/pci/drivers/{driver}")
        if group is not None:
            self.files[f"{folder}/iommu_group"] = Link(f"../../../../kernel/iommu_groups/{group}")
            self.files[f"sys/kernel/iommu_groups/{group}/devices/{bdf}"] = Link(f"../../../../devices/{chain}")
        return bdf

    def iommu(self, group_type: str, units: Iterable[str]) -> Node:
        for unit in units:
            self.files[f"sys/class/iommu/{unit}"] = Link(f"../../devices/virtual/iommu/{unit}")
        for path in [p for p in self.files if p.startswith("sys/kernel/iommu_groups/") and "/devices/" in p]:
            group = path.split("/")[3]
            self.files[f"sys/kernel/iommu_groups/{group}/type"] = f"{group_type}\n"
        return self

    # --- network and RDMA ---------------------------------------------------------------------
    def netdev(self, chain: str, name: str, speed: int, mtu: int = 1500, up: bool = True) -> Node:
        folder = f"sys/devices/{chain}/net/{name}"
        bdf = chain.rsplit("/", 1)[-1]
        self.files[f"sys/class/net/{name}"] = Link(f"../../devices/{chain}/net/{name}")
        self.files[f"{folder}/device"] = Link(f"../../../{bdf}")
        for key, value in (("speed", speed if up else -1), ("mtu", mtu), ("operstate", "up" if up else "down"),
                           ("carrier", 1 if up else 0), ("type", 1), ("address", "0c:42:a1:00:00:01")):
            self.files[f"{folder}/{key}"] = f"{value}\n"
        return self

    def rdma(self, chain: str, name: str, link_layer: str, rate: str, *, active: bool = True,
             gids: Iterable[tuple[str, str | None, str | None]] = ()) -> Node:
        """An RDMA device with port 1; ``gids`` rows are (gid, type, ndev)."""
        folder = f"sys/devices/{chain}/infiniband/{name}"
        bdf = chain.rsplit("/", 1)[-1]
        self.files[f"sys/class/infiniband/{name}"] = Link(f"../../devices/{chain}/infiniband/{name}")
        self.files[f"{folder}/device"] = Link(f"../../../{bdf}")
        port = f"{folder}/ports/1"
        self.files[f"{port}/link_layer"] = f"{link_layer}\n"
        self.files[f"{port}/state"] = "4: ACTIVE\n" if active else "1: DOWN\n"
        self.files[f"{port}/phys_state"] = "5: LinkUp\n" if active else "3: Disabled\n"
        self.files[f"{port}/rate"] = f"{rate}\n"
        rows = list(gids)
        for i, (gid, kind, ndev) in enumerate(rows):
            self.files[f"{port}/gids/{i}"] = f"{gid}\n"
            if kind is not None:
                self.files[f"{port}/gid_attrs/types/{i}"] = f"{kind}\n"
            if ndev is not None:
                self.files[f"{port}/gid_attrs/ndevs/{i}"] = f"{ndev}\n"
        if not rows:
            self.files[f"{port}/gids/0"] = "fe80:0000:0000:0000:0c42:a103:0000:0001\n"
        return self

    # --- CPUs, kernel, host -------------------------------------------------------------------
    def numa(self, cpulists: list[str]) -> Node:
        n = len(cpulists)
        for i, cpus in enumerate(cpulists):
            self.files[f"sys/devices/system/node/node{i}/cpulist"] = f"{cpus}\n"
            dist = " ".join("10" if j == i else "32" for j in range(n))
            self.files[f"sys/devices/system/node/node{i}/distance"] = f"{dist}\n"
        return self

    def cpuinfo(self, vendor: str, model: str, flags: str, arm: bool = False) -> Node:
        if arm:
            text = (f"processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: {flags}\nCPU implementer\t: 0x41\n"
                    "CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n\n")
        else:
            text = f"processor\t: 0\nvendor_id\t: {vendor}\nmodel name\t: {model}\nflags\t\t: {flags}\n\n"
        return self.put("proc/cpuinfo", text)

    def dmi(self, vendor: str, product: str) -> Node:
        return self.put("sys/class/dmi/id/sys_vendor", f"{vendor}\n").put("sys/class/dmi/id/product_name",
                                                                            f"{product}\n")

    def kernel(self, cmdline: str, modules: Iterable[str], sysctls: dict[str, str] | None = None,
               hostname: str = "node") -> Node:
        self.put("proc/cmdline", f"{cmdline}\n").put("proc/sys/kernel/hostname", f"{hostname}\n")
        self.put("proc/sys/kernel/osrelease", "6.8.0-49-generic\n")
        self.put("etc/os-release", 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\n')
        self.put("proc/modules", "".join(f"{m} 16384 0 - Live 0x0000000000000000\n" for m in modules))
        base = dict(DEFAULT_SYSCTLS)
        base.update(sysctls or {})
        for key, value in base.items():
            self.put("proc/sys/" + key.replace(".", "/"), f"{value}\n")
        return self

    def process(self, pid: int, argv: list[str], name: str, cpus: str, ppid: int = 1,
                env: dict[str, str] | None = None) -> Node:
        self.put(f"proc/{pid}/cmdline", b"".join(a.encode() + b"\0" for a in argv))
        self.put(f"proc/{pid}/status", proc_status(name, pid, ppid, cpus, "0-1", threads=8, rss_kb=1_048_576))
        self.put(f"proc/{pid}/environ", b"".join(f"{k}={v}".encode() + b"\0" for k, v in (env or {}).items()))
        return self

    def kubelet(self, cpu: str, topology: str, scope: str = "pod") -> Node:
        return self.put("var/lib/kubelet/config.yaml",
                        KUBELET_TEMPLATE.format(cpu=cpu, topo=topology, scope=scope, reserved="0,1"))

    def smi(self, gpus: list[SmiGpu], driver: str = "550.127.05", cuda: str = "12.4") -> Node:
        body = "".join(g.xml() for g in gpus)
        return self.put(SMI_XML, '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
                                 f"<nvidia_smi_log>\n<driver_version>{driver}</driver_version>\n"
                                 f"<cuda_version>{cuda}</cuda_version>\n<attached_gpus>{len(gpus)}</attached_gpus>\n"
                                 f"{body}</nvidia_smi_log>\n")

    def facts(self) -> Facts:
        return helper_facts(self.files, base=None)


#: Distribution defaults (Ubuntu 22.04, kernel 6.8) of the sysctls the doctor reads.
DEFAULT_SYSCTLS = {
    "net.core.rmem_max": "212992", "net.core.wmem_max": "212992", "net.core.netdev_max_backlog": "1000",
    "net.core.somaxconn": "4096", "net.ipv4.tcp_rmem": "4096\t131072\t6291456",
    "net.ipv4.tcp_wmem": "4096\t16384\t4194304", "net.ipv4.tcp_slow_start_after_idle": "1",
    "kernel.numa_balancing": "0", "vm.zone_reclaim_mode": "0",
}
TUNED_SYSCTLS = {
    "net.core.rmem_max": "268435456", "net.core.wmem_max": "268435456", "net.core.netdev_max_backlog": "250000",
    "net.ipv4.tcp_rmem": "4096\t87380\t268435456", "net.ipv4.tcp_wmem": "4096\t65536\t268435456",
    "net.ipv4.tcp_slow_start_after_idle": "0", "kernel.numa_balancing": "0",
}


@dataclass(frozen=True)
class SmiGpu:
    """One ``<gpu>`` block of ``nvidia-smi -q -x`` with the fields the doctor reads."""

    bus: str  # "0000:07:00.0"
    name: str
    pstate: str = "P0"
    util: int = 0
    idle: bool = True
    gen: tuple[int, int] = (4, 1)  # (max, current)
    width: int = 16
    mig: bool = False
    pids: tuple[int, ...] = ()

    def xml(self) -> str:
        domain, rest = self.bus.split(":", 1)
        procs = "".join(f"<process_info><pid>{p}</pid><type>C</type><process_name>python3</process_name>"
                        "<used_memory>70000 MiB</used_memory></process_info>" for p in self.pids)
        return (f'<gpu id="0000{domain}:{rest.upper()}">\n<product_name>{self.name}</product_name>\n'
                f"<mig_mode><current_mig>{'Enabled' if self.mig else 'Disabled'}</current_mig>"
                f"<pending_mig>{'Enabled' if self.mig else 'Disabled'}</pending_mig></mig_mode>\n"
                "<persistence_mode>Enabled</persistence_mode>\n"
                "<gpu_reset_status><reset_required>No</reset_required>"  # as R535-R565 drivers print it
                "<drain_and_reset_recommended>No</drain_and_reset_recommended></gpu_reset_status>\n"
                f"<pci><pci_bus_id>0000{domain}:{rest.upper()}</pci_bus_id><pci_gpu_link_info><pcie_gen>"
                f"<max_link_gen>{self.gen[0]}</max_link_gen><current_link_gen>{self.gen[1]}</current_link_gen>"
                f"<device_current_link_gen>{self.gen[1]}</device_current_link_gen>"
                f"<max_device_link_gen>{self.gen[0]}</max_device_link_gen>"
                f"<max_host_link_gen>{self.gen[0]}</max_host_link_gen></pcie_gen>"
                f"<link_widths><max_link_width>{self.width}x</max_link_width>"
                f"<current_link_width>{self.width}x</current_link_width></link_widths></pci_gpu_link_info>"
                "<replay_counter>0</replay_counter></pci>\n"
                f"<performance_state>{self.pstate}</performance_state>\n<clocks_event_reasons>"
                f"<clocks_event_reason_gpu_idle>{'Active' if self.idle else 'Not Active'}"
                "</clocks_event_reason_gpu_idle><clocks_event_reason_sw_power_cap>Not Active"
                "</clocks_event_reason_sw_power_cap></clocks_event_reasons>\n"
                f"<utilization><gpu_util>{self.util} %</gpu_util><memory_util>0 %</memory_util></utilization>\n"
                f"<processes>{procs}</processes>\n</gpu>\n")


GEN = GEN_SPEED


def roce_gids(mac_tail: str, ipv4: str, ndev: str) -> list[tuple[str, str | None, str | None]]:
    """The kernel's GID table for a RoCE netdev with one IPv4 address: fe80 v1/v2, ::ffff:a.b.c.d v1/v2."""
    a, b, c, d = (int(x) for x in ipv4.split("."))
    return [(g, t, ndev) for g, t in roce_gid_table(f"fe80:0000:0000:0000:{mac_tail}", (a, b, c, d))]


# --- shape 1: DGX A100 -----------------------------------------------------------------------------
A100 = "NVIDIA A100-SXM4-80GB"
#: (root port, switch upstream, [(downstream port, GPU), ...], [(downstream port, HCA, ib name, netdev)])
DGX_A100_SWITCHES = (
    ("0000:00:01.1", "0000:01:00.0", ("0000:07", "0000:0b"), ("0000:0c", "0000:0d")),
    ("0000:40:01.1", "0000:41:00.0", ("0000:47", "0000:4e"), ("0000:4b", "0000:54")),
    ("0000:80:01.1", "0000:81:00.0", ("0000:87", "0000:90"), ("0000:8b", "0000:94")),
    ("0000:c0:01.1", "0000:c1:00.0", ("0000:b7", "0000:bd"), ("0000:ba", "0000:be")),
)


def dgx_a100(nps4: bool = False, iommu: str = "pt") -> Node:
    """DGX A100: 2x EPYC 7742, 4 PEX88096 switches, 8 idle A100 at Gen1 x16, 8 HDR HCAs, 6 NVSwitches.

    ``nps4`` gives 8 NUMA nodes (4 per socket); ``iommu`` is ``pt`` (iommu=pt on the boot line) or
    ``default`` (AMD IOMMU on by default, groups of type DMA).
    """
    n = Node()
    nodes = [f"{i * 16}-{i * 16 + 15},{128 + i * 16}-{128 + i * 16 + 15}" for i in range(8)] if nps4 else \
        ["0-63,128-191", "64-127,192-255"]
    n.numa(nodes)
    n.cpuinfo("AuthenticAMD", "AMD EPYC 7742 64-Core Processor", "fpu vme de pse tsc msr pae mce cx8 apic sep "
              "sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl nonstop_tsc "
              "cpuid extd_apicid aperfmperf pni pclmulqdq monitor ssse3 fma cx16 sse4_1 sse4_2 x2apic movbe "
              "popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy svm extapic cr8_legacy abm sse4a "
              "misalignsse 3dnowprefetch osvw ibs skinit wdt tce topoext perfctr_core perfctr_nb bpext "
              "perfctr_llc mwaitx cpb cat_l3 cdp_l3 hw_pstate ssbd mba ibrs ibpb stibp vmmcall fsgsbase bmi1 "
              "avx2 smep bmi2 cqm rdt_a rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 "
              "cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local clzero irperf xsaveerptr rdpru wbnoinvd "
              "arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists pausefilter "
              "pfthreshold avic v_vmsave_vmload vgif umip rdpid overflow_recov succor smca sme sev sev_es")
    n.dmi("NVIDIA", "DGXA100 920-23687-2530-000")
    group = 10
    smi: list[SmiGpu] = []
    gpu_index = 0
    for s, (root, usp, gpu_buses, nic_buses) in enumerate(DGX_A100_SWITCHES):
        socket_node = (s // 2) if not nps4 else [3, 1, 7, 5][s]
        cpus = nodes[socket_node]
        host = f"pci0000:{root[5:7]}"
        rp = f"{host}/{root}"
        n.pci(rp, AMD, 0x1483, BRIDGE, driver="pcieport", numa=socket_node, cpus=cpus, speed=GEN[4], width=16,
              port="root", acs=0x001D, group=group)
        up = f"{rp}/{usp}"
        n.pci(up, PLX, 0xC010, BRIDGE, driver="pcieport", numa=socket_node, cpus=cpus, speed=GEN[4], width=16,
              port="upstream", group=group)
        sec = f"0000:{int(usp[5:7], 16) + 1:02x}"
        dsp_no = 0
        for bus in gpu_buses:
            dsp = f"{up}/{sec}:{dsp_no:02x}.0"
            dsp_no += 4
            n.pci(dsp, PLX, 0xC010, BRIDGE, driver="pcieport", numa=socket_node, cpus=cpus, speed=GEN[1],
                  width=16, max_speed=GEN[4], port="downstream", acs=0x0000, group=group + 1)
            gpu = n.pci(f"{dsp}/{bus}:00.0", NVIDIA, 0x20B2, GPU_3D, driver="nvidia", numa=socket_node, cpus=cpus,
                        speed=GEN[1], width=16, max_speed=GEN[4], port="endpoint", group=group + 1)
            smi.append(SmiGpu(gpu, A100, gen=(4, 1)))
            group += 2
            gpu_index += 1
        for j, bus in enumerate(nic_buses):
            dsp = f"{up}/{sec}:{dsp_no:02x}.0"
            dsp_no += 4
            n.pci(dsp, PLX, 0xC010, BRIDGE, driver="pcieport", numa=socket_node, cpus=cpus, speed=GEN[4],
                  width=16, port="downstream", acs=0x0000, group=group)
            chain = f"{dsp}/{bus}:00.0"
            n.pci(chain, MELLANOX, 0x101B, NIC_IB, driver="mlx5_core", numa=socket_node, cpus=cpus, speed=GEN[4],
                  width=16, port="endpoint", group=group)
            ib = f"mlx5_{2 * s + j}"
            n.rdma(chain, ib, "InfiniBand", "200 Gb/sec (4X HDR)",
                   gids=[(f"fe80:0000:0000:0000:0c42:a103:00{s}{j}:ee10", None, None)])
            n.netdev(chain, f"ibp{int(bus[5:7], 16)}s0", 200000, mtu=4092)
            group += 1
    for k in range(6):  # NVSwitches sit below their own PCIe bridge on socket 1
        n.pci(f"pci0000:c0/0000:c0:03.1/0000:c4:00.0/0000:c5:{k:02x}.0", NVIDIA, 0x1AF1, BRIDGE_OTHER,
              driver="nvidia", numa=1 if not nps4 else 5, cpus=nodes[1 if not nps4 else 5], speed=GEN[3], width=2,
              port="endpoint")
    n.pci("pci0000:c0/0000:c0:03.1", AMD, 0x1483, BRIDGE, driver="pcieport", numa=1, speed=GEN[3], width=4,
          port="root")
    n.pci("pci0000:c0/0000:c0:03.1/0000:c4:00.0", PLX, 0x8725, BRIDGE, driver="pcieport", numa=1, speed=GEN[3],
          width=4, port="upstream")
    # management NIC: on-board Intel X550 on socket 0
    mgmt = "pci0000:20/0000:20:03.1/0000:23:00.0"
    n.pci("pci0000:20/0000:20:03.1", AMD, 0x1483, BRIDGE, driver="pcieport", numa=0, cpus=nodes[0],
          speed=GEN[3], width=4, port="root")
    n.pci(mgmt, INTEL, 0x1563, NIC_ETH, driver="ixgbe", numa=0, cpus=nodes[0], speed=GEN[3], width=4,
          port="endpoint")
    n.netdev(mgmt, "enp35s0f0", 10000)
    n.pci("pci0000:00/0000:00:00.0", AMD, 0x1480, 0x060000, numa=0)  # root complex (host bridge)
    cmd = "BOOT_IMAGE=/boot/vmlinuz-5.15.0-1042-nvidia root=UUID=0b6f ro"
    if iommu == "pt":
        cmd += " iommu=pt"
        n.iommu("identity", [f"ivhd{i}" for i in range(8)])
    else:
        n.iommu("DMA", [f"ivhd{i}" for i in range(8)])
    n.kernel(cmd, ["nvidia", "nvidia_uvm", "nvidia_peermem", "mlx5_core", "mlx5_ib", "ib_uverbs", "ib_core"],
             TUNED_SYSCTLS, hostname="dgx-a100-03")
    n.smi(smi, driver="535.183.01", cuda="12.2")
    n.put("proc/1/status", "Name:\tsystemd\nPPid:\t0\nCpus_allowed_list:\t0-255\n")
    n.put("proc/1/cmdline", b"/sbin/init\0")
    # an NVSwitch system runs the Fabric Manager (gpu.fabric)
    n.process(2314, ["/usr/bin/nv-fabricmanager", "-c", "/usr/share/nvidia/nvswitch/fabricmanager.cfg"],
              "nv-fabricmanager", "0-255")
    return n


def dgx_a100_addresses(n: Node) -> list[str]:
    """The GPU addresses of a :func:`dgx_a100` node, in bus order."""
    return sorted(p.rsplit("/", 1)[-1] for p in n.files if p.startswith("sys/bus/pci/devices/")
                  and n.files.get(_dev_folder(n, p) + "/class") == f"0x{GPU_3D:06x}\n")


def _dev_folder(n: Node, link_path: str) -> str:
    target = n.files[link_path]
    assert isinstance(target, Link)
    return "sys/devices/" + target.target.split("devices/", 1)[1]


# --- shape 2: single-GPU workstation -----------------------------------------------------------------
RTX4090 = "NVIDIA GeForce RTX 4090"


#: A kernel log without NVIDIA Xid lines (gpu.xid_errors passes instead of saying unknown).
CLEAN_DMESG = ("[    0.000000] Linux version 6.8.0-49-generic (buildd@lcy02-amd64-030) #49-Ubuntu SMP\n"
               "[    5.204211] nvidia: module license 'NVIDIA' taints kernel.\n"
               "[    5.391045] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024\n")


def workstation(gpu_behind_pch: bool = False) -> Node:
    """Z790 desktop: RTX 4090 on the CPU's PEG port 00:01.0 (or, as a fault, the PCH port 00:1c.4)."""
    n = Node()
    n.numa(["0-31"])
    n.cpuinfo("GenuineIntel", "13th Gen Intel(R) Core(TM) i9-13900K",
              "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr "
              "sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts "
              "rep_good nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq dtes64 monitor "
              "ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt "
              "tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb ssbd "
              "ibrs ibpb stibp ibrs_enhanced tpr_shadow flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 "
              "avx2 smep bmi2 erms invpcid rdseed adx smap clflushopt clwb intel_pt sha_ni xsaveopt xsavec "
              "xgetbv1 xsaves split_lock_detect avx_vnni dtherm ida arat pln pts hwp hwp_notify hwp_act_window "
              "hwp_epp hwp_pkg_req hfi vnmi umip pku ospke waitpkg gfni vaes vpclmulqdq rdpid movdiri movdir64b "
              "fsrm md_clear serialize pconfig arch_lbr ibt flush_l1d arch_capabilities")
    n.dmi("ASUS", "System Product Name")
    n.pci("pci0000:00/0000:00:00.0", INTEL, 0xA700, 0x060000, numa=-1)
    n.pci("pci0000:00/0000:00:1f.0", INTEL, 0x7A06, ISA, numa=-1)  # Z790 LPC/eSPI controller
    pch = [("0000:00:1c.0", 0x7A38, "0000:03:00.0", (0x8086, 0x125C, NIC_ETH, "igc", "enp3s0", 1000)),  # I226-V
           ("0000:00:1c.2", 0x7A3A, "0000:04:00.0", (0x8086, 0x2725, 0x028000, "iwlwifi", None, 0)),  # AX210
           ("0000:00:1d.0", 0x7A30, "0000:05:00.0", (0x144D, 0xA80A, NVME, "nvme", None, 0))]
    if gpu_behind_pch:
        pch.append(("0000:00:1c.4", 0x7A3C, "0000:06:00.0", (NVIDIA, 0x2684, GPU_VGA, "nvidia", None, 0)))
    for port, dev_id, child, (vendor, device, cls, driver, netdev, speed) in pch:
        rp = f"pci0000:00/{port}"
        width = 4 if cls in (GPU_VGA, NVME) else 1
        n.pci(rp, INTEL, dev_id, BRIDGE, driver="pcieport", numa=-1, speed=GEN[4] if width == 4 else GEN[1],
              width=width, port="root")
        chain = f"{rp}/{child}"
        n.pci(chain, vendor, device, cls, driver=driver, numa=-1, cpus="0-31",
              speed=GEN[1] if cls == GPU_VGA else (GEN[4] if width == 4 else GEN[1]), width=width,
              max_speed=GEN[4] if cls in (GPU_VGA, NVME) else None, max_width=16 if cls == GPU_VGA else None,
              port="endpoint")
        if netdev:
            n.netdev(chain, netdev, speed)
    gpu_bus = "0000:06:00.0" if gpu_behind_pch else "0000:01:00.0"
    if not gpu_behind_pch:
        n.pci("pci0000:00/0000:00:01.0", INTEL, 0xA70D, BRIDGE, driver="pcieport", numa=-1, speed=GEN[1],
              width=16, max_speed=GEN[5], port="root")
        n.pci("pci0000:00/0000:00:01.0/0000:01:00.0", NVIDIA, 0x2684, GPU_VGA, driver="nvidia", numa=-1,
              cpus="0-31", speed=GEN[1], width=16, max_speed=GEN[4], port="endpoint")
        n.pci("pci0000:00/0000:00:01.0/0000:01:00.1", NVIDIA, 0x22BA, 0x040300, driver="snd_hda_intel", numa=-1,
              speed=GEN[1], width=16, max_speed=GEN[4], port="endpoint")
    n.kernel("BOOT_IMAGE=/boot/vmlinuz-6.8.0-49-generic root=UUID=1f2e ro quiet splash",
             ["nvidia", "nvidia_uvm", "nvidia_drm", "igc", "iwlwifi", "nvme"], hostname="ws-4090")
    width = 4 if gpu_behind_pch else 16
    n.smi([SmiGpu(gpu_bus, RTX4090, pstate="P8", util=0, gen=(4, 1), width=width, pids=(2301,))])
    n.put("commands/dmesg", CLEAN_DMESG)
    n.process(2301, ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen2.5-7B-Instruct",
                     "--max-model-len", "8192"], "python3", "0-31", env={"PATH": "/usr/bin", "HOME": "/home/ai"})
    return n


# --- shape 3: AWS p4d-like VM ------------------------------------------------------------------------
P4D_BUSES = ("10", "20", "90", "a0")


def cloud_vm(link_unknown: bool = False) -> Node:
    """p4d.24xlarge-like guest: 8 A100 and 4 EFA straight on per-NUMA root buses, 440FX chipset, NVSwitch bridges.

    GPU link files read 2.5 GT/s x16 of 16 GT/s (idle), or ``Unknown`` with ``link_unknown``; the EFA
    ports say ``link_layer`` Unknown and have no netdev; ENA carries IP.
    """
    n = Node()
    n.numa(["0-23,48-71", "24-47,72-95"])
    n.cpuinfo("GenuineIntel", "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz",
              "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 "
              "ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid "
              "aperfmperf tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt "
              "tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch invpcid_single "
              "pti fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid mpx avx512f avx512dq rdseed adx smap "
              "clflushopt clwb avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves ida arat pku ospke")
    n.dmi("Amazon EC2", "p4d.24xlarge")
    n.pci("pci0000:00/0000:00:00.0", INTEL, 0x1237, 0x060000, numa=-1)
    n.pci("pci0000:00/0000:00:01.0", INTEL, 0x7000, ISA, numa=-1)  # PIIX3 ISA bridge
    smi: list[SmiGpu] = []
    speed = "Unknown" if link_unknown else GEN[1]
    max_speed = "Unknown" if link_unknown else GEN[4]
    for k, bus in enumerate(P4D_BUSES):
        node = 0 if k < 2 else 1
        host = f"pci0000:{bus}"
        ena = n.pci(f"{host}/0000:{bus}:00.0", AMAZON, 0xEC20, NIC_ETH, driver="ena", numa=node,
                    speed=GEN[1], width=1)
        if k == 0:
            n.netdev(f"{host}/{ena}", "ens32", 100000, mtu=9001)
        efa = f"{host}/0000:{bus}:1b.0"
        n.pci(efa, AMAZON, 0xEFA0, NIC_ETH, driver="efa", numa=node, speed=GEN[1], width=1)
        n.rdma(efa, f"rdmap{int(bus, 16)}s27", "Unknown", "100 Gb/sec (4X EDR)",
               gids=[(f"fe80:0000:0000:0000:10{k}4:d1ff:fe5e:2a6b", None, None)])
        for slot in ("1c", "1d"):
            addr = n.pci(f"{host}/0000:{bus}:{slot}.0", NVIDIA, 0x20B0, GPU_3D, driver="nvidia", numa=node,
                         speed=speed, width=16, max_speed=max_speed)
            smi.append(SmiGpu(addr, "NVIDIA A100-SXM4-40GB", gen=(4, 1)))
    for k in range(6):
        n.pci(f"pci0000:80/0000:80:{0x1a + k:02x}.0", NVIDIA, 0x1AF1, BRIDGE_OTHER, driver="nvidia", numa=1)
    n.kernel("BOOT_IMAGE=/boot/vmlinuz-6.8.0-1019-aws root=PARTUUID=9d2c ro console=tty1 console=ttyS0 "
             "nvme_core.io_timeout=4294967295", ["nvidia", "nvidia_uvm", "efa", "ib_uverbs", "ib_core", "ena"],
             hostname="ip-172-31-10-128")
    n.smi(smi, driver="550.127.05")
    return n


# --- shape 4: GH200 ----------------------------------------------------------------------------------
GH200_GPU = "0009:01:00.0"


def gh200() -> Node:
    """GH200 480GB: one Grace CPU node (0-71), HBM as CPU-less nodes 1-8, the GPU on root port 0009:00:00.0."""
    n = Node()
    n.numa(["0-71"] + [""] * 8)
    n.cpuinfo("", "", "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
              "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp "
              "sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti",
              arm=True)
    n.dmi("Quanta Cloud Technology Inc.", "S74G-2U")
    n.pci("pci0009:00/0009:00:00.0", NVIDIA, 0x22B1, BRIDGE, driver="pcieport", numa=0, cpus="0-71",
          speed=GEN[5], width=16, port="root", group=9)
    n.pci(f"pci0009:00/0009:00:00.0/{GH200_GPU}", NVIDIA, 0x2342, GPU_3D, driver="nvidia", numa=0, cpus="0-71",
          speed=GEN[5], width=16, port="endpoint", group=9)
    n.pci("pci0000:00/0000:00:00.0", NVIDIA, 0x22B2, BRIDGE, driver="pcieport", numa=0, cpus="0-71",
          speed=GEN[5], width=16, port="root", group=1)
    cx7 = "pci0000:00/0000:00:00.0/0000:01:00.0"
    n.pci(cx7, MELLANOX, 0x1021, NIC_ETH, driver="mlx5_core", numa=0, cpus="0-71", speed=GEN[5], width=16,
          port="endpoint", group=1)
    n.netdev(cx7, "enP1p1s0f0np0", 400000, mtu=9000)
    n.rdma(cx7, "mlx5_0", "Ethernet", "400 Gb/sec (4X NDR)",
           gids=roce_gids("0e42:a1ff:fe5c:7e10", "10.40.0.21", "enP1p1s0f0np0"))
    n.iommu("identity", ["smmu3.0x0000000012000000"])
    n.kernel("BOOT_IMAGE=/boot/vmlinuz-6.8.0-1013-nvidia-64k root=UUID=7a1c ro iommu.passthrough=1 "
             "init_on_alloc=0", ["nvidia", "nvidia_uvm", "nvidia_peermem", "mlx5_core", "mlx5_ib"],
             TUNED_SYSCTLS, hostname="gh200-01")
    n.smi([SmiGpu(GH200_GPU, "NVIDIA GH200 480GB", pstate="P0", util=93, idle=False, gen=(5, 5), pids=(5120,))])
    n.process(5120, ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model",
                     "meta-llama/Llama-3.1-70B-Instruct", "--max-model-len", "32768"], "python3", "0-71")
    return n


# --- shape 5: L40S PCIe server ----------------------------------------------------------------------------
L40S = "NVIDIA L40S"
L40S_GPUS = (("0000:16:01.0", "0000:17:00.0", 0), ("0000:38:01.0", "0000:39:00.0", 0),
             ("0000:97:01.0", "0000:98:00.0", 1), ("0000:b8:01.0", "0000:b9:00.0", 1))
L40S_NICS = (("0000:27:01.0", "0000:28:00.0", 0, "ens1f0np0", "mlx5_0", "10.20.0.11"),
             ("0000:a8:01.0", "0000:a9:00.0", 1, "ens2f0np0", "mlx5_1", "10.21.0.11"))
L40S_NODES = ("0-31,64-95", "32-63,96-127")


def l40s(**worker_cpus: str) -> Node:
    """4 busy L40S on CPU root ports, 2 ConnectX-6 Dx RoCE (one per socket), tuned, kubelet aligned.

    ``worker_cpus`` maps ``gpu0``..``gpu3`` to a worker's Cpus_allowed_list (default: its GPU's node).
    """
    n = Node()
    n.numa(list(L40S_NODES))
    n.cpuinfo("GenuineIntel", "Intel(R) Xeon(R) Gold 6448Y", "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr "
              "pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp "
              "lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf "
              "avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb intel_pt avx512cd sha_ni avx512bw "
              "avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc amx_bf16 avx512_fp16 amx_tile amx_int8")
    n.dmi("Supermicro", "SYS-421GE-TNRT")
    n.pci("pci0000:00/0000:00:1f.0", INTEL, 0x1B81, ISA, numa=0)  # Emmitsburg PCH eSPI
    smi: list[SmiGpu] = []
    for i, (root, gpu, node) in enumerate(L40S_GPUS):
        host = f"pci0000:{root[5:7]}"
        n.pci(f"{host}/{root}", INTEL, 0x352A, BRIDGE, driver="pcieport", numa=node, cpus=L40S_NODES[node],
              speed=GEN[4], width=16, max_speed=GEN[5], port="root", acs=0x005F, group=40 + i)
        n.pci(f"{host}/{root}/{gpu}", NVIDIA, 0x26B9, GPU_3D, driver="nvidia", numa=node, cpus=L40S_NODES[node],
              speed=GEN[4], width=16, port="endpoint", group=40 + i)
        smi.append(SmiGpu(gpu, L40S, pstate="P0", util=90, idle=False, gen=(4, 4), pids=(7001 + i,)))
    for root, nic, node, netdev, ib, ip in L40S_NICS:
        host = f"pci0000:{root[5:7]}"
        n.pci(f"{host}/{root}", INTEL, 0x352A, BRIDGE, driver="pcieport", numa=node, cpus=L40S_NODES[node],
              speed=GEN[4], width=16, max_speed=GEN[5], port="root", acs=0x005F, group=50 + node)
        chain = f"{host}/{root}/{nic}"
        n.pci(chain, MELLANOX, 0x101D, NIC_ETH, driver="mlx5_core", numa=node, cpus=L40S_NODES[node],
              speed=GEN[4], width=16, port="endpoint", group=50 + node)
        n.netdev(chain, netdev, 100000, mtu=9000)
        n.rdma(chain, ib, "Ethernet", "100 Gb/sec (4X EDR)", gids=roce_gids("0e42:a1ff:fe7b:3c0" + ib[-1], ip, netdev))
    n.pci("pci0000:00/0000:00:1c.0", INTEL, 0x1BB8, BRIDGE, driver="pcieport", numa=0, speed=GEN[1], width=1,
          port="root")
    mgmt = "pci0000:00/0000:00:1c.0/0000:02:00.0"
    n.pci(mgmt, INTEL, 0x1533, NIC_ETH, driver="igb", numa=0, speed=GEN[1], width=1, port="endpoint")
    n.netdev(mgmt, "eno1", 1000)
    n.iommu("identity", ["dmar0", "dmar1", "dmar2", "dmar3"])
    n.kernel("BOOT_IMAGE=/boot/vmlinuz-6.8.0-49-generic root=UUID=3e1d ro intel_iommu=on iommu=pt",
             ["nvidia", "nvidia_uvm", "nvidia_peermem", "mlx5_core", "mlx5_ib", "ib_uverbs", "ib_core"], TUNED_SYSCTLS,
             hostname="l40s-07")
    n.kubelet("static", "single-numa-node")
    n.smi(smi)
    n.process(7000, ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model",
                     "meta-llama/Llama-3.1-8B-Instruct", "--tensor-parallel-size", "1"], "python3", "0-127",
              env={"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    for i, (_, _, node) in enumerate(L40S_GPUS):
        cpus = worker_cpus.get(f"gpu{i}", L40S_NODES[node])
        n.process(7001 + i, ["VLLM::Worker"], "VLLM::Worker", cpus, ppid=7000)
    return n


# --- shape 6: MIG H100 and a vfio-pci passthrough host -----------------------------------------------------------
def passthrough_host(hypervisor: bool = True) -> Node:
    """2-socket host with 4 H100 PCIe: GPU 0-1 in MIG mode on nvidia, GPU 2-3 on vfio-pci for VMs.

    With ``hypervisor`` libvirtd and two qemu-system-x86_64 processes run (libvirt set driver_override to
    vfio-pci); without them, the nvidia module is loaded for the MIG GPUs and the vfio GPUs are idle capacity.
    """
    n = Node()
    nodes = ["0-31,64-95", "32-63,96-127"]
    n.numa(nodes)
    n.cpuinfo("GenuineIntel", "Intel(R) Xeon(R) Platinum 8462Y+", "fpu vme de pse tsc msr pae mce cx8 apic sep "
              "mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx vmx smx")
    n.dmi("Dell Inc.", "PowerEdge R760xa")
    n.pci("pci0000:00/0000:00:1f.0", INTEL, 0x1B81, ISA, numa=0)
    smi: list[SmiGpu] = []
    for i, (root, gpu) in enumerate((("0000:4a:01.0", "0000:4b:00.0"), ("0000:61:01.0", "0000:62:00.0"),
                                     ("0000:ca:01.0", "0000:cb:00.0"), ("0000:e1:01.0", "0000:e2:00.0"))):
        node = 0 if i < 2 else 1
        host = f"pci0000:{root[5:7]}"
        vfio = i >= 2
        n.pci(f"{host}/{root}", INTEL, 0x352A, BRIDGE, driver="pcieport", numa=node, cpus=nodes[node],
              speed=GEN[5], width=16, port="root", acs=0x005F, group=60 + i)
        n.pci(f"{host}/{root}/{gpu}", NVIDIA, 0x2331, GPU_3D, driver="vfio-pci" if vfio else "nvidia", numa=node,
              cpus=nodes[node], speed=GEN[5] if vfio else GEN[1], width=16, max_speed=GEN[5], port="endpoint",
              group=60 + i, override="vfio-pci" if vfio else None)
        if not vfio:
            smi.append(SmiGpu(gpu, "NVIDIA H100 PCIe", pstate="P0", util=0, gen=(5, 1), mig=True))
    n.iommu("DMA-FQ", ["dmar0", "dmar1", "dmar2", "dmar3"])
    for g in (62, 63):
        n.put(f"sys/kernel/iommu_groups/{g}/type", "unmanaged\n")
    n.kernel("BOOT_IMAGE=/boot/vmlinuz-6.8.0-49-generic root=UUID=5a5a ro intel_iommu=on",
             ["nvidia", "nvidia_uvm", "vfio_pci", "vfio_pci_core", "vfio_iommu_type1", "vfio", "kvm_intel", "kvm"],
             hostname="virt-07")
    n.smi(smi)
    if hypervisor:
        n.process(1500, ["/usr/sbin/libvirtd", "--timeout", "120"], "libvirtd", "0-127")
        for pid, vm in ((8100, "vm-a"), (8200, "vm-b")):
            n.process(pid, ["/usr/bin/qemu-system-x86_64", "-name", f"guest={vm}", "-machine", "q35,accel=kvm"],
                      "qemu-system-x86", "0-127", ppid=1500)
    return n


# --- shape 7: sosreport of an 8-GPU HGX -------------------------------------------------------------------------
def _lspci_entry(addr: str, desc: str, ids: str, cls: str, kind: str, *, bus: tuple[str, str, str] | None = None,
                 cap: tuple[str, int] = ("32GT/s", 16), sta: tuple[str, int] = ("32GT/s", 16), numa: int | None = None,
                 driver: str | None = None, acs: str | None = None) -> str:
    lines = [f"{addr} {desc} [{cls}]: {ids}"]
    if bus:
        lines.append(f"\tBus: primary={bus[0]}, secondary={bus[1]}, subordinate={bus[2]}, sec-latency=0")
    if numa is not None:
        lines.append(f"\tNUMA node: {numa}")
    lines.append(f"\tCapabilities: [40] Express (v2) {kind}, MSI 00")
    lines.append(f"\t\tLnkCap:\tPort #0, Speed {cap[0]}, Width x{cap[1]}, ASPM not supported")
    down = " (downgraded)" if sta != cap else ""
    lines.append(f"\t\tLnkSta:\tSpeed {sta[0]}{down}, Width x{sta[1]}{down}")
    if acs is not None:
        lines.append(f"\t\tACSCtl:\t{acs}")
    if driver:
        lines.append(f"\tKernel driver in use: {driver}")
    return "\n".join(lines) + "\n\n"


SOS_ROOTS = ("15", "37", "97", "b7")
ACS_OFF = "SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"


def sosreport_files(gpu_x8: str | None = None, pcie_gen: int = 4) -> dict[str, str]:
    """A ``sos report`` of an idle 8-GPU HGX H100: lspci -nnvv, nvidia-smi -q (sos 4.0's PERFORMANCE part),
    sysctl -a, ps auxwwwm, proc/cmdline; no sysfs, no netdevs, no RDMA.

    ``gpu_x8`` (a bus like ``"19"``) plants a GPU trained at x8; ``pcie_gen`` is what lspci shows for the
    idle GPUs' LnkSta speed (the parked 2.5GT/s, or full speed).
    """
    speed = {1: "2.5GT/s", 4: "16GT/s", 5: "32GT/s"}[pcie_gen]
    text = ""
    buses = []
    for k, root in enumerate(SOS_ROOTS):
        node = 0 if k < 2 else 1
        r = int(root, 16)
        up, dsp_bus = f"{r + 1:02x}", f"{r + 2:02x}"
        text += _lspci_entry(f"{root}:01.0", "PCI bridge", "Intel Corporation Device [8086:352a] (rev 04)", "0604",
                             "Root Port (Slot+)", bus=(root, up, f"{r + 5:02x}"), numa=node, driver="pcieport",
                             acs=ACS_OFF)
        text += _lspci_entry(f"{up}:00.0", "PCI bridge", "Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] "
                             "(rev b0)", "0604", "Upstream Port", bus=(up, dsp_bus, f"{r + 5:02x}"), numa=node,
                             driver="pcieport")
        for j in range(2):
            child = f"{r + 3 + j:02x}"
            text += _lspci_entry(f"{dsp_bus}:{j:02x}.0", "PCI bridge", "Broadcom / LSI PEX890xx PCIe Gen 5 Switch "
                                 "[1000:c030] (rev b0)", "0604", "Downstream Port (Slot-)",
                                 bus=(dsp_bus, child, child), numa=node, driver="pcieport", acs=ACS_OFF,
                                 sta=(speed, 8 if child == gpu_x8 else 16))
            text += _lspci_entry(f"{child}:00.0", "3D controller", "NVIDIA Corporation GH100 [H100 SXM5 80GB] "
                                 "[10de:2330] (rev a1)", "0302", "Endpoint", numa=node, driver="nvidia",
                                 sta=(speed, 8 if child == gpu_x8 else 16))
            buses.append(child)
    smi = ("==============NVSMI LOG==============\n\nTimestamp                                 : Mon Jun  2 "
           "10:00:00 2025\nDriver Version                            : 550.90.07\nCUDA Version                "
           "              : 12.4\n\nAttached GPUs                             : 8\n")
    for bus in buses:
        smi += (f"GPU 00000000:{bus.upper()}:00.0\n    Performance State                     : P0\n"
                "    Clocks Event Reasons\n        Idle                              : Active\n"
                "        Applications Clocks Setting       : Not Active\n"
                "        SW Power Cap                      : Not Active\n")
    sysctl = "".join(f"{k} = {v}\n" for k, v in DEFAULT_SYSCTLS.items())
    ps = ("USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
          "root           1  0.0  0.0 167000 12000 ?        Ss   Jun01   0:05 /sbin/init\n"
          "root        4242  2.0 10.0 9999999 999 ?        Sl   Jun01  90:00 python3 -m vllm.entrypoints.openai."
          "api_server --model meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8\n")
    return {
        "sos_commands/pci/lspci_-nnvv": text,
        "sos_commands/nvidia/nvidia-smi_-q_-d_PERFORMANCE": smi,
        "sos_commands/kernel/sysctl_-a": sysctl,
        "sos_commands/kernel/dmesg": CLEAN_DMESG,
        "sos_commands/process/ps_auxwwwm": ps,
        "sos_reports/manifest.json": '{"version": "4.0", "start_time": "2025-06-02 10:00:00.0"}',
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz-5.15.0-105-generic root=UUID=aa ro intel_iommu=on iommu=pt\n",
        "hostname": "hgx-sos-01\n",
    }
