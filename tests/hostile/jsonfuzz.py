"""Seeded mutations of a saved result (``gnd check --format json``), for ``test_fleet_fuzz.py``.

Each mutation sets one to three values somewhere in the result (a finding, its fix, the inventory,
the digest) to a value of another shape, deletes or repeats some, and now and then cuts the text,
nests it too deeply or starts it with a byte order mark. Deterministic for a given ``random.Random``.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any

VALUES: list[Any] = [None, 0, -1, 1e308, float("nan"), float("inf"), True, "", "x" * 10000, [], {}, [None],
                     {"a": None}, "\u202e", "critical", "high", "pass", 2 ** 70, -2 ** 70, [[[]]],
                     {"severity": None}, "\ud800", "\ud83d\ude00", ["eth0", 5]]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in list(value.items())[:60]:
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:8]):
            yield from _paths(item, (*prefix, i))


def mutate(result: dict[str, Any], rng: random.Random) -> tuple[str, bytes]:
    """(a label of what was done, the bytes of the crafted file)."""
    data = copy.deepcopy(result)
    paths = list(_paths(data))[1:]
    labels = []
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths)
        parent: Any = data
        try:
            for key in path[:-1]:
                parent = parent[key]
            how = rng.random()
            if how < 0.15 and isinstance(parent, dict):
                del parent[path[-1]]
                labels.append(f"del {path}")
            elif how < 0.2 and isinstance(parent, list):
                parent.append(copy.deepcopy(rng.choice(parent)))
                labels.append(f"repeat in {path[:-1]}")
            else:
                value = rng.choice(VALUES)
                parent[path[-1]] = value
                labels.append(f"{path} = {str(value)[:20]!r}")
        except (KeyError, IndexError, TypeError):
            pass  # an earlier change removed that place
    text = json.dumps(data, ensure_ascii=rng.random() < 0.5)
    how = rng.random()
    if how < 0.05:
        text = text[:rng.randrange(len(text))]
        labels.append("cut")
    elif how < 0.08:
        text = "[" * 100_000 + "]" * 100_000
        labels.append("nested")
    raw = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.03:
        raw = b"\xef\xbb\xbf" + raw
        labels.append("byte order mark")
    return "; ".join(labels), raw
