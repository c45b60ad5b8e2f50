"""Parser for ``ibv_devinfo -v`` (rdma-core / libibverbs-utils).

Sample (ConnectX, RoCE; rdma-core >= 29 prints the GID type, v2 GIDs in IPv6 notation)::

    hca_id:\tmlx5_0
    \ttransport:\t\t\tInfiniBand (0)
    \tphys_port_cnt:\t\t\t1
    \t\tport:\t1
    \t\t\tstate:\t\t\tPORT_ACTIVE (4)
    \t\t\tactive_mtu:\t\t4096 (5)
    \t\t\tlink_layer:\t\tEthernet
    \t\t\tactive_width:\t\t4X (2)
    \t\t\tactive_speed:\t\t25.0 Gbps (32)
    \t\t\tphys_state:\t\tLINK_UP (5)
    \t\t\tGID[  0]:\t\tfe80:0000:0000:0000:a4ed:ccff:fe8b:1994, RoCE v1
    \t\t\tGID[  1]:\t\tfe80::a4ed:ccff:fe8b:1994, RoCE v2
    \t\t\tGID[  3]:\t\t::ffff:10.152.0.12, RoCE v2

Older rdma-core prints no type (``GID[  0]:\t\tfe80:0000:...``); ``type`` is then ``None``.
GID strings are kept exactly as printed (full hex for v1, compressed IPv6 for v2).
"""

from __future__ import annotations

from doctor.lazyre import lazy
from doctor.record import record

__all__ = ["IbvGid", "IbvPort", "parse_ibv_devinfo"]


@record
class IbvGid:
    """One populated GID table entry."""

    index: int
    gid: str
    type: str | None


@record
class IbvPort:
    """One port of one RDMA device."""

    device: str
    port: int
    state: str | None
    state_num: int | None
    phys_state: str | None
    link_layer: str | None
    active_mtu: int | None
    active_speed: str | None
    gids: tuple[IbvGid, ...]


_HCA_RE = lazy(r"^\s*hca_id:\s*(?P<dev>\S+)")
_PORT_RE = lazy(r"^\s*port:\s*(?P<port>[0-9]+)\s*$")
_GID_RE = lazy(r"^\s*GID\[\s*(?P<idx>[0-9]+)\]:\s*(?P<gid>[0-9A-Fa-f:.]+)\s*(?:,\s*(?P<type>.*?))?\s*$")
_KV_RE = lazy(r"^\s*(?P<key>[a-z_0-9]+):\s*(?P<value>.*?)\s*$")
_ENUM_RE = lazy(r"^(?P<name>.*?)\s*\((?P<num>-?[0-9]+)\)$")


def _enum(value: str) -> tuple[str | None, int | None]:
    """``"PORT_ACTIVE (4)"`` -> ``("PORT_ACTIVE", 4)``."""
    v = value.strip()
    if not v:
        return None, None
    m = _ENUM_RE.match(v)
    if m is None:
        return v, None
    return (m.group("name").strip() or None), int(m.group("num"))


class _PortBuilder:
    def __init__(self, device: str, port: int) -> None:
        self.device = device
        self.port = port
        self.fields: dict[str, str] = {}
        self.gids: list[IbvGid] = []

    def build(self) -> IbvPort:
        state, state_num = _enum(self.fields.get("state", ""))
        phys_state, _ = _enum(self.fields.get("phys_state", ""))
        mtu_text, _ = _enum(self.fields.get("active_mtu", ""))
        active_mtu = int(mtu_text) if mtu_text and mtu_text.isascii() and mtu_text.isdigit() else None
        speed, _ = _enum(self.fields.get("active_speed", ""))
        return IbvPort(
            device=self.device,
            port=self.port,
            state=state,
            state_num=state_num,
            phys_state=phys_state,
            link_layer=self.fields.get("link_layer") or None,
            active_mtu=active_mtu,
            active_speed=speed,
            gids=tuple(self.gids),
        )


def parse_ibv_devinfo(text: str) -> tuple[IbvPort, ...]:
    """Parse ``ibv_devinfo [-v]`` text into one :class:`IbvPort` per (device, port). Never raises."""
    ports: list[IbvPort] = []
    if not isinstance(text, str):
        return ()
    device: str | None = None
    current: _PortBuilder | None = None
    for raw in text.splitlines():
        m = _HCA_RE.match(raw)
        if m:
            if current is not None:
                ports.append(current.build())
                current = None
            device = m.group("dev")
            continue
        m = _PORT_RE.match(raw)
        if m and device is not None:
            if current is not None:
                ports.append(current.build())
            current = _PortBuilder(device, int(m.group("port")))
            continue
        if current is None:
            continue
        m = _GID_RE.match(raw)
        if m:
            gtype = (m.group("type") or "").strip() or None
            current.gids.append(IbvGid(index=int(m.group("idx")), gid=m.group("gid"), type=gtype))
            continue
        m = _KV_RE.match(raw)
        if m:
            current.fields.setdefault(m.group("key"), m.group("value"))
    if current is not None:
        ports.append(current.build())
    return tuple(ports)
