"""`gnd collect`: the snapshot holds what the specs name, and checking it equals checking the host."""

from __future__ import annotations

import fnmatch
import json
import tarfile
from pathlib import Path

import pytest

from doctor import specs
from doctor.cli import main
from doctor.facts import Facts
from doctor.runner import run_checks
from doctor.sources import MANIFEST, LiveSource, open_source
from tests import realdata
from tests.helpers import HEALTHY, SICK

ROOTS = [p for p in (HEALTHY, SICK) if p.is_dir()]


def _signature(result_findings: list) -> list[tuple[str, str, str, str]]:
    return sorted((f.check, f.severity, f.subject, f.title) for f in result_findings)


def _force_all(f: Facts) -> None:
    for name in ("host", "pci", "gpus", "netdevs", "rdma", "numa", "irqs", "processes", "cmdline", "sysctls",
                 "modules", "kubelet", "deploy_files"):
        getattr(f, name)


@pytest.mark.parametrize("root", ROOTS, ids=lambda p: p.name)
def test_collect_then_check_gives_the_same_findings(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "snap.tar.gz"
    assert main(["collect", "--root", str(root), "-o", str(out)]) == 0
    live = run_checks(Facts(LiveSource(str(root))))
    snap = run_checks(Facts(open_source(str(out))))
    assert _signature(snap.findings) == _signature(live.findings)
    assert snap.inventory["topology"] == live.inventory["topology"]
    assert out.stat().st_size < 1024 * 1024, "snapshot must stay under 1 MB"


@pytest.mark.parametrize("root", ROOTS, ids=lambda p: p.name)
def test_every_path_the_facts_read_is_named_by_a_spec(root: Path) -> None:
    src = LiveSource(str(root))
    src.accessed = set()
    _force_all(Facts(src))
    patterns = [p for s in specs.SPECS for raw in (*s.paths, *s.sos_paths) for p in specs.expand_braces(raw)]
    patterns += [s.snapshot_path for s in specs.SPECS if s.argv] + [MANIFEST]

    def covered(path: str) -> bool:
        parts = path.split("/")
        for pattern in patterns:
            pp = pattern.split("/")
            if len(parts) <= len(pp) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pp)):
                return True
        return False

    missing = sorted(p for p in src.accessed if not covered(p))
    assert not missing, f"facts read paths no spec collects: {missing[:10]}"


def test_manifest_and_secret_filtering(tmp_path: Path) -> None:
    root = tmp_path / "host"
    proc = root / "proc/4242"
    proc.mkdir(parents=True)
    (proc / "cmdline").write_bytes(b"python3\0-m\0vllm.entrypoints.openai.api_server\0--api-key\0sk-live-abcdef123456\0")
    fake_hf = b"hf_" + b"FAKE" * 6  # token-shaped, obviously fake (built here so no scanner mistakes it)
    (proc / "environ").write_bytes(b"HF_TOKEN=" + fake_hf + b"\0NCCL_DEBUG=INFO\0AWS_SECRET_ACCESS_KEY=zzz\0"
                                   b"NCCL_IB_HCA=mlx5_0\0HOME=/root\0")
    (proc / "status").write_text("Name:\tpython3\nUmask:\t0022\nPPid:\t1\nCpus_allowed_list:\t0-3\nVmRSS:\t1 kB\n")
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/hostname").write_text("node-a\n")
    out = tmp_path / "s.tar.gz"
    assert main(["collect", "--root", str(root), "-o", str(out)]) == 0
    with tarfile.open(out) as tf:
        blob = b"".join(tf.extractfile(m).read() for m in tf.getmembers() if m.isfile())  # type: ignore[union-attr]
        manifest = json.loads(tf.extractfile(MANIFEST).read())  # type: ignore[union-attr]
    for secret in (b"sk-live-abcdef123456", fake_hf, b"zzz", b"HOME=/root", b"VmRSS"):
        assert secret not in blob
    assert b"NCCL_DEBUG=INFO" in blob and b"NCCL_IB_HCA=mlx5_0" in blob
    assert manifest["hostname"] == "node-a" and manifest["specs"]["proc.processes"]["status"] == "ok"
    assert manifest["specs"]["nvidia_smi_xml"]["status"] == "missing"


def test_collect_refuses_a_directory_as_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collect", "--root", str(tmp_path), "-o", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


@pytest.mark.skipif(not realdata.available(), reason="../shared/realdata is absent")
def test_collect_from_a_real_recording_round_trips(tmp_path: Path) -> None:
    root = realdata.unpack("32intel64-2p8co2t+8ve", tmp_path / "rd")
    out = tmp_path / "snap.tar.gz"
    assert main(["collect", "--root", str(root), "-o", str(out)]) == 0
    a, b = Facts(LiveSource(str(root))), Facts(open_source(str(out)))
    assert {k: (d.path, d.cur_speed, d.cur_width) for k, d in a.pci.devices.items()} == \
        {k: (d.path, d.cur_speed, d.cur_width) for k, d in b.pci.devices.items()}
    assert _signature(run_checks(a).findings) == _signature(run_checks(b).findings)


def test_a_hung_command_is_recorded_not_waited_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin/nvidia-smi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nsleep 30 &\nsleep 30\necho done\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    from dataclasses import replace

    from doctor.sources import run_command

    spec = replace(specs.get("nvidia_smi_xml"), timeout=0.5)
    out = run_command(spec)
    assert out.timed_out and out.text is None and "timed out after 0.5 s" in (out.reason or "")
    missing = run_command(replace(spec, argv=("definitely-not-installed-gnd",)))
    assert missing.text is None and "not found" in (missing.reason or "")


def test_root_with_run_commands_runs_them_here(tmp_path: Path) -> None:
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands/lspci_-vvv").write_text("recorded\n")
    assert LiveSource(str(tmp_path)).command("lspci_vvv").text == "recorded\n"
    ran = LiveSource(str(tmp_path), run_commands=True).command("lspci_vvv")
    assert ran.text != "recorded\n"  # either real lspci output or "lspci not found"


def test_per_interface_commands_are_collected_for_each_roce_netdev(tmp_path: Path) -> None:
    out = tmp_path / "snap.tar.gz"
    assert main(["collect", "--root", str(HEALTHY), "-o", str(out)]) == 0
    with tarfile.open(out) as tf:
        names = set(tf.getnames())
        manifest = json.loads(tf.extractfile(MANIFEST).read())  # type: ignore[union-attr]
    qos = manifest["specs"]["mlnx_qos"]
    roce = LiveSource(str(HEALTHY)).roce_netdevs()
    assert len(roce) == 8 and "enp39s0f0np0" not in roce  # the X710 has no RDMA device
    assert qos["status"] == "ok" and sorted(qos["netdevs"]) == roce
    assert {f"commands/mlnx_qos_-i_{nd}" for nd in roce} <= names
    assert manifest["specs"]["ethtool_stats"]["status"] == "missing"  # not recorded in the fixture
    snap = Facts(open_source(str(out)))
    assert snap.roce_qos["enp25s0np0"].pfc[3] is True and snap.roce_qos["enp25s0np0"].trust == "dscp"


@pytest.mark.parametrize("name", ["-rf", "../etc", "a b", "x" * 16, "eth0;id", "", "..", "eth\n0", "é0"])
def test_hostile_interface_names_are_refused_before_anything_runs(name: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "ran"
    fake = tmp_path / "bin/mlnx_qos"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    src = LiveSource(str(HEALTHY), run_commands=True)
    out = src.netdev_command("mlnx_qos", name)
    assert out.text is None and "refused interface name" in (out.reason or "")
    snapshot = LiveSource(str(HEALTHY)).netdev_command("mlnx_qos", name)
    assert snapshot.text is None and "refused" in (snapshot.reason or "")
    # a safe name that is not an interface of this host is not run either
    absent = src.netdev_command("mlnx_qos", "eth9")
    assert absent.text is None and "no interface eth9" in (absent.reason or "")
    assert not log.exists()
    with pytest.raises(ValueError):
        specs.get("mlnx_qos").argv_for(name)


def test_a_hung_per_interface_command_is_waited_on_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    log = tmp_path / "ran"
    fake = tmp_path / "bin/mlnx_qos"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nsleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    monkeypatch.setitem(specs.BY_NAME, "mlnx_qos", replace(specs.get("mlnx_qos"), timeout=0.5))
    src = LiveSource(str(HEALTHY), run_commands=True)
    outs = [src.netdev_command("mlnx_qos", nd) for nd in src.roce_netdevs()]
    assert all(o.text is None and o.timed_out for o in outs) and len(outs) == 8
    assert len(log.read_text().splitlines()) == 1 and "not run: " in (outs[1].reason or "")
