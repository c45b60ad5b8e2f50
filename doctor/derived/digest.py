"""A compact, JSON-serialisable digest of the facts that explain findings, for diffs and fleets.

The digest is a flat ``{key: value}`` map of strings, sorted by key, e.g.::

    pci.0000:1a:00.0.width      x8 (max x16)
    pci.0000:1a:00.0.driver     nvidia
    sysctl.net.core.rmem_max    212992
    cmdline.iommu               pt
    gid.mlx5_0/1.3              ipv4 RoCE v2
    proc.vllm.entrypoints.openai.api_server.args   --model ... --enforce-eager

Keys that name one machine rather than its configuration (hostname, machine-id, serials, GID
addresses, the root file system UUID) are *identity* keys: ``gnd diff`` shows them, ``gnd fleet``
leaves them out of configuration groups and outlier votes (:func:`is_identity`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from doctor.facts import Facts
from doctor.facts.pci import PciDevice
from doctor.lazyre import lazy
from doctor.secrets import mask_text

#: Sysctls recorded in the digest and in baselines (the ones the checks reason about).
SYSCTLS = (
    "kernel.numa_balancing", "vm.zone_reclaim_mode", "vm.swappiness", "vm.nr_hugepages",
    "kernel.sched_autogroup_enabled",
    "net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default", "net.core.wmem_default",
    "net.core.netdev_max_backlog", "net.core.somaxconn", "net.core.default_qdisc",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_mem", "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack", "net.ipv4.tcp_window_scaling",
)
#: argv words (case-insensitive) that mark an inference or training process whose flags are recorded.
INFERENCE_MARKERS = lazy(
    r"vllm|sglang|tensorrt_llm|trtllm|text-generation|tritonserver|lmdeploy|llama[-_.]?server|ollama|"
    r"torchrun|deepspeed|dynamo|nim", re.IGNORECASE)
#: Keys that identify a machine; a fleet expects them to differ.
IDENTITY_KEYS = frozenset({"host.hostname", "host.machine_id", "host.board_serial", "cmdline.root"})
IDENTITY_SUFFIXES = (".addr", ".serial", ".uuid")
MAX_PROCESS_LABELS = 16
MAX_VALUE = 2000


def is_identity(key: str) -> bool:
    """Whether ``key`` names the machine (expected to differ between nodes) rather than its setup."""
    return key in IDENTITY_KEYS or key.endswith(IDENTITY_SUFFIXES)


def _gts(value: float | None) -> str:
    return "?" if value is None else f"{value:g} GT/s"


def _width(value: int | None) -> str:
    return "x?" if value is None else f"x{value}"


def _model(dev: PciDevice) -> str:
    if dev.vendor is None or dev.device is None:
        return "?"
    return f"{dev.vendor:04x}:{dev.device:04x}"


def _put(out: dict[str, str], key: str, value: object) -> None:
    if value is None:
        return
    text = mask_text(str(value))
    out[key] = text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "..."


def _pci(facts: Facts, out: dict[str, str]) -> None:
    pci = facts.pci
    idle_links: set[str] = set()
    for gpu in facts.gpus.gpus:
        if gpu.activity == "idle" and gpu.pci is not None:
            idle_links.add(gpu.address)
            if gpu.pci.parent:
                idle_links.add(gpu.pci.parent)  # the port above shares the GPU's link
    seen: set[str] = set()
    for dev in [*pci.gpus, *pci.nics]:
        for d in [dev, *pci.upstream(dev.address)]:
            if d.address in seen:
                continue
            seen.add(d.address)
            base = f"pci.{d.address}"
            kind = "gpu" if d.is_gpu else "nic" if d.is_nic else "bridge"
            _put(out, f"{base}.kind", kind)
            _put(out, f"{base}.model", _model(d))
            if d.cur_width is not None or d.max_width is not None:
                _put(out, f"{base}.width", f"{_width(d.cur_width)} (max {_width(d.max_width)})")
            if d.cur_speed is not None or d.max_speed is not None:
                if d.address in idle_links:
                    _put(out, f"{base}.speed", f"idle (max {_gts(d.max_speed)})")
                else:
                    _put(out, f"{base}.speed", f"{_gts(d.cur_speed)} (max {_gts(d.max_speed)})")
            _put(out, f"{base}.driver", d.driver or "none")
            if d.numa_node is not None:
                _put(out, f"{base}.numa", d.numa_node)


def _net(facts: Facts, out: dict[str, str]) -> None:
    for nd in facts.netdevs:
        if nd.virtual:
            continue
        _put(out, f"net.{nd.name}.mtu", nd.mtu)
        _put(out, f"net.{nd.name}.speed", f"{nd.speed_mbps} Mb/s" if nd.speed_mbps else "down/unknown")
    for port in facts.rdma:
        base = f"rdma.{port.name}"
        _put(out, f"{base}.state", port.state)
        _put(out, f"{base}.link_layer", port.link_layer)
        _put(out, f"{base}.rate", port.rate_text)
        for gid in port.gids:
            if gid.is_zero:
                continue
            kind = "link-local" if gid.is_link_local else "ipv4" if gid.is_ipv4 else "ipv6"
            _put(out, f"gid.{port.name}.{gid.index}", f"{kind} {gid.type or '?'}")
            _put(out, f"gid.{port.name}.{gid.index}.addr", gid.ipv4 or gid.gid)


def process_label(argv: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    """A stable name for an inference process and its remaining arguments, or None for other processes.

    ``python3 -m vllm.entrypoints.openai.api_server --model m`` -> (``vllm.entrypoints.openai.api_server``,
    (``--model``, ``m``)); ``vllm serve m`` -> (``vllm serve``, (``m``,)).
    """
    if len(argv) < 2 or not any(INFERENCE_MARKERS.search(a) for a in argv[:4]):
        return None
    prog = os.path.basename(argv[0])
    if prog.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        return argv[2], argv[3:]
    if prog.startswith("python") and not argv[1].startswith("-"):
        return os.path.basename(argv[1]), argv[2:]
    if argv[1] in ("serve", "run", "launch"):
        return f"{prog} {argv[1]}", argv[2:]
    return prog, argv[1:]


def _processes(facts: Facts, out: dict[str, str]) -> None:
    args: dict[str, set[str]] = {}
    envs: dict[str, dict[str, str]] = {}
    for proc in facts.processes:
        labelled = process_label(proc.argv)
        if labelled is None:
            continue
        label, rest = labelled
        if label not in args and len(args) >= MAX_PROCESS_LABELS:
            continue
        args.setdefault(label, set()).add(" ".join(rest))
        envs.setdefault(label, {}).update(proc.env)
    for label, values in args.items():
        _put(out, f"proc.{label}.args", " | ".join(sorted(values)))
        for name, value in sorted(envs[label].items()):
            _put(out, f"proc.{label}.env.{name}", value)


def _part(facts: Facts, fill: Callable[[Facts, dict[str, str]], None]) -> dict[str, str]:
    out: dict[str, str] = {}
    fill(facts, out)
    return out


def build_digest(facts: Facts) -> dict[str, str]:
    """The digest of one node (see the module docstring); every value a short string."""
    out: dict[str, str] = {}
    host = facts.host
    _put(out, "host.hostname", host.hostname)
    _put(out, "host.machine_id", host.machine_id)
    _put(out, "host.board_serial", host.board_serial)
    _put(out, "host.product", host.product)
    _put(out, "host.kernel", host.kernel)
    _put(out, "host.os", host.os_release)
    out.update(_part(facts, _node))
    out.update(_part(facts, _pci))
    out.update(_part(facts, _net))
    out.update(_part(facts, _processes))
    return dict(sorted(out.items()))


def _node(facts: Facts, out: dict[str, str]) -> None:
    """GPU and NIC counts, driver versions, chosen sysctls, kernel parameters, kubelet policies."""
    gpus = facts.gpus
    _put(out, "gpu.count", len(gpus.gpus))
    _put(out, "gpu.driver", gpus.driver_version)
    _put(out, "gpu.cuda", gpus.cuda_version)
    _put(out, "nic.count", len(facts.pci.nics))
    for key in SYSCTLS:
        _put(out, f"sysctl.{key}", facts.sysctls.get(key))
    if facts.cmdline.raw is not None:
        for param, value in facts.cmdline.params.items():
            _put(out, f"cmdline.{param}", value)
    kubelet = facts.kubelet
    if kubelet is not None:
        for config_key, flag in (("cpuManagerPolicy", "cpu-manager-policy"),
                                 ("topologyManagerPolicy", "topology-manager-policy")):
            policy, _ = kubelet.policy(config_key, flag)
            _put(out, f"kubelet.{config_key}", policy)


def digest_from_inventory(inventory: dict[str, Any]) -> dict[str, str]:
    """The part of a digest a saved result holds when it was written without one (older results)."""
    saved = inventory.get("digest")
    if isinstance(saved, dict) and saved:
        return {str(k): str(v) for k, v in sorted(saved.items())}
    out: dict[str, str] = {}
    host = inventory.get("host") or {}
    if isinstance(host, dict):
        for key in ("hostname", "machine_id", "board_serial", "product", "kernel"):
            _put(out, f"host.{key}", host.get(key))
    gpus = inventory.get("gpus") or []
    nics = inventory.get("nics") or []
    _put(out, "gpu.count", len(gpus) if isinstance(gpus, list) else None)
    _put(out, "nic.count", len(nics) if isinstance(nics, list) else None)
    driver = inventory.get("driver") or {}
    if isinstance(driver, dict):
        _put(out, "gpu.driver", driver.get("nvidia"))
        _put(out, "gpu.cuda", driver.get("cuda"))
    for dev in inventory.get("topology") or []:
        if not isinstance(dev, dict) or not dev.get("address"):
            continue
        base = f"pci.{dev['address']}"
        _put(out, f"{base}.kind", dev.get("kind"))
        if dev.get("vendor") and dev.get("device"):
            _put(out, f"{base}.model", f"{str(dev['vendor'])[2:]}:{str(dev['device'])[2:]}")
        if dev.get("cur_width") is not None or dev.get("max_width") is not None:
            _put(out, f"{base}.width", f"{_width(dev.get('cur_width'))} (max {_width(dev.get('max_width'))})")
        if dev.get("cur_speed") is not None or dev.get("max_speed") is not None:
            _put(out, f"{base}.speed", f"{_gts(dev.get('cur_speed'))} (max {_gts(dev.get('max_speed'))})")
        _put(out, f"{base}.driver", dev.get("driver") or "none")
        _put(out, f"{base}.numa", dev.get("numa_node"))
    cmdline = inventory.get("cmdline")
    if isinstance(cmdline, str):
        from doctor.facts.kernel import Cmdline

        for param, value in Cmdline(cmdline).params.items():
            _put(out, f"cmdline.{param}", value)
    return dict(sorted(out.items()))


def safe_digest(facts: Facts) -> dict[str, str]:
    """:func:`build_digest`, or an empty digest if odd input breaks it (a report must still come out)."""
    try:
        return build_digest(facts)
    except Exception:  # the digest is an extra; never let it end a run
        return {}
