"""The nearest NIC of each GPU through one index (linear in the NICs) answers as comparing every pair."""

from __future__ import annotations

import pytest

from doctor.derived.paths import NicIndex, path_word, word_rank
from tests.helpers import HEALTHY, SICK, facts


@pytest.mark.parametrize("base", [HEALTHY, SICK], ids=["healthy", "sick"])
def test_the_nic_index_gives_what_comparing_every_nic_gives(base) -> None:  # type: ignore[no-untyped-def]
    f = facts(base=base)
    nics = f.pci.nics
    index = NicIndex(f.pci, nics, f.numa)
    for gpu in [*f.pci.gpus, *nics, *list(f.pci.devices.values())[:20]]:
        brute = min(((word_rank(path_word(f.pci, gpu.address, n.address, f.numa)), n.address) for n in nics
                     if n.address != gpu.address), default=None)
        got = index.nearest(gpu.address)
        assert (None if got is None else (word_rank(got[1]), got[0].address)) == brute, gpu.address


