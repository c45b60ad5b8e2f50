"""The builder registry, parameter validation and the inventory context."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from doctor.findings import Fix, FixStep
from doctor.fixes.sysctl_keys import KNOWN_SYSCTLS, generic_key
from doctor.i18n import N_
from doctor.lazyre import lazy
from doctor.record import record

if TYPE_CHECKING:
    from doctor.facts import Facts


#: :attr:`Context.origin` of the host's own facts, and of what a saved result says
HOST, SAVED = "host", "saved"


class FixRejected(ValueError):
    """Parameters a builder does not accept; the message says why (one line)."""


@record
class Context:
    """The facts a fix's parameters must come from; ``None``: that fact is not known here, so nothing is
    checked against it (a check building its own fix at check time).

    :meth:`from_facts` holds this host's own facts (what ``gnd fix-script`` builds its unattended steps
    against); :meth:`from_inventory` holds what a saved result says (a script made from it is for
    review only); :meth:`judged_by` adds what one check judges (its variables and flags).
    """

    netdevs: frozenset[str] | None = None
    pci: frozenset[str] | None = None
    rdma: frozenset[str] | None = None
    #: interface -> its MTU now
    mtus: Mapping[str, int] | None = field(default=None, hash=False)
    #: deployment file the checks read (absolute path) -> its lines
    deploy: Mapping[str, tuple[str, ...]] | None = field(default=None, hash=False)
    irqs: frozenset[int] | None = None
    pids: frozenset[int] | None = None
    gpus: frozenset[int] | None = None
    #: environment variables the check whose fix this is judges
    env: frozenset[str] | None = None
    #: command-line flags the check judges (patterns a flag word must match in full)
    flags: tuple[re.Pattern[str], ...] | None = None
    #: NUMA node id -> its CPU list (``sys/devices/system/node/nodeN/cpulist``)
    node_cpus: Mapping[int, str] | None = field(default=None, hash=False)
    #: interface -> the NUMA node of its PCI device
    netdev_nodes: Mapping[str, int] | None = field(default=None, hash=False)
    #: IRQ number -> its affinity now (a CPU list, "" when not recorded)
    irq_now: Mapping[int, str] | None = field(default=None, hash=False)
    #: sysctl key -> its value now (whitespace runs as one space)
    sysctl_now: Mapping[str, str] | None = field(default=None, hash=False)
    #: interface -> DCQCN switch (``roce_np``, ``roce_rp``) -> priority -> 1 on, 0 off, now
    ecn_now: Mapping[str, Mapping[str, Mapping[int, int]]] | None = field(default=None, hash=False)
    #: (RDMA device, port number) of each RDMA port of this host
    rdma_ports: frozenset[tuple[str, int]] | None = None
    #: GPU PCI address -> its power limit now (W)
    power_now: Mapping[str, float] | None = field(default=None, hash=False)
    #: GPU PCI address -> its application clocks now (memory, graphics MHz; the default where not recorded)
    clocks_now: Mapping[str, tuple[float | None, float | None]] | None = field(default=None, hash=False)
    #: GPU index -> its compute mode now (lower case, ``exclusive_process``)
    compute_now: Mapping[int, str] | None = field(default=None, hash=False)
    #: cpufreq ``governor`` / ``epp`` -> its value now (only those recorded)
    cpufreq_now: Mapping[str, str] | None = field(default=None, hash=False)
    #: (builder, parameters) of each fix the check whose fix this is builds itself on these facts (what
    #: it recommends for this host); ``None``: not known here
    own: tuple[tuple[str, Mapping[str, Any]], ...] | None = field(default=None, hash=False)
    #: the facts this context was made from (so a fix script can ask a check what it recommends on them)
    facts: Facts | None = field(default=None, hash=False, compare=False, repr=False)
    #: where these facts come from: :data:`HOST` (the host's own files, read on it) or the kind of a copy
    #: of a host (a snapshot, sosreport or bug report; :data:`SAVED`, a saved result). A fix script runs
    #: steps only for :data:`HOST`.
    origin: str = SAVED

    @classmethod
    def from_inventory(cls, inventory: object) -> Context:
        """Interface names, PCI addresses and RDMA ports listed in a result's ``inventory``."""
        inv = inventory if isinstance(inventory, dict) else {}

        def rows(key: str) -> list[dict[str, Any]]:
            value = inv.get(key)
            return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []

        nics = rows("nics")
        netdevs = {str(n) for r in nics for n in (r.get("netdevs") or []) if isinstance(r.get("netdevs"), list)}
        rdma = {str(n).split("/")[0] for r in nics for n in (r.get("rdma") or []) if isinstance(r.get("rdma"), list)}
        pci = {str(r.get("address")) for key in ("gpus", "nics", "topology") for r in rows(key) if r.get("address")}
        return cls(netdevs=frozenset(netdevs), pci=frozenset(pci), rdma=frozenset(rdma), origin=SAVED)

    @classmethod
    def from_facts(cls, facts: Facts) -> Context:
        """This host's own facts: its interfaces, PCI devices, RDMA devices, IRQs, processes, GPUs and the
        deployment files the checks read (paths made absolute, as fixes name them)."""
        from doctor.facts.util import format_cpulist

        devices = facts.pci.devices
        gpus = [g for g in facts.gpus.gpus if g.runtime is not None]
        cf = facts.cpufreq
        nodes = {n.name: dev.numa_node for n in facts.netdevs
                 if n.pci_address and (dev := devices.get(n.pci_address)) is not None and dev.numa_node is not None}
        return cls(netdevs=frozenset(n.name for n in facts.netdevs),
                   node_cpus={n.id: n.cpulist for n in facts.numa.nodes}, netdev_nodes=nodes,
                   irq_now={i.number: format_cpulist(i.affinity) if i.affinity else "" for i in facts.irqs},
                   sysctl_now={k: " ".join(str(v).split()) for k, v in facts.sysctls.values.items()},
                   ecn_now={name: {"roce_np": {k: int(v) for k, v in e.np.items()},
                                   "roce_rp": {k: int(v) for k, v in e.rp.items()}} for name, e in facts.roce_ecn.items()},
                   pci=frozenset(facts.pci.devices) | frozenset(g.address for g in facts.gpus.gpus),
                   rdma=frozenset(p.device for p in facts.rdma),
                   mtus={n.name: n.mtu for n in facts.netdevs if n.mtu is not None},
                   deploy={absolute(df.path): tuple(df.text.splitlines()) for df in facts.deploy_files},
                   irqs=frozenset(i.number for i in facts.irqs), pids=frozenset(p.pid for p in facts.processes),
                   gpus=frozenset(g.index for g in facts.gpus.gpus),
                   rdma_ports=frozenset((p.device, p.port) for p in facts.rdma),
                   power_now={g.address: g.runtime.power_limit_w for g in gpus
                              if g.runtime and g.runtime.power_limit_w is not None},
                   clocks_now={g.address: (g.runtime.app_clock_mem_mhz or g.runtime.default_app_clock_mem_mhz,
                                           g.runtime.app_clock_graphics_mhz or g.runtime.default_app_clock_graphics_mhz)
                               for g in gpus if g.runtime},
                   compute_now={g.index: g.runtime.compute_mode.lower() for g in gpus
                                if g.runtime and g.runtime.compute_mode},
                   cpufreq_now={k: v for k, v in (("governor", cf.governor), ("epp", cf.epp)) if v} if cf else {},
                   facts=facts,
                   origin=HOST if facts.source.host_root else str(facts.source.kind))

    @property
    def on_host(self) -> bool:
        """Whether these are the host's own facts (a fix script built on them may run its steps)."""
        return self.origin == HOST

    def judged_by(self, env: Iterable[str] | None, flags: Iterable[re.Pattern[str]] | None,
                  own: Iterable[tuple[str, Mapping[str, Any]]] | None = None) -> Context:
        """This context with the variables and flags one check judges (none when it declares none) and,
        when given, the fixes that check builds itself on these facts (``own``)."""
        return replace(self, env=frozenset(env or ()), flags=tuple(flags or ()),
                       own=None if own is None else tuple(own))


def absolute(path: str) -> str:
    """A path in the source as the host names it (``etc/x`` -> ``/etc/x``)."""
    return path if path.startswith("/") else "/" + path


UNIT_OF = lazy(r"(?:^|/)([^/]+\.service)(?:\.d/[^/]+\.conf)?$")


def unit_of(path: str) -> str | None:
    """The systemd unit a unit file or drop-in belongs to, else None."""
    m = UNIT_OF.search(path)
    return m.group(1) if m and UNIT.fullmatch(m.group(1)) else None


def exec_starts(lines: Sequence[str]) -> list[tuple[int, str]]:
    """(line index, value) of the ExecStart= lines of a unit, continuation lines joined."""
    out = []
    for i, line in enumerate(lines):
        m = EXEC_START.match(line)
        if m:
            value = m.group(1)
            j = i
            while value.endswith("\\") and j + 1 < len(lines):
                j += 1
                value = value[:-1] + " " + lines[j].strip()
            out.append((i, value))
    return out


EXEC_START = lazy(r"^\s*ExecStart\s*=\s*(.*)$")


NETDEV = lazy(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}")
PCI_ADDRESS = lazy(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
CPULIST = lazy(r"\d{1,5}(-\d{1,5})?(,\d{1,5}(-\d{1,5})?){0,1023}")
UNIT = lazy(r"[A-Za-z0-9_][A-Za-z0-9@_.:-]{0,200}\.service")
RDMA_DEVICE = lazy(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


class Params:
    """Typed, validated access to a builder's parameters; unread keys are refused by ``done``."""

    def __init__(self, data: object, ctx: Context, spec: Mapping[str, Param] | None = None) -> None:
        if not isinstance(data, dict):
            raise FixRejected("parameters are not an object")
        self.data = data
        self.ctx = ctx
        self.spec = spec
        self.read: set[str] = set()

    def raw(self, key: str, default: Any = None) -> Any:
        if self.spec is not None and key not in self.spec:
            raise FixRejected(f"the builder reads {key!r}, a parameter it does not declare")
        self.read.add(key)
        return self.data.get(key, default)

    def text(self, key: str, pattern: re.Pattern[str], what: str, optional: bool = False) -> str:
        value = self.raw(key)
        if value is None and optional:
            return ""
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise FixRejected(f"{key}: not a valid {what}")
        return value

    def choice(self, key: str, allowed: Iterable[str]) -> str:
        value = self.raw(key)
        if value not in tuple(allowed):
            raise FixRejected(f"{key}: not one this check produces")
        return str(value)

    def integer(self, key: str, low: int, high: int, optional: bool = False) -> int | None:
        value = self.raw(key)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise FixRejected(f"{key}: not an integer from {low} to {high}")
        return value

    def items(self, key: str, check: Callable[[object], str], limit: int = 256) -> list[str]:
        value = self.raw(key, [])
        if not isinstance(value, list) or len(value) > limit:
            raise FixRejected(f"{key}: not a list")
        return [check(v) for v in value]

    def mapping(self, key: str, limit: int = 1024) -> dict[str, Any]:
        value = self.raw(key, {})
        if not isinstance(value, dict) or len(value) > limit:
            raise FixRejected(f"{key}: not an object")
        return value

    def netdev(self, key: str) -> str:
        return netdev(self.raw(key))

    def pci(self, key: str) -> str:
        return pci_address(self.raw(key))

    def done(self) -> None:
        extra = set(self.data) - self.read
        if extra:
            raise FixRejected(f"unexpected parameter {sorted(extra)[0]!r}")


def netdev(value: object) -> str:
    """An interface name (shape only; :data:`Fact.NETDEV` binds it to the host)."""
    if not isinstance(value, str) or not NETDEV.fullmatch(value) or value in (".", ".."):
        raise FixRejected("not a valid interface name")
    return value


def pci_address(value: object) -> str:
    """A PCI address (shape only; :data:`Fact.PCI` binds it to the host)."""
    if not isinstance(value, str) or not PCI_ADDRESS.fullmatch(value):
        raise FixRejected("not a valid PCI address")
    return value


def cpulist(value: object) -> str:
    if not isinstance(value, str) or not CPULIST.fullmatch(value):
        raise FixRejected("not a valid CPU list")
    return value


def unit(value: object) -> str:
    if not isinstance(value, str) or not UNIT.fullmatch(value):
        raise FixRejected("not a valid systemd service name")
    return value


# --- the facts a parameter must come from ---------------------------------------------------------

Holds = Callable[[Context, object, Mapping[str, Any]], "bool | None"]


@record
class From:
    """A fact of the host a parameter value must be held by: ``holds(ctx, value, params)`` is True when
    it is, False when it is not, None when ``ctx`` does not know that fact (nothing to check against)."""

    what: str
    holds: Holds = field(hash=False, compare=False)


def _member(attr: str) -> Holds:
    def holds(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
        known = getattr(ctx, attr)
        return None if known is None else value in known
    return holds


def _int_member(attr: str) -> Holds:
    def holds(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
        known = getattr(ctx, attr)
        if known is None:
            return None
        text = str(value)
        return text.isdigit() and int(text) in known
    return holds


def _deploy_file(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    return None if ctx.deploy is None else value in ctx.deploy


def _unit(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    return None if ctx.deploy is None else any(unit_of(path) == value for path in ctx.deploy)


def _unit_file(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if ctx.deploy is None:
        return None
    return value in ctx.deploy and isinstance(value, str) and unit_of(value) == params.get("unit")


def _exec_start(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if ctx.deploy is None:
        return None
    return any(unit_of(path) == params.get("unit") and any(v == value for _, v in exec_starts(lines))
               for path, lines in ctx.deploy.items())


def judged_env(ctx: Context, value: object) -> bool | None:
    """Whether ``value`` (a variable name) is one the check judges; None when not known here."""
    return None if ctx.env is None else value in ctx.env


def judged_flag(ctx: Context, value: object) -> bool | None:
    """Whether ``value`` (a command-line word) is a flag the check judges; None when not known here."""
    if ctx.flags is None:
        return None
    return isinstance(value, str) and any(p.fullmatch(value) for p in ctx.flags)


def _env(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    return judged_env(ctx, value)


def _flag(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    return None if value in ("", None) else judged_flag(ctx, value)


#: the words of a deployment-file line that are its structure, not a setting (``Environment=X=1``,
#: ``export X=1``, a Kubernetes ``- name: X`` / ``value: "1"`` pair)
LINE_KEYS = frozenset({"Environment", "export", "env", "environment", "name", "value"})
SETTING_WORD = lazy(r"[A-Za-z_][A-Za-z0-9_]*|-{1,2}[A-Za-z0-9][A-Za-z0-9_.=-]*")


def _changed_lines(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    """The lines are the file's own at ``start``; a deletion must hold a setting the check judges."""
    if ctx.deploy is None:
        return None
    lines, start = ctx.deploy.get(str(params.get("path"))), params.get("start")
    if lines is None or not isinstance(value, list) or not isinstance(start, int) or isinstance(start, bool):
        return False
    if tuple(lines[start - 1:start - 1 + len(value)]) != tuple(value) or not value:
        return False
    if params.get("drop") or params.get("set"):
        return True  # the builder changes only the judged flag or variable in them
    # the lines go whole: every setting in them must be one the check judges (never a line that also
    # holds another flag, ``command: ["--model", "m", "--enforce-eager"]``)
    words = {w.strip("\"'") for line in value for w in SETTING_WORD.findall(line)} - LINE_KEYS
    return bool(words) and all(judged_env(ctx, w) or judged_flag(ctx, w) for w in words)


def _judged_change(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    text = str(value)
    env, flag = judged_env(ctx, text.split("=", 1)[0]), judged_flag(ctx, text)
    return None if env is None and flag is None else bool(env or flag)


def _gpu(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    text = str(value)
    if text.isdigit():
        return None if ctx.gpus is None else int(text) in ctx.gpus
    return None if ctx.pci is None else text in ctx.pci


#: Physical MTU range a fix may set: IPv6's minimum (below it a fix would break IPv6, never speed a node
#: up) to the largest jumbo frame switches carry.
MTU_MIN, MTU_MAX, JUMBO = 1280, 9216, 9000


def _target_mtu(ctx: Context, value: object, params: Mapping[str, Any]) -> bool:
    if isinstance(value, bool) or not isinstance(value, int) or not MTU_MIN <= value <= MTU_MAX:
        return False
    return ctx.mtus is None or value == JUMBO or value in ctx.mtus.values()


def _mtu_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if ctx.mtus is None:
        return None
    return ctx.mtus.get(str(params.get("netdev"))) == value


def _node_of_netdev(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if ctx.netdev_nodes is None:
        return None
    return isinstance(value, int) and not isinstance(value, bool) and ctx.netdev_nodes.get(str(params.get("netdev"))) == value


def _node_cpus(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if ctx.node_cpus is None:
        return None
    node = params.get("node")
    return isinstance(node, int) and not isinstance(node, bool) and ctx.node_cpus.get(node) == value


def _irqs_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    """{irq: affinity}: each an IRQ of this host, each affinity the one it has now (what a rollback restores)."""
    if ctx.irq_now is None:
        return None
    if not isinstance(value, dict):
        return False
    return all(str(k).isdigit() and ctx.irq_now.get(int(k)) == (v or "") for k, v in value.items())


def _sysctls_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    """{key: value}: each the host's value of that sysctl now (what a rollback restores)."""
    if ctx.sysctl_now is None:
        return None
    if not isinstance(value, dict):
        return False
    wanted = params.get("set")
    missing = [k for k in wanted if k in ctx.sysctl_now and k not in value] if isinstance(wanted, dict) else []
    return not missing and all(isinstance(v, (str, int)) and not isinstance(v, bool)
                               and ctx.sysctl_now.get(str(k)) == " ".join(str(v).split()) for k, v in value.items())


def _ecn_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    """{switch: 0}: each a DCQCN switch of the interface at that priority, off now (what a rollback restores)."""
    if ctx.ecn_now is None:
        return None
    switches, prio = ctx.ecn_now.get(str(params.get("netdev"))), params.get("priority")
    if not isinstance(value, dict) or not value or switches is None or not isinstance(prio, int):
        return False
    return all(isinstance(v, int) and not isinstance(v, bool) and v == 0
               and str(k) in switches and switches[str(k)].get(prio) == v for k, v in value.items())


def _own(ctx: Context, builder: str) -> list[Mapping[str, Any]] | None:
    """The parameters of the fixes ``builder`` builds that the judging check makes itself on these facts."""
    if ctx.own is None:
        return None
    return [params for name, params in ctx.own if name == builder and isinstance(params, Mapping)]


def _norm(value: object) -> str | None:
    return " ".join(str(value).split()) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def _sysctls_wanted(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    """{key: value}: each the value the check itself sets for that key on this host's facts (never one
    the check would flag; the value now only where the check's own fix is to keep it at boot,
    ``sysctl.persistence``)."""
    own = _own(ctx, "sysctl")
    if own is None:
        return None
    if not isinstance(value, dict) or not value:
        return False
    if not all(_norm(v) is not None and (shape := KNOWN_SYSCTLS.get(generic_key(str(k)))) is not None
               and shape.fullmatch(str(_norm(v))) for k, v in value.items()):
        return None  # not a value of that key at all: the builder refuses it by its shape
    wanted: list[Mapping[str, Any]] = [w for p in own if isinstance(w := p.get("set"), Mapping)]
    return all(_norm(v) is not None and any(_norm(w.get(k)) == _norm(v) for w in wanted) for k, v in value.items())


def _ecn_priority(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    """A priority the check itself switches DCQCN on for, on that interface, with a switch off there now."""
    own = _own(ctx, "roce_ecn")
    if own is None and ctx.ecn_now is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    nic = params.get("netdev")
    if own is not None and not any(p.get("netdev") == nic and p.get("priority") == value for p in own):
        return False
    if ctx.ecn_now is None:
        return True
    switches = ctx.ecn_now.get(str(nic)) or {}
    return any(bits.get(value) == 0 for bits in switches.values())


def _dropin_name(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    """The drop-in's name part is that of a variable the fix unsets or sets (each one the check judges)."""
    if ctx.env is None:
        return None
    names = list(params.get("unset") or []) + list(params.get("set") or {})
    return isinstance(value, str) and any(isinstance(n, str) and dropin_slug(n) == value for n in names)


def dropin_slug(name: str) -> str:
    """The drop-in name part for variable ``name`` (``CUDA_DEVICE_ORDER`` -> ``cuda-device-order``)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40]


def _rdma_port(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if ctx.rdma_ports is None:
        return None
    return isinstance(value, int) and not isinstance(value, bool) and (params.get("device"), value) in ctx.rdma_ports


def _number_is(now: float | None, value: object) -> bool:
    return (now is not None and isinstance(value, (int, float)) and not isinstance(value, bool)
            and abs(float(value) - float(now)) < 1e-6)


def _power_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if ctx.power_now is None:
        return None
    return _number_is(ctx.power_now.get(str(params.get("gpu"))), value)


def _clock_now(slot: int) -> Holds:
    def holds(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
        if ctx.clocks_now is None:
            return None
        clocks = ctx.clocks_now.get(str(params.get("gpu")))
        return clocks is not None and _number_is(clocks[slot], value)
    return holds


def _compute_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if ctx.compute_now is None:
        return None
    index = params.get("index")
    return isinstance(value, str) and isinstance(index, int) and ctx.compute_now.get(index) == value.lower()


def _cpufreq_now(name: str) -> Holds:
    def holds(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
        return None if ctx.cpufreq_now is None else ctx.cpufreq_now.get(name) == value
    return holds


def _host(ctx: Context) -> Facts | None:
    """The facts ``ctx`` was made from (read lazily by the facts below: a fix script asks only for what
    its fixes name), or None when not known here."""
    return ctx.facts


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _thp_path(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if (facts := _host(ctx)) is None:
        return None
    return facts.thp.defrag is not None and value == f"/{facts.thp.origin}/defrag"


def _thp_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if (facts := _host(ctx)) is None:
        return None
    return facts.thp.defrag is not None and value == facts.thp.defrag


def _runtime(ctx: Context, address: object) -> Any:
    facts = _host(ctx)
    gpu = None if facts is None else next((g for g in facts.gpus.gpus if g.address == address), None)
    return None if gpu is None else gpu.runtime


def _power_default(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if _host(ctx) is None:
        return None
    rt = _runtime(ctx, params.get("gpu"))
    return rt is not None and _number_is(rt.default_power_limit_w, value)


def _gpu_mode(attr: str, pending: bool) -> Holds:
    """The GPU's ECC or MIG mode now (``pending``: whether a change of it is pending now), by index."""
    def holds(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
        if (facts := _host(ctx)) is None:
            return None
        index = _int(params.get("index"))
        gpu = next((g for g in facts.gpus.gpus if index is not None and g.index == index), None)
        rt = None if gpu is None else gpu.runtime
        if rt is None or not isinstance(value, bool) or getattr(rt, attr) is None:
            return False
        now, later = getattr(rt, attr), getattr(rt, attr + "_pending")
        return value == (later is not None and later != now) if pending else value == bool(now)
    return holds


def _process(ctx: Context, params: Mapping[str, Any]) -> Any:
    facts, pid = _host(ctx), _int(params.get("pid"))
    return None if facts is None or pid is None else facts.process(pid)


def _affinity_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if _host(ctx) is None:
        return None
    from doctor.facts.util import format_cpulist, parse_cpulist

    proc = _process(ctx, params)
    if proc is None or proc.cpus_allowed is None or not isinstance(value, str) or not CPULIST.fullmatch(value):
        return False
    cpus = parse_cpulist(value)
    return cpus is not None and format_cpulist(cpus) == format_cpulist(proc.cpus_allowed)


def _shm_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if (facts := _host(ctx)) is None:
        return None
    pid = _int(params.get("pid"))
    mount = None if pid is None else facts.proc_files.shm(pid)[1]
    return mount is not None and mount.size is not None and _int(value) == mount.size


def _memlock_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    """{pid: [soft, hard]}: each a process of this host with its locked-memory limits now."""
    if (facts := _host(ctx)) is None:
        return None
    from doctor.facts.limits import UNLIMITED

    if not isinstance(value, dict):
        return False
    for pid, item in value.items():
        lim = facts.proc_files.memlock(int(pid)) if str(pid).isdigit() and facts.process(int(pid)) else None
        now = None if lim is None else ["unlimited" if v == UNLIMITED else v for v in (lim.soft, lim.hard)]
        if now is None or _plain(item) != _plain(now):
            return False
    return True


def _hugepages_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if (facts := _host(ctx)) is None:
        return None
    kb = _int(params.get("size_kb"))
    return kb is not None and _int(value) == facts.hugepages.allocated.get(kb, 0)


def _qos(ctx: Context, params: Mapping[str, Any]) -> Any:
    facts = _host(ctx)
    return None if facts is None else facts.roce_qos.get(str(params.get("netdev")))


def _trust_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if _host(ctx) is None:
        return None
    qos = _qos(ctx, params)
    return qos is not None and not qos.missing and qos.trust is not None and value == qos.trust


def _pfc_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if _host(ctx) is None:
        return None
    qos = _qos(ctx, params)
    vector = None if qos is None or qos.missing else qos.pfc_vector
    return vector is not None and _plain(value) == _plain(list(vector))


def _pci_device(ctx: Context, address: object) -> Any:
    facts = _host(ctx)
    return None if facts is None else facts.pci.devices.get(str(address))


def _override_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if _host(ctx) is None:
        return None
    dev = _pci_device(ctx, params.get("address"))
    return dev is not None and bool(dev.driver_override) and value == dev.driver_override


def _drivers_now(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    """{PCI address: driver}: each a device of this host with the driver it is bound to now."""
    if _host(ctx) is None:
        return None
    return isinstance(value, dict) and all(
        (dev := _pci_device(ctx, k)) is not None and bool(dev.driver) and dev.driver == v for k, v in value.items())


def _os_family(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if (facts := _host(ctx)) is None:
        return None
    from doctor.fixes.boot import os_family

    return value == os_family(facts.host.os_release)


def _file_kind(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if ctx.deploy is None:
        return None
    from doctor.fixes.startup import file_kind

    lines = ctx.deploy.get(str(params.get("path")))
    return lines is not None and value == file_kind("\n".join(lines))


def _line_of(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if ctx.deploy is None:
        return None
    lines, old, start = ctx.deploy.get(str(params.get("path"))), params.get("old"), _int(value)
    return (lines is not None and isinstance(old, list) and bool(old) and start is not None and start >= 1
            and tuple(lines[start - 1:start - 1 + len(old)]) == tuple(old))


def _program(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if _host(ctx) is None:
        return None
    from doctor.derived.procs import program_of

    proc = _process(ctx, params)
    return proc is not None and value == program_of(proc)


def _kubelet_config(ctx: Context, value: object, params: Mapping[str, Any]) -> bool | None:
    if (facts := _host(ctx)) is None:
        return None
    kubelet = facts.kubelet
    return kubelet is not None and value == "/" + (kubelet.origin or "var/lib/kubelet/config.yaml")


class Fact:
    """The facts builder parameters declare (``Param(Fact.NETDEV)``): each names what holds the value."""

    NETDEV = From("an interface of this host", _member("netdevs"))
    PCI = From("a PCI device of this host", _member("pci"))
    RDMA = From("an RDMA device of this host", _member("rdma"))
    IRQ = From("an IRQ of this host", _int_member("irqs"))
    PID = From("a process running on this host", _int_member("pids"))
    GPU_INDEX = From("a GPU of this host", _int_member("gpus"))
    GPU = From("a GPU of this host", _gpu)
    DEPLOY_FILE = From("a deployment file the checks read on this host", _deploy_file)
    CHANGED_LINES = From("lines of that file, at that line, holding a setting the check judges", _changed_lines)
    UNIT = From("a systemd unit whose file the checks read on this host", _unit)
    UNIT_FILE = From("the unit's own file on this host", _unit_file)
    EXEC_START = From("an ExecStart= line of the unit's file on this host", _exec_start)
    JUDGED_ENV = From("an environment variable the check judges", _env)
    JUDGED_FLAG = From("a command-line flag the check judges", _flag)
    JUDGED_CHANGE = From("a flag or variable the check judges", _judged_change)
    MTU = From(f"an MTU of this host's interfaces or {JUMBO}, from {MTU_MIN} to {MTU_MAX}", _target_mtu)
    MTU_NOW = From("the interface's MTU now", _mtu_now)
    NETDEV_NODE = From("the NUMA node of that interface", _node_of_netdev)
    NODE_CPUS = From("the CPU list of that NUMA node", _node_cpus)
    IRQS_NOW = From("IRQs of this host, each with its affinity now", _irqs_now)
    SYSCTLS_NOW = From("this host's value of each sysctl it sets, now", _sysctls_now)
    ECN_NOW = From("the interface's DCQCN switches at that priority, off now", _ecn_now)
    SYSCTLS_WANTED = From("the value the check sets for each sysctl on this host", _sysctls_wanted)
    ECN_PRIORITY = From("a priority the check switches DCQCN on for on that interface, off there now", _ecn_priority)
    DROPIN_NAME = From("the name of a variable the drop-in unsets or sets", _dropin_name)
    RDMA_PORT = From("a port of that RDMA device on this host", _rdma_port)
    POWER_NOW = From("the GPU's power limit now", _power_now)
    MEM_CLOCK_NOW = From("the GPU's memory application clock now", _clock_now(0))
    GFX_CLOCK_NOW = From("the GPU's graphics application clock now", _clock_now(1))
    COMPUTE_NOW = From("the GPU's compute mode now", _compute_now)
    GOVERNOR_NOW = From("the CPU frequency governor now", _cpufreq_now("governor"))
    EPP_NOW = From("the CPU energy-performance preference now", _cpufreq_now("epp"))
    THP_PATH = From("this host's transparent_hugepage defrag file", _thp_path)
    THP_NOW = From("the THP defrag setting now", _thp_now)
    POWER_DEFAULT = From("the GPU's default power limit", _power_default)
    ECC_NOW = From("the GPU's ECC mode now", _gpu_mode("ecc_mode", pending=False))
    ECC_PENDING = From("whether an ECC mode change is pending on the GPU now", _gpu_mode("ecc_mode", pending=True))
    MIG_NOW = From("the GPU's MIG mode now", _gpu_mode("mig_mode", pending=False))
    MIG_PENDING = From("whether a MIG mode change is pending on the GPU now", _gpu_mode("mig_mode", pending=True))
    AFFINITY_NOW = From("the process's CPU affinity now", _affinity_now)
    SHM_NOW = From("the size of the process's /dev/shm now", _shm_now)
    MEMLOCK_NOW = From("processes of this host, each with its locked-memory limits now", _memlock_now)
    HUGEPAGES_NOW = From("the number of hugepages of that size allocated now", _hugepages_now)
    TRUST_NOW = From("the interface's QoS trust now", _trust_now)
    PFC_NOW = From("the interface's PFC bits now", _pfc_now)
    OVERRIDE_NOW = From("the device's driver_override now", _override_now)
    DRIVERS_NOW = From("PCI devices of this host, each with the driver bound to it now", _drivers_now)
    OS_FAMILY = From("this host's distribution family", _os_family)
    FILE_KIND = From("the kind of that file (compose, manifest or other), by its text", _file_kind)
    LINE_OF = From("the line number of those lines in that file", _line_of)
    PROGRAM = From("the program of that process", _program)
    KUBELET_CONFIG = From("this host's kubelet config file", _kubelet_config)


@record
class Param:
    """One declared builder parameter: ``from_`` the fact that must hold its value (``None``: no host
    fact of its own); ``each``: the value itself (``value``), each item of a list (``items``) or each
    key of an object (``keys``); ``own``: and the value must be the one the check itself gives it on this
    host's facts for the same subject (see :func:`bind`): what the check recommends, not what an edited
    result chose."""

    from_: From | None = None
    each: str = "value"
    own: bool = False


#: a parameter the builder checks by shape only: only read-only choices (which counters a diagnostic
#: shows); ``tests/fixes/test_bound.py`` lists every one
SHAPE = Param()
#: a value the check itself recommends (a target, a file name, what to load or enable)
OWN = Param(own=True)
#: what :func:`bind` says of a value that is not the one the check gives it on this host
RECOMMENDED = "what the check itself gives it on this host's facts"


def _plain(value: object) -> object:
    """``value`` as JSON would carry it (tuples as lists, keys as text, 700.0 as 700), booleans kept
    apart from 0 and 1: what a saved result and the check's own parameters compare as."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _values(param: Param, value: object) -> list[object]:
    if param.each == "items":
        return list(value) if isinstance(value, list) else [value]
    if param.each == "keys":
        return list(value) if isinstance(value, dict) else [value]
    return [value]


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def bind(spec: Mapping[str, Param], params: Mapping[str, Any], ctx: Context) -> None:
    """Refuse ``params`` unless every key is declared in ``spec`` and every bound value is held by its
    fact in ``ctx`` (run before the builder, for every builder)."""
    extra = sorted(set(params) - set(spec))
    if extra:
        raise FixRejected(f"unexpected parameter {extra[0]!r}")
    for key, param in spec.items():
        if param.from_ is None or params.get(key) is None:
            continue
        for value in _values(param, params[key]):
            if param.from_.holds(ctx, value, params) is False:
                raise FixRejected(f"{key}: {_short(value)} is not {param.from_.what}")


def bind_own(name: str, spec: Mapping[str, Param], params: Mapping[str, Any], ctx: Context) -> None:
    """Refuse ``params`` unless every ``own`` value is the one the check itself gives it on these facts
    (run after the builder ``name`` accepted their shape): among the fixes of ``name`` the check builds
    itself on them (:attr:`Context.own`), those for the same subject (equal in every parameter bound to
    a host fact and not ``own``: the interface, GPU, process, the value now), one must hold every
    ``own`` value as given. Nothing to check where the check's own fixes are not known here."""
    owned = [k for k, p in spec.items() if p.own]
    mine = _own(ctx, name) if owned else None
    if mine is None:
        return
    subject = [k for k, p in spec.items() if p.from_ is not None and not p.own]
    given = {k: _plain(params.get(k)) for k in spec}
    same = [{k: _plain(o.get(k)) for k in spec} for o in mine]
    same = [o for o in same if all(o[k] == given[k] for k in subject)]
    for key in owned:
        if not any(o[key] == given[key] for o in same):
            raise FixRejected(f"{key}: {_short(params.get(key))} is not {RECOMMENDED}")
    if not any(all(o[k] == given[k] for k in owned) for o in same):
        raise FixRejected(f"{owned[0]}: {_short(params.get(owned[0]))} is not {RECOMMENDED} (with the other values given)")


Builder = Callable[[Params], list[FixStep]]
BUILDERS: dict[str, Builder] = {}
#: each builder's declared parameters
SPECS: dict[str, dict[str, Param]] = {}


def builder(name: str, **spec: Param) -> Callable[[Builder], Builder]:
    """Register a builder with the parameters it takes, each declaring the fact it must come from."""
    def register(fn: Builder) -> Builder:
        BUILDERS[name] = fn
        SPECS[name] = dict(spec)
        return fn
    return register


def load_builders() -> dict[str, Builder]:
    """Every registered builder; the builder modules are imported on first use (a healthy node needs none)."""
    import doctor.fixes.builders  # noqa: F401  (registers the builders)
    import doctor.fixes.deploy  # noqa: F401  (registers the start-up builders)

    return BUILDERS


def build(name: str, params: dict[str, Any], notes: str = "", ctx: Context | None = None) -> Fix:
    """The fix ``name`` builds from ``params``; ``FixRejected`` when a parameter is undeclared, not held
    by the fact it declares (in ``ctx``) or not accepted by the builder."""
    fn = load_builders().get(name)
    if fn is None:
        raise FixRejected(f"no fix builder named {name!r}" if name else "no fix builder recorded (a 1.x result?)")
    if not isinstance(params, dict):
        raise FixRejected("parameters are not an object")
    context = ctx or Context()
    bind(SPECS[name], params, context)
    p = Params(params, context, SPECS[name])
    steps = fn(p)
    p.done()
    bind_own(name, SPECS[name], params, context)
    return Fix(steps=tuple(steps), notes=notes, builder=name, params=params)


def make(name: str, notes: str = "", **params: Any) -> Fix:
    """For checks: the fix ``name`` builds; parameters it refuses (a hostile name in the data) leave
    only the notes, with the reason."""
    try:
        return build(name, params, notes)
    except FixRejected as exc:
        return Fix(notes=(notes + " " if notes else "") + N_('(No commands: {exc}.)', exc=exc))


def rebuild(fix: Fix, ctx: Context) -> Fix:
    """``fix`` rebuilt from its builder and parameters, validated against ``ctx``; never from its steps."""
    return build(fix.builder, fix.params, fix.notes, ctx)
