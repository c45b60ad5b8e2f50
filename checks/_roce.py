"""Shared helpers of the RoCE checks (rdma.lossless, net.drops, rdma.mtu, net.multirail)."""

from __future__ import annotations

from doctor.derived.net import data_nics
from doctor.derived.procs import EnvSetting, env_value
from doctor.derived.rdma import parse_list
from doctor.facts import Facts, NetDev, RdmaPort
from doctor.record import record


@record
class RocePort:
    """An active RoCE port that NCCL or KV transfer may use, with its interface."""

    port: RdmaPort
    netdev: NetDev


def roce_ports(facts: Facts) -> list[RocePort]:
    """Active Ethernet-link-layer RDMA ports of data NICs, minus those ``NCCL_IB_HCA`` excludes."""
    hca = env_value(facts, "NCCL_IB_HCA")
    wanted = parse_list(hca.value) if hca else None
    out = []
    for nic in data_nics(facts):
        for port in nic.rdma:
            if (port.link_layer or "").lower() != "ethernet" or not port.active:
                continue
            if wanted is not None and not wanted.matches(port.device, port.port):
                continue
            out.append(RocePort(port, nic.netdev))
    return sorted(out, key=lambda r: r.port.name)


def nccl_traffic_class(facts: Facts) -> tuple[int, EnvSetting | None]:
    """``NCCL_IB_TC`` (the IP traffic class byte NCCL's QPs use; 0 when unset or not a number 0-255)."""
    setting = env_value(facts, "NCCL_IB_TC")
    value = setting.value.strip() if setting else ""
    return (int(value) if value.isdigit() and int(value) <= 255 else 0), setting


def priority_of(tc: int) -> int:
    """The priority a traffic class lands in under DSCP trust with the default DSCP-to-priority map
    (DSCP = TC >> 2, priority = DSCP >> 3): TC 106 (DSCP 26) -> priority 3."""
    return (tc >> 2) >> 3
