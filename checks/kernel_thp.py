"""kernel.thp: transparent huge page defrag=always makes page faults stall in direct compaction."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.facts import Facts
from doctor.findings import LOW, PASS, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.registry import check

BAD_DEFRAG = "always"
GOOD_DEFRAG = "madvise"  # the kernel default
REFERENCES = ("https://docs.kernel.org/admin-guide/mm/transhuge.html",)


@check("kernel.thp", "Transparent huge page defragmentation", "runtime", acts="os", fixes=("thp_defrag",), needs=("thp",))
def kernel_thp(facts: Facts) -> Iterator[Finding]:
    """Low when ``transparent_hugepage/defrag`` is ``always`` (every THP fault may compact synchronously)."""
    thp = facts.thp
    if thp.defrag is None:
        return
    path = f"/{thp.origin}/defrag"
    evidence = (Evidence(f"{thp.origin}/defrag", f"[{thp.defrag}]"),)
    if thp.defrag != BAD_DEFRAG:
        yield Finding(PASS, "transparent_hugepage", N_('THP defrag is {defrag}', defrag=thp.defrag), evidence=evidence)
        return
    yield Finding(
        LOW, "transparent_hugepage", N_('THP defrag=always: allocations stall in direct compaction'),
        detail=N_('With defrag=always every huge-page fault that finds no free huge page reclaims and compacts memory synchronously; large host allocations (model loading, pinned KV offload buffers) see latency spikes.'),
        evidence=evidence, expected=N_('{GOOD_DEFRAG} (or defer+madvise)', GOOD_DEFRAG=GOOD_DEFRAG), observed=thp.defrag,
        impact=Impact(2, N_('occasional multi-millisecond allocation stalls'), basis=N_('kernel transparent_hugepage/defrag documentation: with always, the allocating thread compacts memory synchronously')),
        fix=make("thp_defrag", path=path, value=GOOD_DEFRAG, previous=BAD_DEFRAG,
                notes=N_('The tmpfiles.d line re-applies the setting at boot (there is no kernel parameter for defrag).')),
        references=REFERENCES)
