"""RoCE facts: per-priority ECN (DCQCN) switches, RDMA drop/sequence counters, active MTU, IPv4 routes.

Sources and their real formats:

- ``/sys/class/net/<if>/ecn/roce_np/enable/<prio>`` and ``.../roce_rp/enable/<prio>`` (mlx5 with
  MLNX_OFED; the sos ``roce`` plugin copies both directories): one file per priority 0-7 holding
  ``1`` (DCQCN notification/reaction point on) or ``0``.
- ``/sys/class/infiniband/<dev>/ports/<n>/hw_counters/<name>`` (mlx5 ``hw_counters``, copied by the
  sos ``roce`` plugin): one decimal counter per file, cumulative since the driver loaded
  (``out_of_buffer``, ``out_of_sequence``, ``packet_seq_err``, ``np_cnp_sent``, ...).
- ``ibv_devinfo -v``: ``active_mtu: 4096 (5)`` per port (no sysfs file carries it).
- ``ethtool -S <if>`` as the sos ``networking`` plugin stores it (``sos_commands/networking/ethtool_-S_<if>``):
  ``NIC statistics:`` then one ``     rx_discards_phy: 0`` line per counter (mlx5 names).
- ``mlnx_qos -i <if>`` (MLNX_OFED/DOCA mlnx-tools; run per RoCE interface, stored as
  ``commands/mlnx_qos_-i_<if>``): trust state, PFC per priority, DSCP-to-priority map
  (format and provenance in :mod:`doctor.parsers.mlnx_qos`).
- ``ethtool -S <if>`` live or in a snapshot (``commands/ethtool_-S_<if>``), the same format.
- ``/proc/net/route``: ``Iface Destination Gateway Flags RefCnt Use Metric Mask ...`` with
  little-endian hex addresses, e.g. ``enp25s0np0\\t0000640A\\t00000000\\t0001\\t0\\t0\\t0\\t0000FFFF...``.
"""

from __future__ import annotations

from doctor import specs
from doctor.facts.net import NetDev, RdmaPort
from doctor.facts.util import COUNTER, read_number
from doctor.lazyre import lazy
from doctor.parsers.ibv_devinfo import parse_ibv_devinfo
from doctor.parsers.mlnx_qos import parse_mlnx_qos
from doctor.record import record
from doctor.sources import SOSREPORT, Source

PRIORITIES = range(8)
MAX_ROUTES = 4096


@record
class RoceEcn:
    """DCQCN switches of one netdev: priority -> enabled, for the notification (NP) and reaction (RP) points.

    Empty maps mean the ``ecn/`` directory is absent (upstream driver without MLNX_OFED's sysfs)."""

    netdev: str
    origin: str
    np: dict[int, bool]
    rp: dict[int, bool]

    @property
    def recorded(self) -> bool:
        return bool(self.np or self.rp)


@record
class RdmaCounters:
    """``hw_counters`` of one RDMA port; ``values`` holds only the files that were present and numeric."""

    port: str  # "mlx5_0/1"
    origin: str
    values: dict[str, int]


@record
class EthtoolStats:
    """``ethtool -S`` counters of one interface (from a sosreport)."""

    netdev: str
    origin: str
    values: dict[str, int]


_STAT = lazy(r"^\s+([A-Za-z0-9_.\[\]:-]{1,64}):\s+(\d{1,20})\s*$")
ETHTOOL_PREFIX = "ethtool_-S_"


def parse_ethtool_stats(text: str) -> dict[str, int]:
    """``ethtool -S`` output -> {counter: value}; lines that are not ``name: number`` are skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines()[:20000]:
        m = _STAT.match(line)
        value = read_number(m.group(2), COUNTER) if m else None
        if m and value is not None:
            out[m.group(1)] = value
    return out


def build_ethtool_stats(src: Source, netdevs: list[str]) -> dict[str, EthtoolStats]:
    """``ethtool -S`` of each of ``netdevs`` (run live, read from a snapshot); a sosreport's every interface."""
    names = list(netdevs)
    if src.kind == SOSREPORT:
        for path in src.spec_paths(specs.get("ethtool_stats")):
            name = path.rsplit("/", 1)[-1]
            if name.startswith(ETHTOOL_PREFIX) and specs.valid_netdev(name[len(ETHTOOL_PREFIX):]):
                names.append(name[len(ETHTOOL_PREFIX):])
    out = {}
    for netdev in dict.fromkeys(names):
        cmd = src.netdev_command("ethtool_stats", netdev)
        if cmd.text is not None:
            out[netdev] = EthtoolStats(netdev, cmd.where, parse_ethtool_stats(cmd.text[:1 << 20]))
    return out


@record
class RoceQos:
    """``mlnx_qos -i`` of one interface: trust state, PFC per priority, DSCP map; ``missing`` says why
    it is not known (not installed, not recorded) and then the rest is empty."""

    netdev: str
    origin: str
    trust: str | None  # "dscp" or "pcp"
    pfc: dict[int, bool]
    dscp2prio: dict[int, int]
    missing: str | None = None

    def priority_of_dscp(self, dscp: int) -> int:
        """The priority DSCP-trusted packets with ``dscp`` land in (the default map, DSCP >> 3, when unprinted)."""
        return self.dscp2prio.get(dscp, dscp >> 3)

    @property
    def pfc_vector(self) -> tuple[int, ...] | None:
        """PFC enable bits for priorities 0-7, as ``mlnx_qos --pfc`` takes them; None unless all are known."""
        return tuple(int(self.pfc[p]) for p in PRIORITIES) if all(p in self.pfc for p in PRIORITIES) else None


def build_qos(src: Source, netdevs: list[str]) -> dict[str, RoceQos]:
    out = {}
    for netdev in netdevs:
        cmd = src.netdev_command("mlnx_qos", netdev)
        if cmd.text is None:
            out[netdev] = RoceQos(netdev, cmd.where, None, {}, {}, cmd.reason or f"{cmd.where} not recorded")
            continue
        rep = parse_mlnx_qos(cmd.text)
        missing = None if rep.trust or rep.pfc else f"{cmd.where} shows no trust state or PFC table"
        out[netdev] = RoceQos(netdev, cmd.where, rep.trust, rep.pfc, rep.dscp2prio, missing)
    return out


@record
class ActiveMtu:
    """``active_mtu`` of each RDMA port from ``ibv_devinfo -v`` (``origin`` names the command output)."""

    by_port: dict[str, int]  # "mlx5_0/1" -> 4096
    origin: str
    missing: str | None  # why it is not known (None when recorded)


@record
class Route:
    iface: str
    destination: str  # dotted quad
    mask: str
    gateway: str

    @property
    def connected(self) -> bool:
        """A directly connected subnet (no gateway, not the default route, not a host route)."""
        return self.gateway == "0.0.0.0" and self.mask not in ("0.0.0.0", "255.255.255.255")


def _bits(src: Source, path: str) -> dict[int, bool]:
    out: dict[int, bool] = {}
    for prio in PRIORITIES:
        value = src.read_line(f"{path}/{prio}")
        if value in ("0", "1"):
            out[prio] = value == "1"
    return out


def build_ecn(src: Source, netdevs: tuple[NetDev, ...]) -> dict[str, RoceEcn]:
    out = {}
    for nd in netdevs:
        base = f"sys/class/net/{nd.name}/ecn"
        out[nd.name] = RoceEcn(nd.name, base, _bits(src, f"{base}/roce_np/enable"), _bits(src, f"{base}/roce_rp/enable"))
    return out


def build_counters(src: Source, ports: tuple[RdmaPort, ...]) -> dict[str, RdmaCounters]:
    out = {}
    for port in ports:
        if not port.origin.startswith("sys/"):
            continue  # ports read from ibv_devinfo have no sysfs directory
        base = f"{port.origin}/hw_counters"
        values = {}
        for name in src.listdir(base):
            text = src.read_line(f"{base}/{name}")
            value = read_number(text, COUNTER) if text is not None and text.isascii() else None
            if value is not None:
                values[name] = value
        out[port.name] = RdmaCounters(port.name, base, values)
    return out


def build_active_mtu(src: Source) -> ActiveMtu:
    out = src.command("ibv_devinfo")
    if not out.text:
        return ActiveMtu({}, out.where, out.reason or f"{out.where} not recorded")
    ports = {f"{p.device}/{p.port}": p.active_mtu for p in parse_ibv_devinfo(out.text) if p.active_mtu}
    return ActiveMtu(ports, out.where, None if ports else f"{out.where} lists no active_mtu")


def _quad(hexle: str) -> str | None:
    if len(hexle) != 8:
        return None
    try:
        raw = bytes.fromhex(hexle)
    except ValueError:
        return None
    return ".".join(str(b) for b in reversed(raw))


def build_routes(src: Source) -> tuple[Route, ...] | None:
    """Routes of ``/proc/net/route``; None when the file is not recorded."""
    text = src.read_text("proc/net/route", cap=1 << 20)
    if text is None:
        return None
    out = []
    for line in src.capped(text.splitlines()[1:], MAX_ROUTES, "proc/net/route", "routes"):
        cols = line.split()
        if len(cols) < 8:
            continue
        dest, gw, mask = _quad(cols[1]), _quad(cols[2]), _quad(cols[7])
        if dest and gw and mask:
            out.append(Route(cols[0], dest, mask, gw))
    return tuple(out)
