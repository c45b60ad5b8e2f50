"""Derived facts (insights-core calls them combiners): facts joined into what several readers need.

One module per concern, each a set of pure functions of :class:`doctor.facts.Facts`:

* :mod:`~doctor.derived.links` -- the one PCIe link verdict (pure function over numbers);
* :mod:`~doctor.derived.pcie` -- links on a device's upstream path and the path's bottleneck;
* :mod:`~doctor.derived.upstream` -- upstream paths from the tree form (``lspci -t``) where records lack them;
* :mod:`~doctor.derived.paths` -- NCCL path words, switch hops, nearest NIC;
* :mod:`~doctor.derived.chipset` -- Intel PCH / AMD Promontory slots, NVLink-C2C GPUs;
* :mod:`~doctor.derived.procs` -- inference server processes, GPU holders, the user's environment;
* :mod:`~doctor.derived.net` -- physical and data NICs, whether TCP carries bulk data;
* :mod:`~doctor.derived.rdma` -- NCCL's RoCE GID choice, interface lists, RoCE ports and traffic class;
* :mod:`~doctor.derived.gpu` -- GPU class (consumer or data-centre) and the GPUs' driver view;
* :mod:`~doctor.derived.iommu` -- VFIO use and IOMMU group members;
* :mod:`~doctor.derived.relations` -- GPU labels and activity, GPU <-> NIC <-> NUMA relations.

Expensive results are computed once per run and kept in ``facts.derived`` (see :func:`cached`).
Checks, the inventory and renderers read these; nothing else re-judges a link.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from doctor.facts import Facts

T = TypeVar("T")


def cached(facts: Facts, key: Hashable, build: Callable[[], T]) -> T:
    """``build()`` once per ``facts`` and ``key``; later calls return the same (immutable) value."""
    store = getattr(facts, "derived", None)
    if not isinstance(store, dict):
        return build()
    if key not in store:
        store[key] = build()
    return store[key]  # type: ignore[no-any-return]

