"""Parser for ``mlnx_qos -i <if>`` (NVIDIA/Mellanox mlnx-tools, shipped with MLNX_OFED / DOCA).

Real sample (ConnectX, trust dscp, PFC on priority 3), as printed by ``mlnx_qos -i eth4 --trust dscp``
in att/netarbiter ``nvmf/OUTPUTSAMPLE.setup-nic-lossless-layer3.sh.md`` (the query form prints
the same report)::

    DCBX mode: OS controlled
    Priority trust state: dscp
    dscp2prio mapping:
            prio:0 dscp:07,06,05,04,03,02,01,00,
            ...
            prio:3 dscp:31,30,29,28,27,26,25,24,
            ...
    Cable len: 7
    PFC configuration:
            priority    0   1   2   3   4   5   6   7
            enabled     0   0   0   1   0   0   0   0
    tc: 0 ratelimit: unlimited, tsa: vendor
             priority:  1

With ``trust pcp`` the ``dscp2prio mapping`` block is not printed; newer versions add a ``buffer``
row under ``enabled`` (ignored). Anything unrecognised is skipped; a PFC row that does not have one
0/1 per listed priority 0-7 is left out rather than guessed.
"""

from __future__ import annotations

import re

from doctor.lazyre import lazy
from doctor.record import record

__all__ = ["QosReport", "parse_mlnx_qos"]

_TRUST = lazy(r"^\s*Priority trust (?:state|mode):\s*(\w{1,16})\s*$", re.IGNORECASE)
_DSCP = lazy(r"^\s*prio:\s*([0-7])\s+dscp:\s*([0-9,\s]{0,400})$")
_ROW = lazy(r"^\s*(priority|enabled)((?:\s+\d{1,3})+)\s*$")


@record
class QosReport:
    trust: str | None  # "dscp" or "pcp" (lower case) when printed
    pfc: dict[int, bool]  # priority -> PFC enabled (empty when the PFC rows are absent or malformed)
    dscp2prio: dict[int, int]  # DSCP -> priority, only when the mapping block is printed


def parse_mlnx_qos(text: str) -> QosReport:
    trust: str | None = None
    dscp2prio: dict[int, int] = {}
    prios: list[int] | None = None
    pfc: dict[int, bool] = {}
    in_pfc = False
    for line in text.splitlines()[:2000]:
        line = line[:500]
        if (m := _TRUST.match(line)) and trust is None:
            trust = m.group(1).lower()
            continue
        if m := _DSCP.match(line):
            prio = int(m.group(1))
            for tok in m.group(2).replace(" ", "").split(","):
                if tok.isdigit() and int(tok) <= 63:
                    dscp2prio.setdefault(int(tok), prio)
            continue
        if line.strip().lower().startswith("pfc configuration"):
            in_pfc, prios = True, None
            continue
        if in_pfc and (m := _ROW.match(line)):
            values = [int(v) for v in m.group(2).split()]
            if m.group(1) == "priority":
                prios = values if sorted(values) == list(range(8)) else None
            elif prios is not None and not pfc and len(values) == len(prios) and set(values) <= {0, 1}:
                pfc = {p: v == 1 for p, v in zip(prios, values)}
            continue
        if in_pfc and line.strip() and not line[:1].isspace():
            in_pfc = False  # the next top-level block ("tc: 0 ...")
    return QosReport(trust, pfc, dscp2prio)
