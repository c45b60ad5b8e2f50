"""Network interfaces and RDMA ports (with their GID tables) from sysfs or ``ibv_devinfo -v``."""

from __future__ import annotations

from doctor.facts.util import BDF, parse_int
from doctor.lazyre import lazy
from doctor.record import record
from doctor.sources import Source

ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
_RATE = lazy(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec")


@record
class NetDev:
    """One network interface. ``speed_mbps`` is None when unknown or the link is down (sysfs -1)."""

    name: str
    origin: str
    pci_address: str | None
    speed_mbps: int | None
    mtu: int | None
    operstate: str | None
    carrier: bool | None
    virtual: bool
    mac: str | None = None
    #: kernel interface index (``getifaddrs`` lists interfaces in this order; NCCL takes the first)
    ifindex: int | None = None


@record
class Gid:
    index: int
    gid: str
    type: str | None  # "IB/RoCE v1", "RoCE v2", or None when the type file is missing/unreadable
    ndev: str | None

    @property
    def is_zero(self) -> bool:
        return self.gid.replace(":", "").strip("0") == ""

    @property
    def is_link_local(self) -> bool:
        return self.gid.lower().startswith("fe80:")

    @property
    def is_ipv4(self) -> bool:
        return self.gid.lower().startswith("0000:0000:0000:0000:0000:ffff:")

    @property
    def roce_version(self) -> int | None:
        if self.type is None:
            return None
        return 2 if "v2" in self.type.lower() else 1

    @property
    def ipv4(self) -> str | None:
        if not self.is_ipv4:
            return None
        tail = self.gid.lower().split(":")[-2:]
        try:
            raw = bytes.fromhex("".join(tail))
        except ValueError:
            return None
        return ".".join(str(b) for b in raw)


@record
class RdmaPort:
    device: str
    port: int
    origin: str
    link_layer: str | None
    state: str | None  # "ACTIVE", "DOWN", ...
    phys_state: str | None
    rate_gbps: float | None
    rate_text: str | None
    pci_address: str | None
    gids: tuple[Gid, ...]
    gids_missing: str | None = None

    @property
    def name(self) -> str:
        return f"{self.device}/{self.port}"

    @property
    def active(self) -> bool:
        return (self.state or "").upper() in ("ACTIVE", "PORT_ACTIVE")

    @property
    def netdevs(self) -> tuple[str, ...]:
        return tuple(sorted({g.ndev for g in self.gids if g.ndev}))


def _state_word(text: str | None) -> str | None:
    """``"4: ACTIVE"`` -> ``"ACTIVE"``; ``"PORT_ACTIVE (4)"`` -> ``"ACTIVE"``."""
    if not text:
        return None
    word = text.split(":", 1)[1] if ":" in text else text
    word = word.split("(")[0].strip().upper()
    return word.removeprefix("PORT_") or None


def _pci_of(src: Source, link: str) -> str | None:
    real = src.realpath(link)
    if not real:
        return None
    comps = [c for c in real.split("/") if BDF.match(c)]
    return comps[-1] if comps else None


def build_netdevs(src: Source) -> tuple[NetDev, ...]:
    out = []
    for name in src.listdir("sys/class/net"):
        base = f"sys/class/net/{name}"
        real = src.realpath(base) or ""
        pci = _pci_of(src, f"{base}/device")
        speed = parse_int(src.read_line(f"{base}/speed"))
        carrier = src.read_line(f"{base}/carrier")
        out.append(NetDev(
            name=name, origin=base, pci_address=pci,
            speed_mbps=speed if speed is not None and speed > 0 else None,
            mtu=parse_int(src.read_line(f"{base}/mtu")),
            operstate=src.read_line(f"{base}/operstate"),
            carrier=None if carrier is None else carrier == "1",
            virtual="/virtual/" in f"/{real}/" or pci is None,
            mac=src.read_line(f"{base}/address"),
            ifindex=parse_int(src.read_line(f"{base}/ifindex")),
        ))
    return tuple(out)


def _sysfs_ports(src: Source) -> list[RdmaPort]:
    ports = []
    for dev in src.listdir("sys/class/infiniband"):
        base = f"sys/class/infiniband/{dev}"
        pci = _pci_of(src, f"{base}/device")
        for port in src.listdir(f"{base}/ports"):
            if not port.isdigit():
                continue
            pbase = f"{base}/ports/{port}"
            gids = []
            # up to 256 GIDs a port, three files each: each folder resolved and listed once, read by name
            table, types, ndevs = (src.folder(f"{pbase}/{sub}") for sub in ("gids", "gid_attrs/types",
                                                                                 "gid_attrs/ndevs"))
            names = table.kinds
            for idx in sorted((n for n in names if n.isdigit()), key=int):
                gid = table.read_line(idx)
                if gid is None:
                    continue
                gids.append(Gid(int(idx), gid.lower(), types.read_line(idx), ndevs.read_line(idx)))
            rate = src.read_line(f"{pbase}/rate")
            match = _RATE.match(rate or "")
            ports.append(RdmaPort(
                device=dev, port=int(port), origin=pbase,
                link_layer=src.read_line(f"{pbase}/link_layer"),
                state=_state_word(src.read_line(f"{pbase}/state")),
                phys_state=_state_word(src.read_line(f"{pbase}/phys_state")),
                rate_gbps=float(match.group(1)) if match else None, rate_text=rate,
                pci_address=pci, gids=tuple(gids),
                gids_missing=None if names else f"{pbase}/gids not present",
            ))
    return ports


def build_rdma(src: Source) -> tuple[RdmaPort, ...]:
    """RDMA ports from sysfs; from ``ibv_devinfo -v`` when only a sosreport has them."""
    ports = _sysfs_ports(src)
    if ports:
        return tuple(ports)
    out = src.command("ibv_devinfo")
    if not out.text:
        return ()
    from doctor.parsers.ibv_devinfo import parse_ibv_devinfo

    result = []
    for p in parse_ibv_devinfo(out.text):
        gids = tuple(Gid(g.index, g.gid.lower(), g.type, None) for g in p.gids)
        result.append(RdmaPort(
            device=p.device, port=p.port, origin=out.where, link_layer=p.link_layer,
            state=_state_word(p.state), phys_state=_state_word(p.phys_state), rate_gbps=None,
            rate_text=p.active_speed, pci_address=None, gids=gids,
            gids_missing=None if gids else f"{out.where} lists no GID for {p.device}/{p.port}",
        ))
    return tuple(result)
