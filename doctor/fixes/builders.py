"""One builder per kind of change; each validates its parameters and returns the steps.

Step flags: ``unattended`` only for changes that are safe from the OS and that the step's rollback
undoes exactly (a sysctl, an IRQ's affinity, a module load, a link setting). Boot loader, firmware,
driver rebinding, service restarts and cluster steps are for a human (``unattended=False``).
"""

from __future__ import annotations

from doctor.findings import FixStep
from doctor.fixes.base import (
    MTU_MAX,
    MTU_MIN,
    OWN,
    PCI_ADDRESS,
    RDMA_DEVICE,
    Fact,
    FixRejected,
    Param,
    Params,
    builder,
    cpulist,
    netdev,
    pci_address,
)
from doctor.fixes.base import (
    SHAPE as S,
)
from doctor.fixes.sysctl_keys import INT, KNOWN_SYSCTLS, generic_key
from doctor.i18n import N_
from doctor.lazyre import lazy

R, P, B = "runtime", "persistent", "rollback"


def run(phase: str, *argv: str, unattended: bool = False, key: str = "", description: str = "") -> FixStep:
    return FixStep(phase, argv=tuple(argv), unattended=unattended, key=key, description=description)


def write(phase: str, path: str, content: str, unattended: bool = False, key: str = "",
          description: str = "") -> FixStep:
    return FixStep(phase, heredoc=(path, content), unattended=unattended, key=key, description=description)


def manual(phase: str, text: str, key: str = "") -> FixStep:
    return FixStep(phase, manual=text, key=key)


# --- sysctl ------------------------------------------------------------------------------------

CONF = lazy(r"90-gnd-[a-z0-9-]{1,40}\.conf")


def _sysctl_value(key: str, value: object) -> str:
    pattern = KNOWN_SYSCTLS.get(generic_key(key)) if "*" not in key else None
    if pattern is None:
        raise FixRejected(f"sysctl {key!r} is not one a check sets")
    text = " ".join(str(value).split()) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not pattern.fullmatch(text) or (INT.fullmatch(text) and int(text) > 2**31 - 1):
        raise FixRejected(f"sysctl {key}: value out of range")
    return text


@builder("sysctl", set=Param(Fact.SYSCTLS_WANTED), previous=Param(Fact.SYSCTLS_NOW), conf=OWN)
def sysctl(p: Params) -> list[FixStep]:
    """``set``: {key: value}; ``previous``: {key: value now}; ``conf``: the sysctl.d file name."""
    wanted = {str(k): _sysctl_value(str(k), v) for k, v in p.mapping("set").items()}
    previous = {str(k): _sysctl_value(str(k), v) for k, v in p.mapping("previous").items() if k in wanted}
    conf = "/etc/sysctl.d/" + p.text("conf", CONF, "sysctl.d file name")
    if not wanted:
        raise FixRejected("nothing to set")
    steps = [run(R, "sysctl", "-w", f"{k}={v}", unattended=True, key=f"sysctl:{k}") for k, v in wanted.items()]
    steps += [write(P, conf, "".join(f"{k} = {v}\n" for k, v in wanted.items()), key=f"file:{conf}"),
              run(P, "sysctl", "--system", key=f"file:{conf}")]
    steps += [run(B, "sysctl", "-w", f"{k}={previous[k]}", unattended=True, key=f"sysctl:{k}")
              for k in wanted if k in previous]
    steps.append(run(B, "rm", "-f", conf, key=f"file:{conf}"))
    return steps


# --- kernel command line -----------------------------------------------------------------------

GRUB_DEFAULT = "/etc/default/grub"
KERNEL_ARG = lazy(r"[A-Za-z0-9_.-]{1,64}(=[A-Za-z0-9_.,:;=/+-]{0,2048})?")
FAMILIES = ("debian", "rhel", None)


def _sed_escape(text: str) -> str:
    """Escape for a sed extended regular expression."""
    return "".join("\\" + ch if ch in "/&\\.[]*^$+?(){}|" else ch for ch in text)


def _sed_repl(text: str) -> str:
    """Escape for a sed replacement."""
    return "".join("\\" + ch if ch in "/&\\" else ch for ch in text)


def _arg(value: object) -> str:
    if not isinstance(value, str) or not KERNEL_ARG.fullmatch(value):
        raise FixRejected("not a valid kernel parameter")
    return value


def kernel_args_steps(add: list[str], remove: list[str], family: str | None) -> list[FixStep]:
    """Persistent and rollback steps adding/removing boot parameters (Debian: /etc/default/grub and
    update-grub, backup ``grub.gnd-bak``; RHEL family: grubby on every kernel). Never unattended."""
    steps: list[FixStep] = []
    if family in (None, "debian"):
        steps.append(run(P, "cp", "-a", GRUB_DEFAULT, f"{GRUB_DEFAULT}.gnd-bak", key="grub"))
        for arg in remove:
            steps.append(run(P, "sed", "-i", "-E",
                             f"/^GRUB_CMDLINE_LINUX/s/(^|[\" ]){_sed_escape(arg)}([\" ]|$)/\\1\\2/", GRUB_DEFAULT,
                             key="grub"))
        if add:
            steps.append(run(P, "sed", "-i", f"s/^GRUB_CMDLINE_LINUX=\"/&{_sed_repl(' '.join(add))} /",
                             GRUB_DEFAULT, key="grub"))
        steps.append(run(P, "update-grub", key="grub"))
        steps += [run(B, "cp", "-a", f"{GRUB_DEFAULT}.gnd-bak", GRUB_DEFAULT, key="grub"),
                  run(B, "update-grub", key="grub")]
    if family in (None, "rhel"):
        line = ["grubby", "--update-kernel=ALL"]
        back = ["grubby", "--update-kernel=ALL"]
        if add:
            line.append("--args=" + " ".join(add))
            back.append("--remove-args=" + " ".join(add))
        if remove:
            line.append("--remove-args=" + " ".join(remove))
            back.append("--args=" + " ".join(remove))
        steps += [run(P, *line, key="grubby"), run(B, *back, key="grubby")]
    return steps


def _family(p: Params) -> str | None:
    value = p.raw("os_family")
    if value not in FAMILIES:
        raise FixRejected("os_family: not debian, rhel or null")
    return value  # type: ignore[no-any-return]


@builder("kernel_args", add=OWN, remove=OWN, os_family=Param(Fact.OS_FAMILY))
def kernel_args(p: Params) -> list[FixStep]:
    """``add`` / ``remove``: boot parameters; ``os_family``: debian, rhel or null (both sets)."""
    add, remove = p.items("add", _arg, 16), p.items("remove", _arg, 16)
    if not (add or remove):
        raise FixRejected("no boot parameter to change")
    return kernel_args_steps(add, remove, _family(p))


# --- modules, THP, CPU frequency ---------------------------------------------------------------

KNOWN_MODULES = ("nvidia-peermem", "nvidia_peermem", "ib_uverbs")


@builder("module_load", module=OWN)
def module_load(p: Params) -> list[FixStep]:
    """``module``: one of the modules a check asks to load."""
    mod = p.choice("module", KNOWN_MODULES)
    conf = f"/etc/modules-load.d/{mod}.conf"
    return [run(R, "modprobe", mod, unattended=True, key=f"module:{mod}"),
            write(P, conf, mod + "\n", key=f"file:{conf}"),
            run(B, "modprobe", "-r", mod, unattended=True, key=f"module:{mod}"),
            run(B, "rm", "-f", conf, key=f"file:{conf}")]


THP_PATHS = ("/sys/kernel/mm/transparent_hugepage/defrag", "/sys/kernel/mm/redhat_transparent_hugepage/defrag")
THP_VALUES = ("always", "defer", "defer+madvise", "madvise", "never")
THP_TMPFILES = "/etc/tmpfiles.d/gnd-thp.conf"


@builder("thp_defrag", path=Param(Fact.THP_PATH), value=OWN, previous=Param(Fact.THP_NOW))
def thp_defrag(p: Params) -> list[FixStep]:
    """``path``: the defrag file; ``value``: what to set; ``previous``: the value now."""
    path, value, previous = p.choice("path", THP_PATHS), p.choice("value", THP_VALUES), p.choice("previous", THP_VALUES)
    return [write(R, path, value, unattended=True, key="thp"),
            write(P, THP_TMPFILES, f"w {path} - - - - {value}\n", key="tmpfiles"),
            write(B, path, previous, unattended=True, key="thp"),
            run(B, "rm", "-f", THP_TMPFILES, key="tmpfiles")]


GOVERNORS = ("performance", "powersave", "schedutil", "ondemand", "conservative", "userspace")
EPP_VALUES = ("default", "performance", "balance_performance", "balance_power", "power")
EPP_GLOB = "/sys/devices/system/cpu/cpu*/cpufreq/energy_performance_preference"


@builder("cpu_governor", governor=Param(Fact.GOVERNOR_NOW), epp=Param(Fact.EPP_NOW))
def cpu_governor(p: Params) -> list[FixStep]:
    """``governor``: the governor now (null: leave it); ``epp``: the EPP now (null: leave it)."""
    gov = p.raw("governor")
    epp = p.raw("epp")
    if gov is not None:
        gov = p.choice("governor", GOVERNORS)
    if epp is not None:
        epp = p.choice("epp", EPP_VALUES)
    if gov is None and epp is None:
        raise FixRejected("nothing to change")
    steps: list[FixStep] = []
    back: list[FixStep] = []
    if gov is not None:
        steps.append(run(R, "cpupower", "frequency-set", "-g", "performance", unattended=True, key="governor"))
        back.append(run(B, "cpupower", "frequency-set", "-g", gov, unattended=True, key="governor"))
    if epp is not None:
        steps.append(manual(R, f"echo performance | tee {EPP_GLOB}", key="epp"))
        back.append(manual(B, f"echo {epp} | tee {EPP_GLOB}", key="epp"))
    steps.append(run(P, "tuned-adm", "profile", "latency-performance", key="tuned"))
    return steps + back + [run(B, "tuned-adm", "auto_profile", key="tuned")]


# --- interrupts --------------------------------------------------------------------------------

@builder("irq_affinity", netdev=Param(Fact.NETDEV, own=True), node=Param(Fact.NETDEV_NODE), cpus=Param(Fact.NODE_CPUS),
         irqs=Param(Fact.IRQS_NOW), irqbalance=OWN)
def irq_affinity(p: Params) -> list[FixStep]:
    """``netdev``, ``node``: the NIC and its NUMA node; ``cpus``: the node's CPU list; ``irqs``:
    {irq number: affinity now or ""}; ``irqbalance``: whether irqbalance runs."""
    nic, node, cpus = p.netdev("netdev"), p.integer("node", 0, 4095), cpulist(p.raw("cpus"))
    irqs: dict[int, str] = {}
    for k, v in p.mapping("irqs", 4096).items():
        if not str(k).isdigit() or int(k) > 65535:
            raise FixRejected("irqs: not an IRQ number")
        irqs[int(k)] = cpulist(v) if v else ""
    balancer = p.raw("irqbalance")
    if not isinstance(balancer, bool) or not irqs:
        raise FixRejected("irqbalance / irqs missing")
    steps = [run(R, "set_irq_affinity_bynode.sh", str(node), nic,
                 description=N_("the mlnx-tools script; an alternative to the writes below"))]
    steps += [write(R, f"/proc/irq/{n}/smp_affinity_list", cpus, unattended=True, key=f"irq:{n}") for n in irqs]
    if balancer:
        steps.append(run(P, "systemctl", "disable", "--now", "irqbalance", key="irqbalance"))
    steps += [write(B, f"/proc/irq/{n}/smp_affinity_list", old, unattended=True, key=f"irq:{n}")
              for n, old in irqs.items() if old]
    if balancer:
        steps.append(run(B, "systemctl", "enable", "--now", "irqbalance", key="irqbalance"))
    return steps


# --- network links -----------------------------------------------------------------------------

@builder("link_up", netdev=Param(Fact.NETDEV, own=True))
def link_up(p: Params) -> list[FixStep]:
    """``netdev``: an interface that is down."""
    nic = p.netdev("netdev")
    return [run(R, "ethtool", nic, unattended=True, description=N_("show the link")),
            run(R, "ip", "link", "set", "dev", nic, "up", unattended=True, key=f"link:{nic}"),
            run(B, "ip", "link", "set", "dev", nic, "down", unattended=True, key=f"link:{nic}")]


@builder("link_autoneg", netdev=Param(Fact.NETDEV, own=True))
def link_autoneg(p: Params) -> list[FixStep]:
    """``netdev``: an interface negotiated below its speed."""
    nic = p.netdev("netdev")
    return [run(R, "ethtool", nic, unattended=True, description=N_("show the link")),
            run(R, "ethtool", "-s", nic, "autoneg", "on", unattended=True, key=f"autoneg:{nic}")]


@builder("link_mtu", netdev=Param(Fact.NETDEV, own=True), mtu=Param(Fact.MTU, own=True), previous=Param(Fact.MTU_NOW))
def link_mtu(p: Params) -> list[FixStep]:
    """``netdev``: an interface of this host; ``mtu``: the MTU to set (a peer interface's or 9000, within
    the physical range); ``previous``: the interface's MTU now."""
    nic, mtu, old = p.netdev("netdev"), p.integer("mtu", MTU_MIN, MTU_MAX), p.integer("previous", 68, 65535)
    return [run(R, "ip", "link", "set", "dev", nic, "mtu", str(mtu), unattended=True, key=f"mtu:{nic}"),
            run(B, "ip", "link", "set", "dev", nic, "mtu", str(old), unattended=True, key=f"mtu:{nic}")]


@builder("rdma_port", device=Param(Fact.RDMA), port=Param(Fact.RDMA_PORT), address=Param(Fact.PCI, own=True),
         netdevs=Param(Fact.NETDEV, "items", own=True))
def rdma_port(p: Params) -> list[FixStep]:
    """``device``, ``port``: an RDMA port that is down; ``address``: its PCI address (or null);
    ``netdevs``: its interfaces."""
    dev = p.text("device", RDMA_DEVICE, "RDMA device name")
    port = p.integer("port", 0, 255)
    address = p.raw("address")
    nics = p.items("netdevs", lambda v: netdev(v), 16)
    steps = [run(R, "ibv_devinfo", "-d", dev, "-i", str(port))]
    if address is not None:
        steps.append(run(R, "mlxlink", "-d", pci_address(address), "-p", str(port)))
    for nic in nics:
        steps += [run(R, "ethtool", nic, unattended=True, description=N_("show the link")),
                  run(R, "ip", "link", "set", "dev", nic, "up", unattended=True, key=f"link:{nic}")]
    return steps + [run(B, "ip", "link", "set", "dev", n, "down", unattended=True, key=f"link:{n}") for n in nics]


@builder("show_addresses", netdev=Param(Fact.NETDEV))
def show_addresses(p: Params) -> list[FixStep]:
    """``netdev``: show its addresses (what GIDs the kernel derives from)."""
    return [run(R, "ip", "-o", "addr", "show", "dev", p.netdev("netdev"), unattended=True)]


# --- GPUs and PCIe -----------------------------------------------------------------------------

@builder("persistence_mode")
def persistence_mode(p: Params) -> list[FixStep]:
    """No parameters: persistence mode on now, nvidia-persistenced at boot."""
    return [run(R, "nvidia-smi", "-pm", "1", unattended=True, key="pm"),
            run(P, "systemctl", "enable", "--now", "nvidia-persistenced", key="persistenced"),
            run(B, "systemctl", "disable", "--now", "nvidia-persistenced", key="persistenced"),
            run(B, "nvidia-smi", "-pm", "0", unattended=True, key="pm")]


@builder("gpu_reset", target=Param(Fact.GPU, own=True))
def gpu_reset(p: Params) -> list[FixStep]:
    """``target``: GPU index or PCI address; a reset needs the GPU drained (never unattended)."""
    target = p.raw("target")
    if not (isinstance(target, str) and (target.isdigit() and int(target) < 1024 or PCI_ADDRESS.fullmatch(target))):
        raise FixRejected("target: not a GPU index or PCI address")
    return [run(R, "nvidia-smi", "-r", "-i", target)]


def _gpu(p: Params) -> str:
    address = p.pci("gpu")
    return address


def _watts(p: Params, key: str) -> str:
    value = p.raw(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 5000:
        raise FixRejected(f"{key}: not a power limit in watts")
    return f"{value:g}"


@builder("gpu_power_limit", gpu=Param(Fact.PCI, own=True), watts=Param(Fact.POWER_DEFAULT, own=True), previous=Param(Fact.POWER_NOW))
def gpu_power_limit(p: Params) -> list[FixStep]:
    """``gpu``: PCI address; ``watts``: the default limit to restore; ``previous``: the limit now."""
    gpu, watts, old = _gpu(p), _watts(p, "watts"), _watts(p, "previous")
    return [run(R, "nvidia-smi", "-i", gpu, "-pl", watts, unattended=True, key=f"pl:{gpu}"),
            run(B, "nvidia-smi", "-i", gpu, "-pl", old, unattended=True, key=f"pl:{gpu}")]


def _mhz(p: Params, key: str) -> str:
    value = p.raw(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 100000:
        raise FixRejected(f"{key}: not a clock in MHz")
    return f"{value:g}"


@builder("gpu_app_clocks", gpu=Param(Fact.PCI, own=True), memory=Param(Fact.MEM_CLOCK_NOW), graphics=Param(Fact.GFX_CLOCK_NOW))
def gpu_app_clocks(p: Params) -> list[FixStep]:
    """``gpu``: PCI address; ``memory``, ``graphics``: the locked clocks now (MHz), restored on rollback."""
    gpu, mem, gfx = _gpu(p), _mhz(p, "memory"), _mhz(p, "graphics")
    return [run(R, "nvidia-smi", "-i", gpu, "-rac", unattended=True, key=f"ac:{gpu}"),
            run(B, "nvidia-smi", "-i", gpu, "-ac", f"{mem},{gfx}", unattended=True, key=f"ac:{gpu}")]


NVIDIA_MODULES = ("nvidia_peermem", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia")


@builder("driver_reload")
def driver_reload(p: Params) -> list[FixStep]:
    """No parameters: reload the NVIDIA kernel modules (needs every GPU workload stopped)."""
    return [run(R, "systemctl", "stop", "nvidia-persistenced"), run(R, "modprobe", "-r", *NVIDIA_MODULES),
            run(R, "modprobe", "nvidia"), run(R, "systemctl", "start", "nvidia-persistenced")]


RETRAIN = "CAP_EXP+0x10.w=0020:0020"  # Link Control: Retrain Link


@builder("pcie_retrain", port=Param(Fact.PCI, own=True), device=Param(Fact.PCI, own=True))
def pcie_retrain(p: Params) -> list[FixStep]:
    """``port``: the downstream port above the link; ``device``: the device below it."""
    port, dev = p.pci("port"), p.pci("device")
    return [run(R, "setpci", "-s", port, RETRAIN),
            run(R, "cat", f"/sys/bus/pci/devices/{dev}/current_link_speed",
                f"/sys/bus/pci/devices/{dev}/current_link_width"),
            manual(B, N_("Nothing to undo: a retrain changes no setting (the link trains again by itself)."))]


ACS_CTL = "ECAP_ACS+0x6.w"
HEX4 = lazy(r"[0-9a-f]{4}")


@builder("acs_redirect", ports=Param(Fact.PCI, "keys", own=True), os_family=Param(Fact.OS_FAMILY))
def acs_redirect(p: Params) -> list[FixStep]:
    """``ports``: {PCI address: ACS control value now, 4 hex digits}; ``os_family``."""
    ports = {pci_address(k): v for k, v in p.mapping("ports", 256).items()}
    if not ports or not all(isinstance(v, str) and HEX4.fullmatch(v) for v in ports.values()):
        raise FixRejected("ports: PCI addresses with 4-hex-digit ACS control values")
    steps = [run(R, "setpci", "-s", a, f"{ACS_CTL}=0000", key=f"acs:{a}") for a in ports]
    steps += [run(B, "setpci", "-s", a, f"{ACS_CTL}={v}", key=f"acs:{a}") for a, v in ports.items()]
    return steps + kernel_args_steps(["pci=disable_acs_redir=" + ";".join(ports)], [], _family(p))


SYS = "/sys/bus/pci"
MODPROBE_PATH = lazy(r"/etc/modprobe\.d/[A-Za-z0-9_.-]{1,64}\.conf")
MODPROBE_LINE = lazy(r"(options|softdep|install|alias|blacklist) [A-Za-z0-9_ .:=,-]{1,512}")


def editable_modprobe(path: str, line: str) -> bool:
    """Whether ``vfio_release`` can comment out ``line`` of ``path`` itself (other lines are left to a person)."""
    return bool(MODPROBE_PATH.fullmatch(path)) and ".." not in path and bool(MODPROBE_LINE.fullmatch(line))


def _bind(phase: str, address: str, old: str, new: str) -> list[FixStep]:
    return [write(phase, f"{SYS}/drivers/{old}/unbind", address),
            write(phase, f"{SYS}/devices/{address}/driver_override", new),
            write(phase, f"{SYS}/drivers_probe", address)]


@builder("vfio_release", address=Param(Fact.PCI, own=True), boot_remove=OWN, modprobe=OWN, os_family=Param(Fact.OS_FAMILY))
def vfio_release(p: Params) -> list[FixStep]:
    """``address``: a GPU on vfio-pci to give back to nvidia; ``boot_remove``: vfio-pci.ids boot
    parameters to drop; ``modprobe``: [[file, line]] vfio lines to comment out; ``os_family``."""
    address = p.pci("address")
    remove = p.items("boot_remove", _arg, 4)
    lines: list[tuple[str, str]] = []
    raw = p.raw("modprobe", [])
    for item in raw if isinstance(raw, list) and len(raw) <= 16 else [None]:
        path, line = item if isinstance(item, list) and len(item) == 2 else ("", "")
        if not (isinstance(path, str) and isinstance(line, str) and editable_modprobe(path, line)):
            raise FixRejected("modprobe: not a modprobe.d file and vfio line")
        lines.append((path, line))
    steps = [write(R, f"{SYS}/drivers/vfio-pci/unbind", address),
             write(R, f"{SYS}/devices/{address}/driver_override", ""),
             write(R, f"{SYS}/drivers_probe", address)]
    back = _bind(B, address, "nvidia", "vfio-pci")
    if remove:
        steps += [s for s in kernel_args_steps([], remove, _family(p)) if s.phase == P]
        back += [s for s in kernel_args_steps([], remove, _family(p)) if s.phase == B]
    else:
        _family(p)
    for path, line in lines:
        # the line as the file holds it: leading blanks and a trailing comment are kept out of the match
        steps.append(run(P, "sed", "-i.gnd-bak", f"s|^[[:space:]]*{line}[[:space:]]*\\(#.*\\)\\{{0,1\\}}$|# &|", path))
        back.append(run(B, "cp", "-a", f"{path}.gnd-bak", path))
    if remove or lines:
        steps.append(manual(P, "update-initramfs -u || dracut -f"))
        back.append(manual(B, "update-initramfs -u || dracut -f"))
    return steps + back


DRIVER = lazy(r"[A-Za-z0-9_-]{1,64}")


@builder("vfio_group", devices=Param(Fact.DRIVERS_NOW, own=True))
def vfio_group(p: Params) -> list[FixStep]:
    """``devices``: {PCI address: driver now} to move to vfio-pci so the group becomes viable."""
    devices = {pci_address(k): v for k, v in p.mapping("devices", 64).items()}
    if not devices or not all(isinstance(v, str) and DRIVER.fullmatch(v) for v in devices.values()):
        raise FixRejected("devices: PCI addresses with driver names")
    steps: list[FixStep] = []
    back: list[FixStep] = []
    for a, drv in devices.items():
        steps += [write(R, f"{SYS}/devices/{a}/driver_override", "vfio-pci"),
                  write(R, f"{SYS}/drivers/{drv}/unbind", a), write(R, f"{SYS}/drivers_probe", a)]
        back += [write(B, f"{SYS}/devices/{a}/driver_override", ""),
                 write(B, f"{SYS}/drivers/vfio-pci/unbind", a), write(B, f"{SYS}/drivers_probe", a)]
    return steps + back


@builder("driver_override_clear", address=Param(Fact.PCI, own=True), previous=Param(Fact.OVERRIDE_NOW))
def driver_override_clear(p: Params) -> list[FixStep]:
    """``address``; ``previous``: the override now."""
    path = f"{SYS}/devices/{p.pci('address')}/driver_override"
    old = p.text("previous", DRIVER, "driver name")
    return [write(R, path, ""), write(B, path, old)]


@builder("inspect_pci", address=Param(Fact.PCI), flags=S)
def inspect_pci(p: Params) -> list[FixStep]:
    """``address``; ``flags``: -vvv or -k."""
    return [run(R, "lspci", p.choice("flags", ("-vvv", "-k")), "-s", p.pci("address"), unattended=True)]


# --- processes, services, kubelet --------------------------------------------------------------

@builder("taskset", pid=Param(Fact.PID, own=True), cpus=OWN, previous=Param(Fact.AFFINITY_NOW))
def taskset(p: Params) -> list[FixStep]:
    """``pid``; ``cpus``: the GPUs' local CPUs; ``previous``: the affinity now."""
    pid = str(p.integer("pid", 1, 2**22))
    cpus, old = cpulist(p.raw("cpus")), cpulist(p.raw("previous"))
    return [run(R, "taskset", "-a", "-p", "-c", cpus, pid, key=f"pid:{pid}"),
            run(B, "taskset", "-a", "-p", "-c", old, pid, key=f"pid:{pid}")]


KUBELET_CONFIG = lazy(r"/(var/lib/kubelet|etc/kubernetes)/[A-Za-z0-9_.-]{1,64}\.yaml")
NODE_NAME = lazy(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
KUBELET_KEYS = ("cpuManagerPolicy", "memoryManagerPolicy", "topologyManagerPolicy", "topologyManagerScope")
KUBELET_VALUES = ("none", "static", "Static", "None", "best-effort", "restricted", "single-numa-node",
                  "container", "pod")
KUBELET_STATE = ("/var/lib/kubelet/cpu_manager_state", "/var/lib/kubelet/memory_manager_state")


def _set_key(config: str, key: str, value: str, present: bool) -> FixStep:
    if present:
        return run(R, "sed", "-i", f"s/^{key}:.*/{key}: {value}/", config)
    return manual(R, f"printf '%s\\n' '{key}: {value}' >> {config}")


@builder("kubelet_policy", config=Param(Fact.KUBELET_CONFIG), node=OWN, settings=OWN)
def kubelet_policy(p: Params) -> list[FixStep]:
    """``config``: the kubelet config file; ``node``: the node name; ``settings``: {key: [value,
    present in the file]}."""
    config = p.text("config", KUBELET_CONFIG, "kubelet config path")
    node = p.text("node", NODE_NAME, "node name")
    edits: list[FixStep] = []
    for key, item in p.mapping("settings", 8).items():
        if key not in KUBELET_KEYS or not (isinstance(item, list) and len(item) == 2 and item[0] in KUBELET_VALUES
                                           and isinstance(item[1], bool)):
            raise FixRejected("settings: not a kubelet policy setting")
        edits.append(_set_key(config, key, item[0], item[1]))
    backup = config + ".gnd-backup"
    stop = [run(R, "kubectl", "drain", node, "--ignore-daemonsets", "--delete-emptydir-data"),
            run(R, "systemctl", "stop", "kubelet")]
    state = [run(R, "rm", "-f", f) for f in KUBELET_STATE]
    start = [run(R, "systemctl", "start", "kubelet"), run(R, "kubectl", "uncordon", node)]
    runtime = stop + [run(R, "cp", "-a", config, backup)] + state + edits + start
    back = stop + [run(R, "cp", "-a", backup, config)] + state + start
    return runtime + [FixStep(B, s.argv, manual=s.manual) for s in back]




# --- data-centre GPU state ---------------------------------------------------------------------

def _index(p: Params) -> str:
    """``index``: the GPU's nvidia-smi index."""
    return str(p.integer("index", 0, 1023))


def _flag(p: Params, key: str) -> bool:
    value = p.raw(key)
    if not isinstance(value, bool):
        raise FixRejected(f"{key}: not a boolean")
    return value


GPU_QUERIES = {"nvlink_status": ("nvlink", "-s"), "nvlink_errors": ("nvlink", "-e"), "pcie": ("-q", "-d", "PCIE")}


@builder("gpu_query", index=Param(Fact.GPU_INDEX), query=S)
def gpu_query(p: Params) -> list[FixStep]:
    """``index``; ``query``: nvlink_status, nvlink_errors or pcie. Read-only, nothing to roll back."""
    query = p.choice("query", GPU_QUERIES)
    return [run(R, "nvidia-smi", *GPU_QUERIES[query], "-i", _index(p), unattended=True,
                description=N_("re-read; compare under load"))]


def _mode_change(p: Params, option: str, clear: tuple[tuple[str, ...], ...] = ()) -> list[FixStep]:
    """``index``; ``enable``: the mode wanted; ``previous``: the mode now; ``pending``: the change is
    already pending (only the reset is left; rollback cancels it instead). Needs the GPU drained."""
    i, enable, previous, pending = _index(p), _flag(p, "enable"), _flag(p, "previous"), _flag(p, "pending")
    if enable == previous:
        raise FixRejected("enable: equal to the mode now")
    mode = f"{option}:{i}"
    steps = [] if pending else [run(R, "nvidia-smi", *a, "-i", i) for a in clear]
    if not pending:
        steps.append(run(R, "nvidia-smi", "-i", i, option, "1" if enable else "0", key=mode))
    steps.append(run(R, "nvidia-smi", "-r", "-i", i, key=f"reset:{i}"))
    steps.append(run(B, "nvidia-smi", "-i", i, option, "1" if previous else "0", key=mode))
    if not pending:
        steps.append(run(B, "nvidia-smi", "-r", "-i", i, key=f"reset:{i}"))
    return steps


@builder("ecc_mode", index=Param(Fact.GPU_INDEX, own=True), enable=OWN, previous=Param(Fact.ECC_NOW), pending=Param(Fact.ECC_PENDING))
def ecc_mode(p: Params) -> list[FixStep]:
    """Set (or apply a pending) ECC mode with a GPU reset; never unattended."""
    return _mode_change(p, "-e")


@builder("mig_mode", index=Param(Fact.GPU_INDEX, own=True), enable=OWN, previous=Param(Fact.MIG_NOW), pending=Param(Fact.MIG_PENDING))
def mig_mode(p: Params) -> list[FixStep]:
    """Set (or apply a pending) MIG mode with a GPU reset, destroying MIG instances before turning it
    off; never unattended."""
    enable = p.raw("enable")
    clear = () if enable else (("mig", "-dci"), ("mig", "-dgi"))
    return _mode_change(p, "-mig", clear)


COMPUTE_MODES = ("DEFAULT", "EXCLUSIVE_PROCESS", "EXCLUSIVE_THREAD", "PROHIBITED")


@builder("compute_mode", index=Param(Fact.GPU_INDEX, own=True), previous=Param(Fact.COMPUTE_NOW))
def compute_mode(p: Params) -> list[FixStep]:
    """``index``; ``previous``: the compute mode now (nvidia-smi ``-c`` name). Back to Default: no reset,
    running contexts keep running, rollback restores the mode exactly."""
    i, old = _index(p), p.choice("previous", COMPUTE_MODES[1:])
    return [run(R, "nvidia-smi", "-i", i, "-c", "DEFAULT", unattended=True, key=f"cm:{i}"),
            run(B, "nvidia-smi", "-i", i, "-c", old, unattended=True, key=f"cm:{i}")]


FM_UNIT = "nvidia-fabricmanager"


@builder("fabric_manager", action=OWN, enable=OWN)
def fabric_manager(p: Params) -> list[FixStep]:
    """``action``: start or restart nvidia-fabricmanager; ``enable``: also enable it at boot (rollback
    disables it, and stops it when this fix started it). A human runs these."""
    action, enable = p.choice("action", ("start", "restart")), _flag(p, "enable")
    steps = [run(R, "systemctl", action, FM_UNIT, key="fm")]
    if enable:
        steps += [run(P, "systemctl", "enable", FM_UNIT, key="fm-enable"),
                  run(B, "systemctl", "disable", *(("--now",) if action == "start" else ()), FM_UNIT,
                      key="fm-enable")]
    return steps


# --- process limits, /dev/shm, hugepages ---------------------------------------------------------

def _pid(value: object) -> str:
    if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, str) and value.isdigit()) \
            or not 1 <= int(value) <= 2**22:
        raise FixRejected("not a process id")
    return str(int(value))


def _limit(value: object) -> str:
    if value == "unlimited":
        return "unlimited"
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise FixRejected("previous: not a byte count or unlimited")
    return str(value)


@builder("prlimit_memlock", previous=Param(Fact.MEMLOCK_NOW, own=True))
def prlimit_memlock(p: Params) -> list[FixStep]:
    """``previous``: {pid: [soft, hard]} (bytes or "unlimited"): raise each to unlimited, rollback
    restores them. Pids are stale after a restart, so a human runs these."""
    limits: dict[str, tuple[str, str]] = {}
    for pid, item in p.mapping("previous", 256).items():
        if not (isinstance(item, list) and len(item) == 2):
            raise FixRejected("previous: not [soft, hard]")
        limits[_pid(pid)] = (_limit(item[0]), _limit(item[1]))
    if not limits:
        raise FixRejected("no process to change")
    steps = [run(R, "prlimit", "--pid", pid, "--memlock=unlimited:unlimited", key=f"memlock:{pid}") for pid in limits]
    return steps + [run(B, "prlimit", "--pid", pid, f"--memlock={soft}:{hard}", key=f"memlock:{pid}")
                    for pid, (soft, hard) in limits.items()]


SHM_SIZE = lazy(r"[1-9]\d{0,3}G")


def _tmpfs_size(size: int) -> str:
    return f"{size >> 20}M" if size % (1 << 20) == 0 else f"{-(-size // 1024)}k"


@builder("shm_resize", pid=Param(Fact.PID, own=True), size=OWN, previous=Param(Fact.SHM_NOW))
def shm_resize(p: Params) -> list[FixStep]:
    """``pid``: a process in the container; ``size``: the new /dev/shm size (``16G``); ``previous``:
    its size now in bytes (0 would mean unlimited to tmpfs, so it is refused). A human runs these."""
    pid = _pid(p.raw("pid"))
    size = p.text("size", SHM_SIZE, "size in GiB")
    previous = p.integer("previous", 1024, 2**50)
    mount = ("nsenter", "-t", pid, "-m", "mount", "-o")
    return [run(R, *mount, f"remount,size={size}", "/dev/shm", key=f"shm:{pid}"),
            run(B, *mount, f"remount,size={_tmpfs_size(previous or 0)}", "/dev/shm", key=f"shm:{pid}")]


HUGEPAGE_KB = tuple(4 << n for n in range(23))  # 4 kB .. 16 GB, powers of two


@builder("hugepages", size_kb=OWN, pages=OWN, previous=Param(Fact.HUGEPAGES_NOW), sysctl=OWN)
def hugepages(p: Params) -> list[FixStep]:
    """``size_kb``: the page size; ``pages``: how many to allocate; ``previous``: how many now;
    ``sysctl``: asked for in sysctl.d (re-apply it). Allocating takes memory from a running node and
    can stall it in compaction, so a human runs these."""
    kb = p.integer("size_kb", 4, HUGEPAGE_KB[-1])
    if kb not in HUGEPAGE_KB:
        raise FixRejected("size_kb: not a page size")
    pages, old = p.integer("pages", 0, 2**31 - 1), p.integer("previous", 0, 2**31 - 1)
    path = f"/sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages"
    steps = [write(R, path, str(pages), key=f"hugepages:{kb}")]
    if _flag(p, "sysctl"):
        steps.append(run(P, "sysctl", "--system"))
    return steps + [write(B, path, str(old), key=f"hugepages:{kb}")]
# --- RoCE: DCQCN, counters, active MTU (rdma.lossless, net.drops, rdma.mtu) ----------------------

ECN_POINTS = ("roce_np", "roce_rp")


@builder("roce_ecn", netdev=Param(Fact.NETDEV, own=True), previous=Param(Fact.ECN_NOW), priority=Param(Fact.ECN_PRIORITY))
def roce_ecn(p: Params) -> list[FixStep]:
    """``netdev``; ``priority``: 0-7; ``previous``: {"roce_np"|"roce_rp": 0 or 1 now} for the points
    to switch on. The sysfs switches do not survive a reboot or driver reload: the persistent step
    is for a human (a boot-time unit, or the NIC firmware's congestion-control settings)."""
    nic, prio = p.netdev("netdev"), p.integer("priority", 0, 7)
    previous = p.mapping("previous", 2)
    if not previous or not all(k in ECN_POINTS and v in (0, 1) and not isinstance(v, bool)
                               for k, v in previous.items()):
        raise FixRejected("previous: not roce_np/roce_rp switches")
    paths = {k: f"/sys/class/net/{nic}/ecn/{k}/enable/{prio}" for k in ECN_POINTS if k in previous}
    steps = [write(R, path, "1", unattended=True, key=f"ecn:{nic}:{k}") for k, path in paths.items()]
    steps.append(manual(P, N_("write 1 to {files} at every boot (a oneshot systemd unit ordered after the driver "
                              "loads), or enable DCQCN for this priority in the NIC firmware with your vendor's tool",
                              files=" and ".join(paths.values())), key=f"ecn:{nic}:boot"))
    steps += [write(B, path, str(previous[k]), unattended=True, key=f"ecn:{nic}:{k}") for k, path in paths.items()]
    return steps


@builder("rdma_counters_show", device=Param(Fact.RDMA), port=Param(Fact.RDMA_PORT), netdev=Param(Fact.NETDEV, own=True))
def rdma_counters_show(p: Params) -> list[FixStep]:
    """``device``, ``port``: an RDMA port; ``netdev``: its interface or null. Read-only: show the
    counters twice a minute apart to see whether they still grow."""
    dev = p.text("device", RDMA_DEVICE, "RDMA device name")
    port = p.integer("port", 0, 255)
    nic = p.raw("netdev")
    steps = [run(R, "rdma", "statistic", "show", "link", f"{dev}/{port}", unattended=True,
                 description=N_("RDMA hw_counters (run again later and compare)"))]
    if nic is not None:
        steps.append(run(R, "ethtool", "-S", netdev(nic), unattended=True,
                         description=N_("NIC counters: rx_discards_phy, rx_out_of_buffer, rx_prio*_pause")))
    return steps


@builder("rdma_show", device=Param(Fact.RDMA), port=Param(Fact.RDMA_PORT))
def rdma_show(p: Params) -> list[FixStep]:
    """``device``, ``port``: show the port's attributes (active_mtu, state)."""
    dev = p.text("device", RDMA_DEVICE, "RDMA device name")
    return [run(R, "ibv_devinfo", "-v", "-d", dev, "-i", str(p.integer("port", 0, 255)), unattended=True)]


# --- RoCE QoS (mlnx_qos) -------------------------------------------------------------------------

TRUST_STATES = ("pcp", "dscp")


def _pfc_vector(p: Params, key: str) -> str:
    value = p.raw(key)
    if not isinstance(value, list) or len(value) != 8 or any(v not in (0, 1) or isinstance(v, bool) for v in value):
        raise FixRejected(f"{key}: not eight 0/1 PFC bits")
    return ",".join(str(v) for v in value)


@builder("roce_qos", netdev=Param(Fact.NETDEV, own=True), trust=OWN, previous_trust=Param(Fact.TRUST_NOW), pfc=OWN,
         previous_pfc=Param(Fact.PFC_NOW))
def roce_qos(p: Params) -> list[FixStep]:
    """``netdev``; ``trust``/``previous_trust``: "dscp"/"pcp" (both or neither); ``pfc``/``previous_pfc``:
    eight 0/1 bits for priorities 0-7 (both or neither). Not unattended: PFC and trust must match the
    switch port, so a human changes both ends; the rollback restores the recorded state exactly."""
    nic = p.netdev("netdev")
    steps = [run(R, "mlnx_qos", "-i", nic, unattended=True, description=N_("show trust, PFC and the DSCP map"))]
    undo = []
    if p.raw("trust") is not None or p.raw("previous_trust") is not None:
        trust, old = p.choice("trust", TRUST_STATES), p.choice("previous_trust", TRUST_STATES)
        steps.append(run(R, "mlnx_qos", "-i", nic, "--trust", trust, key=f"qos:{nic}:trust"))
        undo.append(run(B, "mlnx_qos", "-i", nic, "--trust", old, key=f"qos:{nic}:trust"))
    if p.raw("pfc") is not None or p.raw("previous_pfc") is not None:
        pfc, old_pfc = _pfc_vector(p, "pfc"), _pfc_vector(p, "previous_pfc")
        steps.append(run(R, "mlnx_qos", "-i", nic, "--pfc", pfc, key=f"qos:{nic}:pfc"))
        undo.append(run(B, "mlnx_qos", "-i", nic, "--pfc", old_pfc, key=f"qos:{nic}:pfc"))
    if len(steps) == 1:
        raise FixRejected("neither trust nor pfc to change")
    steps.append(manual(P, N_("apply the same mlnx_qos settings to {nic} at every boot (a oneshot systemd unit "
                              "ordered after the driver loads), and make the switch port's trust and lossless "
                              "priority match", nic=nic), key=f"qos:{nic}:boot"))
    return steps + undo[::-1]  # undone in the reverse order
