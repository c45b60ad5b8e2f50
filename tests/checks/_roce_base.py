"""Overlays for the RoCE check tests on the committed HGX fixtures."""

from __future__ import annotations

from pathlib import Path

from tests.checks._netnuma_base import healthy, real

RAILS = ("enp25s0np0", "enp27s0np0", "enp59s0np0", "enp61s0np0", "enp155s0np0", "enp157s0np0", "enp187s0np0",
         "enp189s0np0")


def ecn(netdev: str, prio: int, np: str | None = "1", rp: str | None = "1", base: Path | None = None) -> dict:
    root = real(f"sys/class/net/{netdev}", base or healthy())
    return {f"{root}/ecn/roce_np/enable/{prio}": np, f"{root}/ecn/roce_rp/enable/{prio}": rp}


def no_ecn(base: Path | None = None) -> dict:
    out: dict = {}
    for nd in RAILS:
        for prio in range(8):
            out.update(ecn(nd, prio, None, None, base))
    return out


def counter(device: str, name: str, value: str | None, base: Path | None = None) -> dict:
    return {f"{real(f'sys/class/infiniband/{device}', base or healthy())}/ports/1/hw_counters/{name}": value}


def route(*rows: tuple[str, str, str, str]) -> dict:
    """``proc/net/route`` from (iface, destination, gateway, mask) dotted quads."""
    def le(quad: str) -> str:
        return "".join(f"{int(x):02X}" for x in reversed(quad.split(".")))
    lines = ["Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"]
    lines += [f"{i}\t{le(d)}\t{le(g)}\t0001\t0\t0\t0\t{le(m)}\t0\t0\t0" for i, d, g, m in rows]
    return {"proc/net/route": "\n".join(lines) + "\n"}


def conf(scope: str, **values: str) -> dict:
    return {f"proc/sys/net/ipv4/conf/{scope}/{k}": v + "\n" for k, v in values.items()}
