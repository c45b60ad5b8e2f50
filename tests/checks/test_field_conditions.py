"""The field reports' conditions (issue 24, item 5): each judged by what it does, with healthy twins."""

from __future__ import annotations

from tests.checks._netnuma_base import UNIT, environ, healthy
from tests.helpers import facts, findings_of

SECOND = "etc/systemd/system/vllm-decode.service"


def _unit(**env: str) -> str:
    text = (healthy() / UNIT).read_text()
    extra = "".join(f"Environment={k}={v}\n" for k, v in env.items())
    return text.replace("Environment=OMP_NUM_THREADS=1\n", "Environment=OMP_NUM_THREADS=1\n" + extra)


def _of(check: str, changes: dict, name: str) -> list:
    return [f for f in findings_of(facts(changes, base=healthy()), check)
            if f.subject_id == name or f.title.startswith(name + "=")]


# --- NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL values NCCL does not parse ---------------------------------

def test_p2p_level_value_nccl_does_not_know_is_ignored_and_said_so() -> None:
    for value in ("PCI", "pix", "NVLINK"):
        found = _of("nccl.transport", environ(NCCL_P2P_LEVEL=value), "NCCL_P2P_LEVEL")
        assert [f.severity for f in found] == ["low"], value
        assert "NCCL ignores it" in found[0].title and "LOC, NVL, PIX, PXB, PHB and SYS" in found[0].detail
        assert found[0].fix.builder  # removing it is a fix bound to the unit or process


def test_p2p_level_known_values_and_old_integers_are_judged_not_called_unknown() -> None:
    for value, want in (("PIX", "low"), ("2", "low"), ("0", "high"), ("9", "low")):
        found = _of("nccl.transport", environ(NCCL_P2P_LEVEL=value), "NCCL_P2P_LEVEL")
        assert [f.severity for f in found] == [want], value
        assert "ignores" not in found[0].title
    assert not _of("nccl.transport", {}, "NCCL_P2P_LEVEL")


def test_gdr_level_unknown_value_is_ignored() -> None:
    found = _of("nccl.transport", environ(NCCL_NET_GDR_LEVEL="GDR"), "NCCL_NET_GDR_LEVEL")
    assert [f.severity for f in found] == ["low"] and "ignores" in found[0].title
    assert not [f for f in _of("nccl.transport", environ(NCCL_NET_GDR_LEVEL="PHB"), "NCCL_NET_GDR_LEVEL")
                if "ignores" in f.title]


# --- NCCL_BUFFSIZE / NCCL_NTHREADS ---------------------------------------------------------------

def test_buffsize_below_default_costs_bandwidth_above_costs_memory() -> None:
    small = _of("runtime.debug_env", environ(NCCL_BUFFSIZE="1048576"), "NCCL_BUFFSIZE")
    assert [f.severity for f in small] == ["low"] and "1 MiB" in small[0].title
    assert small[0].impact.score == 10 and "4 MiB" in small[0].impact.basis
    big = _of("runtime.debug_env", environ(NCCL_BUFFSIZE="0x1000000"), "NCCL_BUFFSIZE")
    assert "16 MiB" in big[0].title and big[0].impact.score < small[0].impact.score
    same = _of("runtime.debug_env", environ(NCCL_BUFFSIZE="4194304"), "NCCL_BUFFSIZE")
    assert "nothing changes" in same[0].title
    bad = _of("runtime.debug_env", environ(NCCL_BUFFSIZE="4M"), "NCCL_BUFFSIZE")
    assert "not a positive byte count" in bad[0].title
    assert not _of("runtime.debug_env", {}, "NCCL_BUFFSIZE")


def test_nthreads_judged_against_nccl_accepted_values() -> None:
    low = _of("runtime.debug_env", environ(NCCL_NTHREADS="128"), "NCCL_NTHREADS")
    assert [f.severity for f in low] == ["low"] and low[0].impact.score == 10
    ignored = _of("runtime.debug_env", environ(NCCL_NTHREADS="1024"), "NCCL_NTHREADS")
    assert "does nothing" in ignored[0].title and ignored[0].impact.score < 10
    assert "nothing changes" in _of("runtime.debug_env", environ(NCCL_NTHREADS="512"), "NCCL_NTHREADS")[0].title
    assert not _of("runtime.debug_env", {}, "NCCL_NTHREADS")


# --- NCCL_IB_ROCE_VERSION_NUM=1 ------------------------------------------------------------------

def test_roce_version_1_is_medium_not_pass() -> None:
    found = findings_of(facts(environ(NCCL_IB_ROCE_VERSION_NUM="1"), base=healthy()), "rdma.gid_index")
    medium = [f for f in found if f.severity == "medium"]
    assert len(medium) == 1 and medium[0].subject_id == "NCCL_IB_ROCE_VERSION_NUM"
    assert "RoCE v1" in medium[0].title and "mlx5_0/1" in medium[0].related
    assert "ECN" in medium[0].detail and medium[0].fix.builder
    assert not any(f.severity == "pass" for f in found)


def test_roce_version_2_explicit_still_passes() -> None:
    found = findings_of(facts(environ(NCCL_IB_ROCE_VERSION_NUM="2"), base=healthy()), "rdma.gid_index")
    assert found and all(f.severity == "pass" for f in found)


# --- the GID index set in two places ----------------------------------------------------------------

def test_gid_index_wrong_in_a_second_unit_is_named_and_fixed() -> None:
    changes = {**environ(NCCL_IB_GID_INDEX="3"), UNIT: _unit(NCCL_IB_GID_INDEX="3"),
               SECOND: _unit(NCCL_IB_GID_INDEX="0")}
    found = findings_of(facts(changes, base=healthy()), "rdma.gid_index")
    high = [f for f in found if f.severity == "high"]
    assert len(high) == 1 and "vllm-decode.service" in high[0].subject and "link-local" in high[0].title
    assert high[0].fix.params.get("unit") == "vllm-decode.service"
    low = [f for f in found if f.severity == "low"]
    assert low and all("vllm-decode" not in f.subject for f in low)


def test_gid_index_wrong_in_two_units_gives_each_its_own_fix() -> None:
    changes = {**environ(NCCL_IB_GID_INDEX="0"), UNIT: _unit(NCCL_IB_GID_INDEX="0"),
               SECOND: _unit(NCCL_IB_GID_INDEX="0")}
    high = [f for f in findings_of(facts(changes, base=healthy()), "rdma.gid_index") if f.severity == "high"]
    assert sorted(f.fix.params.get("unit") for f in high) == ["vllm-decode.service", "vllm.service"]


def test_gid_index_one_unit_keeps_one_finding() -> None:
    changes = {**environ(NCCL_IB_GID_INDEX="0"), UNIT: _unit(NCCL_IB_GID_INDEX="0")}
    high = [f for f in findings_of(facts(changes, base=healthy()), "rdma.gid_index") if f.severity == "high"]
    assert len(high) == 1 and high[0].fix.params.get("unit") == "vllm.service"


# --- CUDA_VISIBLE_DEVICES by index without CUDA_DEVICE_ORDER=PCI_BUS_ID -----------------------------

def _order(changes: dict) -> list:
    return findings_of(facts(changes, base=healthy()), "runtime.device_order")


def _unit_without_order(**env: str) -> str:
    return _unit(**env).replace("Environment=CUDA_DEVICE_ORDER=PCI_BUS_ID\n", "")


def test_visible_devices_by_index_without_bus_order_is_flagged_with_a_unit_fix() -> None:
    changes = {**environ(CUDA_DEVICE_ORDER=None, CUDA_VISIBLE_DEVICES="0,1,2,3"),
               UNIT: _unit_without_order(CUDA_VISIBLE_DEVICES="0,1,2,3")}
    found = _order(changes)
    assert [f.severity for f in found] == ["low"]  # eight identical H100s: the order usually agrees
    assert found[0].fix.params == {"unit": "vllm.service", "what": "cuda-device-order", "unset": [],
                                   "set": {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}}
    assert "FASTEST_FIRST" in found[0].impact.basis


def test_visible_devices_with_bus_order_uuid_or_unset_passes() -> None:
    assert [f.severity for f in _order({})] == ["pass"]
    assert [f.severity for f in _order(environ(CUDA_VISIBLE_DEVICES="0,1"))] == ["pass"]  # order PCI_BUS_ID set
    every = environ(CUDA_DEVICE_ORDER=None, CUDA_VISIBLE_DEVICES="7,6,5,4,3,2,1,0")  # all eight: same GPUs
    assert [f.severity for f in _order({**every, UNIT: _unit_without_order()})] == ["pass"]
    uuid = environ(CUDA_DEVICE_ORDER=None, CUDA_VISIBLE_DEVICES="GPU-5f3c9a1e-0000-0000-0000-000000000000")
    assert [f.severity for f in _order({**uuid, UNIT: _unit_without_order()})] == ["pass"]


def test_visible_devices_on_mixed_gpus_is_medium() -> None:
    from checks.runtime_device_order import _finding
    from doctor.derived.procs import EnvSetting

    s = EnvSetting("CUDA_VISIBLE_DEVICES", "1", (4242,), (), ())
    f = facts(base=healthy())
    assert _finding(f, s, ["NVIDIA GeForce RTX 4090", "NVIDIA RTX A4000"]).severity == "medium"
    assert _finding(f, s, ["NVIDIA H100 80GB HBM3"]).severity == "low"


# --- TCP: window scaling, a fix that never lowers, impacts that can be true -------------------------

SCALING = "proc/sys/net/ipv4/tcp_window_scaling"


def test_window_scaling_off_caps_every_flow_at_64k_window() -> None:
    found = [f for f in findings_of(facts({SCALING: "0\n"}, base=healthy()), "net.socket_buffers")
             if f.subject == "net.ipv4.tcp_window_scaling"]
    assert [f.severity for f in found] == ["low"]  # RDMA carries the data on the healthy node
    assert "2.6 Gb/s" in found[0].title and "RFC1323" in found[0].impact.basis
    assert found[0].fix.params["set"] == {"net.ipv4.tcp_window_scaling": "1"}
    tcp = {SCALING: "0\n", **environ(NCCL_IB_DISABLE="1")}
    assert [f.severity for f in findings_of(facts(tcp, base=healthy()), "net.socket_buffers")
            if f.subject == "net.ipv4.tcp_window_scaling"] == ["high"]
    assert not [f for f in findings_of(facts({SCALING: "1\n"}, base=healthy()), "net.socket_buffers")
                if f.subject == "net.ipv4.tcp_window_scaling"]


def test_socket_buffer_fix_never_lowers_healthy_tcp_maxima() -> None:
    big = {"proc/sys/net/ipv4/tcp_rmem": "4096\t131072\t2147483647\n",
           "proc/sys/net/ipv4/tcp_wmem": "4096\t16384\t2147483647\n",
           "proc/sys/net/core/rmem_max": "212992\n", "proc/sys/net/core/wmem_max": "212992\n",
           **environ(NCCL_SOCKET_RCVBUF="8388608")}
    (f,) = findings_of(facts(big, base=healthy()), "net.socket_buffers")
    wanted = f.fix.params["set"]
    assert "net.ipv4.tcp_rmem" not in wanted and "net.ipv4.tcp_wmem" not in wanted
    assert int(wanted["net.core.rmem_max"]) >= 8388608


def test_socket_buffer_impact_never_exceeds_the_link_rate() -> None:
    from tests.checks.test_net_socket_buffers import _ten_gig_node

    # 400 kB at 0.2 ms would be 16 Gb/s: more than the 10 GbE link carries, so no "capped near 16 Gb/s"
    node = {**_ten_gig_node(), "proc/sys/net/ipv4/tcp_rmem": "4096\t87380\t400000\n"}
    (f,) = findings_of(facts(node, base=healthy()), "net.socket_buffers")
    assert "16 Gb/s" not in f.impact.text and "reaches 10 Gb/s only while the RTT stays under 0.32 ms" in f.impact.text
    # below the link rate the cap is stated
    low = {**_ten_gig_node(), "proc/sys/net/ipv4/tcp_rmem": "4096\t87380\t131072\n"}
    (g,) = findings_of(facts(low, base=healthy()), "net.socket_buffers")
    assert "capped near 5 Gb/s" in g.impact.text


def test_forced_gid_text_stays_true_on_a_node_that_is_serving() -> None:
    high = [f for f in findings_of(facts(environ(NCCL_IB_GID_INDEX="0"), base=healthy()), "rdma.gid_index")
            if f.severity == "high"]
    assert "Connections fail or hang" not in high[0].detail
    assert "another subnet" in high[0].detail and "A server runs now" in high[0].detail
    idle = {UNIT: _unit(NCCL_IB_GID_INDEX="0"), "proc/4242/cmdline": b"/usr/bin/sleep\x00infinity\x00"}
    quiet = [f for f in findings_of(facts(idle, base=healthy()), "rdma.gid_index") if f.severity == "high"]
    assert quiet and "A server runs now" not in quiet[0].detail


# --- which interface NCCL's bootstrap, Gloo and vLLM use ---------------------------------------------

def _iface(changes: dict, name: str) -> list:
    phrases = ("matches no interface", "other nodes cannot reach", "on NUMA node")
    return [f for f in findings_of(facts(changes, base=healthy()), "nccl.transport")
            if f.subject_id == name and any(p in f.title for p in phrases)]


def test_interface_settings_that_match_nothing_are_high() -> None:
    for name, value in (("NCCL_SOCKET_IFNAME", "=eth0"), ("GLOO_SOCKET_IFNAME", "eth0")):
        found = _iface(environ(**{name: value}), name)
        assert [f.severity for f in found] == ["high"], name
        assert "matches no interface" in found[0].title and found[0].impact.basis.startswith(("NCCL", "PyTorch"))


def test_loopback_or_docker_with_rdma_up_is_medium() -> None:
    for name, value in (("NCCL_SOCKET_IFNAME", "lo"), ("VLLM_HOST_IP", "127.0.0.1")):
        found = _iface(environ(**{name: value}), name)
        assert [f.severity for f in found] == ["medium"], name
        assert "other nodes cannot reach" in found[0].title


def test_interface_on_a_data_nic_is_quiet_and_vllm_host_ip_of_a_roce_port_passes() -> None:
    assert not _iface({}, "NCCL_SOCKET_IFNAME")
    assert not _iface(environ(GLOO_SOCKET_IFNAME="enp39s0f0np0"), "GLOO_SOCKET_IFNAME")
    assert not _iface(environ(VLLM_HOST_IP="10.100.0.7"), "VLLM_HOST_IP")  # mlx5_0's RoCE address
    assert not _iface(environ(VLLM_HOST_IP="192.0.2.10"), "VLLM_HOST_IP")  # addresses not recorded: not judged


def test_pod_manifest_interface_names_are_not_the_hosts() -> None:
    manifest = ("apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
                "      - name: vllm\n        image: vllm/vllm-openai\n        args: [\"--model\", \"m\"]\n        env:\n        - name: GLOO_SOCKET_IFNAME\n          value: eth0\n")
    path = "etc/kubernetes/manifests/vllm.yaml"
    from tests.helpers import facts as make

    f = make({path: manifest}, base=healthy())
    assert any(d.path == path for d in f.deploy_files)
    assert not [x for x in findings_of(f, "nccl.transport") if x.subject_id == "GLOO_SOCKET_IFNAME"]
    host = manifest.replace("    spec:\n      containers:", "    spec:\n      hostNetwork: true\n      containers:")
    assert [x.severity for x in findings_of(make({path: host}, base=healthy()), "nccl.transport")
            if x.subject_id == "GLOO_SOCKET_IFNAME"] == ["high"]


# --- RDMA modules: GPUDirect RDMA on GeForce, ib_uverbs ----------------------------------------------

def test_gdr_module_never_says_available_on_geforce_even_with_peermem_loaded() -> None:
    from tests.checks.test_consumer_gpus import geforce

    found = findings_of(facts(geforce(), base=healthy()), "rdma.gdr_module")  # nvidia_peermem is loaded here
    assert [f.severity for f in found] == ["info"]
    assert "available" not in found[0].title and "although nvidia_peermem is loaded" in found[0].detail
    assert [f.severity for f in findings_of(facts(base=healthy()), "rdma.gdr_module")] == ["pass"]


MODULES = "proc/modules"


def _without(*names: str) -> dict[str, str]:
    text = (healthy() / MODULES).read_text()
    return {MODULES: "".join(x for x in text.splitlines(keepends=True) if x.split()[0] not in names)}


def test_missing_ib_uverbs_with_rdma_nics_is_high_with_a_module_fix() -> None:
    found = findings_of(facts(_without("ib_uverbs"), base=healthy()), "rdma.user_verbs")
    assert [f.severity for f in found] == ["high"]
    assert found[0].fix.params == {"module": "ib_uverbs"} and "No device found" in found[0].detail
    assert [f.severity for f in findings_of(facts(base=healthy()), "rdma.user_verbs")] == ["pass"]


def test_missing_rdma_cm_changes_nothing_and_builtin_ib_core_is_not_judged() -> None:
    assert [f.severity for f in findings_of(facts(_without("rdma_cm", "rdma_ucm"), base=healthy()),
                                            "rdma.user_verbs")] == ["pass"]
    # ib_core built in (not in /proc/modules): ib_uverbs may be built in too
    assert findings_of(facts(_without("ib_core", "ib_uverbs"), base=healthy()), "rdma.user_verbs") == []


# --- kubelet: CPU manager options, memory manager ------------------------------------------------------

KUBELET = "var/lib/kubelet/config.yaml"


def _kubelet(extra: str, policy: str = "static") -> dict[str, str]:
    text = (healthy() / KUBELET).read_text().replace("cpuManagerPolicy: static", f"cpuManagerPolicy: {policy}")
    return {KUBELET: text + extra}


def _kube(changes: dict) -> list:
    return [f for f in findings_of(facts(changes, base=healthy()), "numa.kubelet_policy") if f.subject == "kubelet"]


OPTIONS = 'cpuManagerPolicyOptions:\n  full-pcpus-only: "true"\n'
STATIC = "memoryManagerPolicy: Static\n"
RESERVED = ("kubeReserved:\n  cpu: 500m\n  memory: 1Gi\nsystemReserved:\n  memory: 1Gi\nevictionHard:\n"
            "  memory.available: 100Mi\nreservedMemory:\n  - numaNode: 0\n    limits:\n      memory: {n0}\n"
            "  - numaNode: 1\n    limits:\n      memory: {n1}\n")


def test_full_pcpus_only_with_static_is_info_and_says_what_it_does() -> None:
    (f,) = _kube(_kubelet(OPTIONS))
    assert f.severity == "info" and "whole physical cores" in f.title and "SMTAlignmentError" in f.detail


def test_cpu_manager_options_without_static_keep_the_kubelet_from_starting() -> None:
    (f,) = _kube(_kubelet(OPTIONS, policy="none"))
    assert f.severity == "high" and "does not start" in f.title
    assert not _kube({})  # the healthy node's kubelet config: nothing about options or memory


def test_static_memory_manager_reservations_must_sum_to_the_reserved_total() -> None:
    ok = _kube(_kubelet(STATIC + RESERVED.format(n0="1124Mi", n1="1Gi")))
    assert [f.severity for f in ok] == ["info"] and "stays on their NUMA node" in ok[0].title
    (bad,) = _kube(_kubelet(STATIC + RESERVED.format(n0="1Gi", n1="1Gi")))
    assert bad.severity == "high" and "does not start" in bad.title
    assert "2 GiB" in bad.title and "2.1 GiB" in bad.title and "sum(reserved-memory(i))" in bad.impact.basis


def test_static_memory_manager_without_reserved_memory_does_not_start() -> None:
    # the default hard eviction threshold (100Mi) alone needs a reservation
    (f,) = _kube(_kubelet(STATIC))
    assert f.severity == "high" and "sums to 0 MiB" in f.title and "100 MiB" in f.title


def test_judged_variable_quotes_its_documentation_in_the_readers_language() -> None:
    """The detail of a judged variable carries the quoted documentation as a translatable part (an f-string
    would freeze it in English inside a Chinese detail)."""
    from doctor.i18n import tr, use

    small = _of("runtime.debug_env", environ(NCCL_BUFFSIZE="1048576"), "NCCL_BUFFSIZE")[0]
    with use("en"):
        english = tr(small.detail)
    with use("zh-CN"):
        chinese = tr(small.detail)
        quoted = tr(small.impact.basis)
    assert "NCCL's documentation of NCCL_BUFFSIZE" in english
    assert quoted != str.__str__(small.impact.basis) and quoted in chinese
    assert "NCCL's documentation" not in chinese
