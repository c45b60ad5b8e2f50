"""Host identity (hostname, machine id, board serial) and whether it is a virtual machine."""

from __future__ import annotations

from doctor.record import record
from doctor.sources import LIVE, Source

VM_VENDORS = ("qemu", "amazon ec2", "microsoft corporation", "google", "vmware", "xen", "innotek",
              "openstack", "red hat", "bochs", "nutanix", "parallels", "cloudstack", "kvm")


@record
class Host:
    hostname: str | None
    machine_id: str | None
    board_serial: str | None
    product: str | None
    vendor: str | None
    kernel: str | None
    is_vm: bool | None  # None: cannot tell
    vm_reason: str | None
    os_release: str | None = None
    #: SMBIOS chassis type (``sys/class/dmi/id/chassis_type``: 9 laptop, 10 notebook ...), None when not recorded
    chassis_type: int | None = None


def _first(src: Source, *paths: str) -> str | None:
    for path in paths:
        value = src.read_line(path)
        if value:
            return value
    return None


def build_host(src: Source) -> Host:
    hostname = _first(src, "proc/sys/kernel/hostname", "etc/hostname", "hostname", "sos_commands/host/hostname")
    if hostname is None and src.kind == LIVE:
        import socket

        hostname = socket.gethostname()
    if hostname is not None:  # a host named like a token (a provider key pasted as a name) never leaves
        from doctor.secrets import mask_text

        hostname = mask_text(hostname)
    vendor = _first(src, "sys/class/dmi/id/sys_vendor")
    product = _first(src, "sys/class/dmi/id/product_name")
    cpuinfo = src.read_text("proc/cpuinfo", cap=1 << 22) or ""
    # x86 lists CPU "flags" (with "hypervisor" inside a guest); arm64 lists "Features", which has no
    # such flag, so only x86 can prove bare metal from cpuinfo
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines()
                  if line.lower().startswith("flags") and ":" in line), None)
    hypervisor = _first(src, "sys/hypervisor/type")
    is_vm: bool | None = None
    reason: str | None = None
    if flags is not None and "hypervisor" in flags:
        is_vm, reason = True, "proc/cpuinfo flags include 'hypervisor'"
    elif vendor and any(v in vendor.lower() for v in VM_VENDORS):
        is_vm, reason = True, f"sys/class/dmi/id/sys_vendor is {vendor!r}"
    elif product and any(v in product.lower() for v in ("kvm", "virtual machine", "vmware", "hvm domu")):
        is_vm, reason = True, f"sys/class/dmi/id/product_name is {product!r}"
    elif hypervisor:
        is_vm, reason = True, f"sys/hypervisor/type is {hypervisor!r}"
    elif flags is not None:
        is_vm, reason = False, "proc/cpuinfo has no 'hypervisor' flag"
    os_release = None
    for line in (src.read_text("etc/os-release", cap=1 << 16) or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            os_release = line.split("=", 1)[1].strip().strip('"')
    kernel = _first(src, "proc/sys/kernel/osrelease")
    if kernel is None:
        version = src.read_line("proc/version")
        kernel = version.split()[2] if version and len(version.split()) > 2 else None
    chassis = _first(src, "sys/class/dmi/id/chassis_type")
    return Host(hostname=hostname, chassis_type=int(chassis) if chassis and chassis.isdigit() and len(chassis) < 4
                else None, machine_id=_first(src, "etc/machine-id"),
                board_serial=_first(src, "sys/class/dmi/id/board_serial", "sys/class/dmi/id/product_serial"),
                product=product, vendor=vendor, kernel=kernel, is_vm=is_vm, vm_reason=reason, os_release=os_release)
