"""Check sysctl.persistence: later files overriding 90-gnd-*.conf, running values unlike the boot files."""

from __future__ import annotations

from checks.sysctl_persistence import persistence
from doctor.registry import refusal
from tests.helpers import facts, findings_of, sick

OURS = {"etc/sysctl.d/90-gnd-net-buffers.conf": "net.core.rmem_max = 2147483647\n"}



def test_healthy_passes_and_no_files_does_not_apply() -> None:
    assert [f.severity for f in findings_of(facts(), "sysctl.persistence")] == ["pass"]
    assert findings_of(facts(base=sick()), "sysctl.persistence") == []


def test_later_file_overriding_our_fix_is_medium() -> None:
    later = {**OURS, "etc/sysctl.d/99-cloudimg.conf": "net.core.rmem_max=212992\n"}
    (f,) = [x for x in findings_of(facts(later), "sysctl.persistence") if x.severity != "pass"]
    assert (f.severity, f.subject) == ("medium", "net.core.rmem_max")
    assert "99-cloudimg.conf" in f.title and f.observed.startswith("net.core.rmem_max = 212992")
    # /etc/sysctl.conf is applied after every sysctl.d file
    conf = {**OURS, "etc/sysctl.conf": "net.core.rmem_max = 4194304\n"}
    assert [x.severity for x in findings_of(facts(conf), "sysctl.persistence")] == ["medium"]


def test_earlier_or_equal_files_are_not_overrides() -> None:
    earlier = {**OURS, "etc/sysctl.d/10-defaults.conf": "net.core.rmem_max = 212992\n",
               "etc/sysctl.d/99-same.conf": "net.core.rmem_max =  2147483647\n"}
    assert [f.severity for f in findings_of(facts(earlier), "sysctl.persistence")] == ["pass"]


def test_running_value_unlike_boot_files_is_low() -> None:
    # 90-gpu-net.conf (the healthy node's file) sorts after 90-gnd-persist.conf: notes only
    (f,) = findings_of(facts({"proc/sys/net/core/somaxconn": "1024\n"}), "sysctl.persistence")
    assert (f.severity, f.subject, f.observed) == ("low", "net.core.somaxconn", "1024")
    assert not f.fix.steps and "90-gpu-net.conf" in f.fix.notes
    # a file sorting before ours: persist the running value with the sysctl builder
    early = {"etc/sysctl.d/90-gpu-net.conf": None, "etc/sysctl.d/50-tuning.conf": "net.core.somaxconn = 4096\n",
             "proc/sys/net/core/somaxconn": "1024\n"}
    (g,) = findings_of(facts(early), "sysctl.persistence")
    assert g.fix.params["set"] == {"net.core.somaxconn": "1024"}
    assert refusal(persistence, "sysctl.persistence", "sysctl", g.fix.params) == ""
    # sysctls no check judges are not reported
    other = {"etc/sysctl.d/50-x.conf": "fs.file-max = 100\n"}
    assert [f.severity for f in findings_of(facts(other), "sysctl.persistence")] == ["pass"]


def test_generated_node_with_a_later_cloud_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from fixtures.tools.make_node import HEALTHY, build_node

    spec = replace(HEALTHY, extra_sysctl_files={"90-gnd-net-buffers.conf": "net.core.somaxconn = 4096\n",
                                                "99-cloudimg.conf": "net.core.somaxconn = 128\n"})
    build_node(tmp_path / "n", spec)
    found = [x for x in findings_of(facts(base=tmp_path / "n"), "sysctl.persistence") if x.severity != "pass"]
    assert [(x.severity, x.subject) for x in found] == [("medium", "net.core.somaxconn")]
