"""Tests for doctor.parsers.ibv_devinfo.

Real-format sources: rdma-core ``libibverbs/examples/devinfo.c`` output as quoted in the
linux-rdma thread "[PATCH v7] libibverbs: display gid type in ibv_devinfo" (bnxt_re), a
ConnectX-4 Lx RoCE ``ibv_devinfo -v`` from a public blog (v1 full hex, v2 compressed IPv6),
an old rdma-core mlx5 dump without GID types, and the mlx4 InfiniBand dual-port layout.
"""

from __future__ import annotations

import pytest

from doctor.parsers.ibv_devinfo import IbvGid, IbvPort, parse_ibv_devinfo

# Module docstring sample.
DOC_SAMPLE = (
    "hca_id:\tmlx5_0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tphys_port_cnt:\t\t\t1\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tactive_mtu:\t\t4096 (5)\n"
    "\t\t\tlink_layer:\t\tEthernet\n"
    "\t\t\tactive_width:\t\t4X (2)\n"
    "\t\t\tactive_speed:\t\t25.0 Gbps (32)\n"
    "\t\t\tphys_state:\t\tLINK_UP (5)\n"
    "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:a4ed:ccff:fe8b:1994, RoCE v1\n"
    "\t\t\tGID[  1]:\t\tfe80::a4ed:ccff:fe8b:1994, RoCE v2\n"
    "\t\t\tGID[  3]:\t\t::ffff:10.152.0.12, RoCE v2\n"
)

# Space-indented (as pasted in blogs / issues), ConnectX-4 Lx, rdma-core >= 29.
CX4_SPACES = """\
hca_id: mlx5_1
        transport:                      InfiniBand (0)
        fw_ver:                         14.32.1010
        vendor_id:                      0x02c9
        phys_port_cnt:                  1
        max_mr_size:                    0xffffffffffffffff
        device_cap_flags:               0x21361c36
                                        BAD_PKEY_CNTR
                                        PORT_ACTIVE_EVENT
                port:   1
                        state:                  PORT_ACTIVE (4)
                        max_mtu:                4096 (5)
                        active_mtu:             1024 (3)
                        sm_lid:                 0
                        port_lid:               0
                        port_lmc:               0x00
                        link_layer:             Ethernet
                        max_msg_sz:             0x40000000
                        max_vl_num:             invalid value (0)
                        gid_tbl_len:            256
                        active_width:           4X (2)
                        active_speed:           25.0 Gbps (32)
                        phys_state:             LINK_UP (5)
                        GID[  0]:               fe80:0000:0000:0000:ba59:9fff:fe37:8268, RoCE v1
                        GID[  1]:               fe80::ba59:9fff:fe37:8268, RoCE v2
                        GID[  2]:               0000:0000:0000:0000:0000:ffff:c0a8:010b, RoCE v1
                        GID[  3]:               ::ffff:192.168.1.11, RoCE v2
"""

# Older rdma-core: no GID type; bnxt_re style "IB/RoCE v1" from the patch thread.
OLD_AND_BNXT = """\
hca_id:\tmlx5_3
\ttransport:\t\t\tInfiniBand (0)
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tactive_mtu:\t\t1024 (3)
\t\t\tlink_layer:\t\tEthernet
\t\t\tactive_width:\t\t1X (1)
\t\t\tactive_speed:\t\t10.0 Gbps (4)
\t\t\tphys_state:\t\tLINK_UP (5)
\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0ac0:ebff:fe3b:353c
\t\t\tGID[  1]:\t\tfe80:0000:0000:0000:0ac0:ebff:fe3b:353c
\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:c0a8:f238

hca_id:\tbnxt_re2
\ttransport:\t\t\tInfiniBand (0)
\t\tport:\t1
\t\t\tphys_state:\t\tLINK_UP (5)
\t\t\tGID[  0]:\t\tfe80::b226:28ff:fed3:b0f0, IB/RoCE v1
\t\t\tGID[  3]:\t\t::ffff:192.170.1.101, RoCE v2
"""

# Dual-port InfiniBand HCA (mlx4), non-verbose `ibv_devinfo`.
IB_DUAL = """\
hca_id:\tmlx4_1
\ttransport:\t\t\tInfiniBand (0)
\tphys_port_cnt:\t\t\t2
\tDevice ports:
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tactive_mtu:\t\t4096 (5)
\t\t\tlink_layer:\t\tInfiniBand

\t\tport:\t2
\t\t\tstate:\t\t\tPORT_DOWN (1)
\t\t\tactive_mtu:\t\t4096 (5)
\t\t\tlink_layer:\t\tInfiniBand
"""


def test_doc_sample() -> None:
    assert parse_ibv_devinfo(DOC_SAMPLE) == (
        IbvPort(
            device="mlx5_0",
            port=1,
            state="PORT_ACTIVE",
            state_num=4,
            phys_state="LINK_UP",
            link_layer="Ethernet",
            active_mtu=4096,
            active_speed="25.0 Gbps",
            gids=(
                IbvGid(0, "fe80:0000:0000:0000:a4ed:ccff:fe8b:1994", "RoCE v1"),
                IbvGid(1, "fe80::a4ed:ccff:fe8b:1994", "RoCE v2"),
                IbvGid(3, "::ffff:10.152.0.12", "RoCE v2"),
            ),
        ),
    )


def test_space_indented_cx4() -> None:
    (p,) = parse_ibv_devinfo(CX4_SPACES)
    assert (p.device, p.port, p.state_num, p.active_mtu) == ("mlx5_1", 1, 4, 1024)
    assert [g.index for g in p.gids] == [0, 1, 2, 3]
    assert p.gids[3] == IbvGid(3, "::ffff:192.168.1.11", "RoCE v2")
    assert p.gids[2].type == "RoCE v1"


def test_old_without_types_and_bnxt() -> None:
    a, b = parse_ibv_devinfo(OLD_AND_BNXT)
    assert a.device == "mlx5_3" and all(g.type is None for g in a.gids) and len(a.gids) == 3
    assert a.active_speed == "10.0 Gbps"
    assert b.device == "bnxt_re2" and b.state is None and b.state_num is None
    assert b.gids == (
        IbvGid(0, "fe80::b226:28ff:fed3:b0f0", "IB/RoCE v1"),
        IbvGid(3, "::ffff:192.170.1.101", "RoCE v2"),
    )


def test_ib_dual_port() -> None:
    p1, p2 = parse_ibv_devinfo(IB_DUAL)
    assert (p1.port, p1.state, p1.link_layer, p1.gids) == (1, "PORT_ACTIVE", "InfiniBand", ())
    assert (p2.port, p2.state, p2.state_num, p2.phys_state) == (2, "PORT_DOWN", 1, None)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\xff",
        "No IB devices found\n",
        "Failed to get IB devices list: Function not implemented\n",
        "\t\tport:\t1\n\t\t\tstate: PORT_ACTIVE (4)\n",
    ],
)
def test_garbage(text: str) -> None:
    assert parse_ibv_devinfo(text) == ()


def test_truncated_keeps_partial() -> None:
    cut = DOC_SAMPLE[: DOC_SAMPLE.index("link_layer")]
    (p,) = parse_ibv_devinfo(cut)
    assert p.state == "PORT_ACTIVE" and p.link_layer is None and p.gids == ()
