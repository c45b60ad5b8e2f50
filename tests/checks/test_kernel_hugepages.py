"""kernel.hugepages: hugepages asked on the boot line or in sysctl.d but not allocated."""

from __future__ import annotations

from dataclasses import replace

from fixtures.tools.make_node import HEALTHY as SPEC
from tests.checks.smi_overlay import generated
from tests.helpers import facts, findings_of

CHECK = "kernel.hugepages"
GIGANTIC = "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"


def test_nothing_asked_is_quiet() -> None:
    assert findings_of(facts(), CHECK) == []


def test_boot_line_2m_pages_short_is_medium() -> None:
    (f,) = findings_of(generated(replace(SPEC, extra_cmdline=("hugepages=4096",), hugepages_2m=1200)), CHECK)
    assert f.severity == "medium" and f.subject == "hugepages-2048kB" and f.title.startswith("1200 of 4096")
    assert f.fix.runtime == ("echo 4096 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",)
    assert f.fix.rollback == ("echo 1200 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",)
    assert f.evidence[0].value == "hugepages=4096"


def test_allocated_as_asked_passes() -> None:
    found = findings_of(generated(replace(SPEC, extra_cmdline=("hugepages=4096",), hugepages_2m=4096)), CHECK)
    assert [x.severity for x in found] == ["pass"]


def test_sizes_follow_hugepagesz_in_order() -> None:
    spec = replace(SPEC, extra_cmdline=("hugepagesz=1G", "hugepages=16", "hugepagesz=2M", "hugepages=512"),
                   hugepages_2m=512)
    (f,) = findings_of(generated(spec), CHECK)
    assert f.subject == "hugepages-1048576kB" and f.title.startswith("0 of 16")
    ok = facts({"proc/cmdline": "BOOT_IMAGE=/vmlinuz hugepagesz=1G hugepages=16\n", GIGANTIC: "16\n"})
    assert [x.severity for x in findings_of(ok, CHECK)] == ["pass"]


def test_sysctl_d_request_counts_for_the_default_size() -> None:
    (f,) = findings_of(facts({"etc/sysctl.d/80-hugepages.conf": "vm.nr_hugepages = 2048\n"}), CHECK)
    assert f.severity == "medium" and f.evidence[0].source == "etc/sysctl.d/80-hugepages.conf"
    assert f.fix.persistent == ("sysctl --system",)
