"""rdma.user_verbs: RDMA NICs present but the userspace verbs module (ib_uverbs) not loaded."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.facts import Facts
from doctor.findings import HIGH, PASS, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.inputs import whole
from doctor.registry import check

REFERENCES = (
    "https://docs.kernel.org/infiniband/user_verbs.html",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#networking-issues",
)
#: kernel Documentation/infiniband/user_verbs.rst: "The ib_uverbs module, built by enabling
#: CONFIG_INFINIBAND_USER_VERBS, enables direct userspace access to IB hardware"
BASIS = N_("kernel user_verbs documentation: \"The ib_uverbs module, built by enabling CONFIG_INFINIBAND_USER_VERBS, "
         "enables direct userspace access to IB hardware\"; without its /dev/infiniband/uverbsN nodes libibverbs lists no device, so NCCL's IB "
         "transport finds none and NCCL uses TCP sockets")


def _no_rdma(facts: Facts) -> str | None:
    """No RDMA device (told only when the RDMA ports were read whole)."""
    return N_("no RDMA device") if not facts.rdma and whole(facts, "rdma") else None


@check("rdma.user_verbs", "Userspace verbs module for the RDMA NICs", "rdma", acts="os", fixes=("module_load",), needs=("rdma", "modules"),
       applies=_no_rdma)
def user_verbs(facts: Facts) -> Iterator[Finding]:
    """High when RDMA devices exist, ib_core is a loaded module and ib_uverbs is not loaded.

    A built-in ib_core (absent from /proc/modules) may carry a built-in ib_uverbs, so nothing is said then.
    ``rdma_cm`` is not judged: NCCL sets up its queue pairs over its own sockets (docs/checks.md).
    """
    modules = facts.modules
    if not facts.rdma or modules is None or "ib_core" not in modules:
        return
    devices = sorted({p.device for p in facts.rdma})
    ev = Evidence(facts.rdma[0].origin, f"{len(devices)} RDMA device(s): {', '.join(devices[:4])}")
    if "ib_uverbs" in modules:
        yield Finding(PASS, "node", N_('ib_uverbs is loaded: userspace can open the RDMA devices'),
                      evidence=(ev, Evidence("proc/modules", "ib_uverbs")))
        return
    yield Finding(
        HIGH, "node", N_('ib_uverbs not loaded: no process can use the RDMA NICs'),
        detail=(N_("{v} are registered with ib_core, but without ib_uverbs there are no /dev/infiniband/uverbs* nodes: ibv_devices lists nothing, NCCL logs 'NET/IB : No device found' and sends inter-node traffic over TCP sockets; RDMA KV-cache transfer (NIXL/UCX, Mooncake) cannot start.", v=', '.join(devices[:4]))),
        evidence=(ev, Evidence("proc/modules", "ib_core loaded, ib_uverbs absent")),
        expected=N_('ib_uverbs loaded'), observed=N_('ib_uverbs absent'),
        impact=Impact(70, N_('inter-node NCCL over TCP instead of RDMA'), basis=BASIS),
        fix=make("module_load", module="ib_uverbs",
                 notes=N_("rdma-core's udev rules normally load ib_uverbs with the NIC driver; a blacklist line in /etc/modprobe.d or a minimal initramfs can keep it out. Restart the server afterwards.")),
        references=REFERENCES)
