"""NCCL's own selection rules, reproduced: RoCE GID index, ``NCCL_IB_HCA`` and ``NCCL_SOCKET_IFNAME`` lists,
the RoCE ports NCCL may use and its traffic class.

GID selection follows ``ncclIbGetGidIndex``/``ncclUpdateGidIndex`` in NCCL's ``net_ib`` (docs/checks.md#rdma-gid-index):
InfiniBand uses index 0 (or a routable-FLID index); on RoCE, with ``NCCL_IB_GID_INDEX`` unset, the
pick starts at 0 and candidate *i* replaces it when

* its address family differs from the current pick's and equals ``NCCL_IB_ADDR_FAMILY`` (default
  AF_INET; ``::ffff:`` GIDs are AF_INET) within ``NCCL_IB_ADDR_RANGE``; or
* it is valid (configured, not ``fe80::/64``), of the wanted family and range, of RoCE version
  ``NCCL_IB_ROCE_VERSION_NUM`` (default 2), and the current pick's version differs or it is invalid.

An unreadable ``gid_attrs/types/<i>`` (an empty slot returns EINVAL) counts as version -1, as in NCCL.
"""

from __future__ import annotations

import ipaddress

from doctor.derived.net import data_nics
from doctor.derived.procs import EnvSetting, env_value
from doctor.facts import Facts, Gid, NetDev, RdmaPort
from doctor.reads import Reads
from doctor.record import record

#: the variables whose values say which RDMA devices and traffic class NCCL uses
READS = Reads(env=("NCCL_IB_HCA", "NCCL_IB_TC"))

AF_INET, AF_INET6 = "AF_INET", "AF_INET6"
DEFAULT_ROCE_VERSION = 2


@record
class GidChoice:
    """The index NCCL uses on one port, the entry there (None: empty slot) and whether it was forced."""

    index: int
    gid: Gid | None
    forced: bool

    @property
    def describe(self) -> str:
        return describe_gid(self.index, self.gid)


def _raw(gid: Gid | None) -> bytes:
    if gid is None:
        return bytes(16)
    try:
        raw = bytes.fromhex(gid.gid.replace(":", ""))
    except ValueError:
        return bytes(16)
    return raw if len(raw) == 16 else bytes(16)


def family(gid: Gid | None) -> str:
    """NCCL's ``getGidAddrFamily``: IPv4-mapped (or IPv4-mapped multicast) is AF_INET, the rest AF_INET6."""
    raw = _raw(gid)
    mapped = raw[:10] == bytes(10) and raw[10:12] == b"\xff\xff"
    mapped_mc = raw[:4] == b"\xff\x0e\x00\x00" and raw[4:10] == bytes(6) and raw[10:12] == b"\xff\xff"
    return AF_INET if mapped or mapped_mc else AF_INET6


def configured(gid: Gid | None) -> bool:
    raw = _raw(gid)
    trailer = raw[4:] != bytes(12)
    if raw[:4] == bytes(4) and not trailer:
        return False
    return not (raw[:4] == b"\xfe\x80\x00\x00" and not trailer)


def link_local(gid: Gid | None) -> bool:
    raw = _raw(gid)
    return raw[:4] == b"\xfe\x80\x00\x00" and raw[4:8] == bytes(4)


def valid(gid: Gid | None) -> bool:
    """Configured and not link-local (NCCL's ``validGid``)."""
    return configured(gid) and not link_local(gid)


def version(gid: Gid | None) -> int:
    """RoCE version from ``gid_attrs/types``; -1 when the type is missing (NCCL's default)."""
    if gid is None or gid.type is None:
        return -1
    text = gid.type.strip()
    if text.startswith(("IB/RoCE v1", "RoCE v1")):
        return 1
    if text.startswith("RoCE v2"):
        return 2
    return -1


def parse_range(text: str | None, fam: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """``NCCL_IB_ADDR_RANGE`` (``10.0.0.0/8``); None when unset or unparseable (then everything matches)."""
    if not text:
        return None
    try:
        net = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None
    if (fam == AF_INET) != (net.version == 4):
        return None
    return net


def in_range(gid: Gid | None, fam: str, net: ipaddress.IPv4Network | ipaddress.IPv6Network | None) -> bool:
    if net is None:
        return True
    raw = _raw(gid)
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address
    addr = ipaddress.IPv4Address(raw[12:]) if fam == AF_INET else ipaddress.IPv6Address(raw)
    return addr in net


@record
class NcclGidEnv:
    """The NCCL variables that steer GID choice (None: unset)."""

    gid_index: int | None = None
    addr_family: str = AF_INET
    addr_range: str | None = None
    roce_version: int = DEFAULT_ROCE_VERSION

    @classmethod
    def from_values(cls, gid_index: str | None, addr_family: str | None, addr_range: str | None,
                    roce_version: str | None) -> NcclGidEnv:
        idx = None
        if gid_index is not None:
            try:
                idx = int(gid_index.strip())
            except ValueError:
                idx = None
        fam = AF_INET6 if (addr_family or "").strip().upper() == AF_INET6 else AF_INET
        try:
            ver = int((roce_version or "").strip()) if roce_version else DEFAULT_ROCE_VERSION
        except ValueError:
            ver = DEFAULT_ROCE_VERSION
        return cls(idx if idx is not None and idx >= 0 else None, fam, addr_range, ver)


def gid_table(port: RdmaPort) -> dict[int, Gid]:
    return {g.index: g for g in port.gids}


def auto_gid_index(port: RdmaPort, env: NcclGidEnv) -> int:
    """The index NCCL picks on a RoCE port with ``NCCL_IB_GID_INDEX`` unset (0 when nothing better)."""
    table = gid_table(port)
    net = parse_range(env.addr_range, env.addr_family)
    pick = 0
    top = max(table) if table else 0
    for cand_idx in range(1, top + 1):
        cur, cand = table.get(pick), table.get(cand_idx)
        cur_fam, cand_fam = family(cur), family(cand)
        match = in_range(cand, env.addr_family, net)
        if cand_fam != cur_fam and cand_fam == env.addr_family and match:
            pick = cand_idx
            continue
        if cand_fam != env.addr_family or not valid(cand) or not match:
            continue
        if (version(cur) != version(cand) or not valid(cur)) and version(cand) == env.roce_version:
            pick = cand_idx
    return pick


def choose_gid(port: RdmaPort, env: NcclGidEnv) -> GidChoice:
    """NCCL's choice on ``port`` (RoCE only; InfiniBand always uses 0 or a routable-FLID index)."""
    table = gid_table(port)
    if env.gid_index is not None:
        return GidChoice(env.gid_index, table.get(env.gid_index), True)
    idx = auto_gid_index(port, env)
    return GidChoice(idx, table.get(idx), False)


def describe_gid(index: int, gid: Gid | None) -> str:
    """``"3 (::ffff:10.152.0.12, RoCE v2, eth0)"``; ``"5 (empty)"``."""
    if gid is None or not configured(gid):
        return f"{index} (empty)"
    addr = gid.ipv4 or str(ipaddress.IPv6Address(_raw(gid)))
    return f"{index} ({addr}, {gid.type or 'type unreadable'}, {gid.ndev or 'no netdev'})"


# --- NCCL_IB_HCA / NCCL_SOCKET_IFNAME lists --------------------------------------------------------------


@record
class NameList:
    """A parsed NCCL interface list: ``^`` excludes, ``=`` demands exact names, ``name:port`` entries."""

    raw: str
    exclude: bool
    exact: bool
    entries: tuple[tuple[str, int | None], ...]

    def _hit(self, name: str, port: int | None) -> bool:
        for prefix, want_port in self.entries:
            ok = name == prefix if self.exact else name.startswith(prefix)
            if ok and (want_port is None or port is None or want_port == port):
                return True
        return False

    def matches(self, name: str, port: int | None = None) -> bool:
        """Whether NCCL would use ``name`` (and ``port``) under this list."""
        return self._hit(name, port) != self.exclude

    def loose_extra(self, names: list[str]) -> dict[str, list[str]]:
        """Entries (without ``=``) that also match other names than themselves: entry -> extra names."""
        if self.exact or self.exclude:
            return {}
        out: dict[str, list[str]] = {}
        for prefix, _ in self.entries:
            extra = sorted(n for n in names if n != prefix and n.startswith(prefix))
            if extra and prefix in names:
                out[prefix] = extra
        return out


def parse_list(text: str) -> NameList:
    """Parse ``NCCL_IB_HCA``/``NCCL_SOCKET_IFNAME`` (``^=mlx5_0:1,mlx5_1``; NCCL reads ``^`` before ``=``)."""
    raw = text
    body = text.strip()
    exclude = body.startswith("^")
    if exclude:
        body = body[1:]
    exact = body.startswith("=")
    if exact:
        body = body[1:]
    entries: list[tuple[str, int | None]] = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, port = item.partition(":")
        entries.append((name, int(port) if port.isdigit() else None))
    return NameList(raw, exclude, exact, tuple(entries))


# --- the RoCE ports NCCL uses (rdma.lossless, net.drops, rdma.mtu, net.multirail) ---------------


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
