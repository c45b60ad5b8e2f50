"""kernel.hugepages: hugepages asked for (boot line, sysctl.d) but not allocated."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

from doctor.facts import Facts
from doctor.findings import MEDIUM, PASS, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.lazyre import lazy
from doctor.reads import reads
from doctor.registry import check

REFERENCES = ("https://docs.kernel.org/admin-guide/mm/hugetlbpage.html",)
_SIZE_RE = lazy(r"^(\d+)([KMG])$", re.IGNORECASE)
_KB = {"K": 1, "M": 1 << 10, "G": 1 << 20}


def _size_kb(text: str) -> int | None:
    m = _SIZE_RE.match(text.strip())
    return int(m.group(1)) * _KB[m.group(2).upper()] if m else None


def asked(facts: Facts, default_kb: int | None) -> dict[int, tuple[int, str]]:
    """Page size (kB) -> (pages asked, where): ``hugepagesz=``/``hugepages=`` pairs on the boot line (in order,
    as the kernel reads them), else ``vm.nr_hugepages`` in sysctl.d for the default size."""
    out: dict[int, tuple[int, str]] = {}
    try:
        words = shlex.split(facts.cmdline.raw or "")
    except ValueError:
        words = (facts.cmdline.raw or "").split()
    size: int | None = None  # None: the default size, whichever default_hugepagesz= finally names
    pending: dict[int | None, tuple[int, str]] = {}
    for word in words:
        key, _, value = word.partition("=")
        if key == "default_hugepagesz" and _size_kb(value):
            default_kb = _size_kb(value)
        elif key == "hugepagesz" and _size_kb(value):
            size = _size_kb(value)
        elif key == "hugepages" and value.isdigit():
            pending[size] = (int(value), f"{facts.cmdline.origin}: {word}")
    for key_kb, value_where in pending.items():
        kb = key_kb if key_kb is not None else default_kb
        if kb:
            out[kb] = value_where
    persisted = facts.sysctls.persistent.get("vm.nr_hugepages")
    if persisted and persisted[0].isdigit() and default_kb and default_kb not in out:
        out[default_kb] = (int(persisted[0]), f"{persisted[1]}: vm.nr_hugepages = {persisted[0]}")
    return out


@check("kernel.hugepages", "Hugepages asked for but not allocated", "runtime", acts="os", fixes=("hugepages",), needs=("cmdline", "hugepages", "sysctls"),
       reads=reads(params=("hugepages", "hugepagesz", "default_hugepagesz")))
def kernel_hugepages(facts: Facts) -> Iterator[Finding]:
    """Medium when fewer hugepages of a size are allocated than the boot line or sysctl.d asks for
    (memory too fragmented when they were requested): whatever relies on them (DPDK, a KV cache or
    a database started with hugepages) fails to start or silently uses 4 KiB pages."""
    hp = facts.hugepages
    wanted = asked(facts, hp.default_size_kb or 2048)
    wanted = {k: v for k, v in wanted.items() if v[0] > 0}
    if not wanted:
        return
    short = [(kb, n, where) for kb, (n, where) in sorted(wanted.items()) if hp.allocated.get(kb, 0) < n]
    if not short:
        yield Finding(PASS, "node", N_('hugepages allocated as asked'),
                      evidence=tuple(Evidence(hp.origins.get(kb, "proc/meminfo"), f"{hp.allocated.get(kb)} x {kb} kB")
                                     for kb in sorted(wanted)))
        return
    for kb, n, where in short:
        have = hp.allocated.get(kb, 0)
        path = f"/sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages"
        yield Finding(
            MEDIUM, f"hugepages-{kb}kB", N_('{have} of {n} hugepages of {kb} kB allocated', have=have, n=n, kb=kb),
            detail=N_('The kernel could not find enough contiguous memory when the pages were requested (or the size is not supported). Software configured for hugepages then fails to start or falls back to 4 KiB pages. Allocating at runtime works best right after boot, before memory fragments.'),
            evidence=(Evidence(where.split(": ", 1)[0], where.split(": ", 1)[-1]),
                      Evidence(hp.origins.get(kb, path.lstrip("/")), f"{have} allocated")),
            expected=N_('{n} pages', n=n), observed=N_('{have} pages', have=have),
            impact=Impact(10, N_('programs that need hugepages fail or run with small pages'),
                          basis=N_('kernel hugetlbpage documentation: the pool holds only what could be allocated; the shortfall is in the evidence')),
            fix=make("hugepages",
                     N_('Reserve 1 GiB pages on the boot line (hugepagesz=1G hugepages=N): they can rarely be allocated later. If the runtime write leaves fewer pages, drop caches or reboot.'),
                     size_kb=kb, pages=n, previous=have, sysctl="sysctl" in where),
            references=REFERENCES)
