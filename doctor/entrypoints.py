"""Entry points of one group, found without importing :mod:`importlib.metadata`.

``importlib.metadata`` costs a plain ``gnd check`` about 15 ms of start-up (it pulls in ``email``,
``zipfile``, ``csv`` and ``inspect``-heavy helpers) to answer one question: which installed
distributions declare a ``gpu_node_doctor.checks`` entry point. This module answers it the way
``importlib.metadata`` does for the ordinary case (``*.dist-info`` / ``*.egg-info`` folders in the
directories of ``sys.path``, the first distribution of a name wins) by reading their
``entry_points.txt`` directly. Where ``sys.path`` holds anything else (a zip file, an egg, a
custom finder), it falls back to ``importlib.metadata`` so no plugin is ever missed.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

_SUFFIXES = (".dist-info", ".egg-info")


def _normalise(dist_dir: str) -> str:
    """Distribution name of a metadata folder, normalised as PEP 503 does (``gnd_hello-0.1`` -> ``gnd-hello``)."""
    name = dist_dir.rsplit(".", 1)[0].split("-", 1)[0]
    return name.lower().replace("_", "-").replace(".", "-")


def _parse(text: str, group: str) -> list[tuple[str, str]]:
    """``(name, value)`` pairs of ``[group]`` in an ``entry_points.txt`` (INI syntax, ``#``/``;`` comments)."""
    found: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
            continue
        if inside and "=" in line:
            name, _, value = line.partition("=")
            found.append((name.strip(), value.strip()))
    return found


def _loader(value: str) -> Callable[[], object]:
    """``module``, ``module:attr.attr`` (extras in brackets ignored), loaded on call as ``EntryPoint.load`` does."""
    target = value.split("[", 1)[0].strip()
    module_name, _, attrs = target.partition(":")

    def load() -> object:
        obj: object = importlib.import_module(module_name.strip())
        for attr in filter(None, attrs.strip().split(".")):
            obj = getattr(obj, attr)
        return obj

    return load


def _scan(group: str) -> list[tuple[str, str]] | None:
    """Pairs from every distribution on ``sys.path``; None when a path entry is not a plain directory."""
    from importlib.machinery import PathFinder

    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return None  # a custom finder may provide distributions of its own
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for entry in sys.path:
        entry = entry or "."
        try:
            names = sorted(os.listdir(entry))
        except NotADirectoryError:
            return None  # a zip or egg file on sys.path: let importlib.metadata read it
        except OSError:
            continue
        for dist_dir in names:
            if not dist_dir.endswith(_SUFFIXES):
                continue
            key = _normalise(dist_dir)
            if key in seen:
                continue
            seen.add(key)
            try:
                with open(os.path.join(entry, dist_dir, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read(1 << 20)
            except (OSError, UnicodeDecodeError):
                continue
            found.extend(_parse(text, group))
    return found


def entry_points(group: str) -> list[tuple[str, str, Callable[[], object]]]:
    """``(name, value, load)`` for each entry point of ``group`` installed on ``sys.path``."""
    pairs = _scan(group)
    if pairs is None:
        from importlib.metadata import entry_points as metadata_entry_points

        return [(ep.name, ep.value, ep.load) for ep in metadata_entry_points(group=group)]
    return [(name, value, _loader(value)) for name, value in pairs]
