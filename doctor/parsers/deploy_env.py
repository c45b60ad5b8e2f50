"""``NAME=value`` environment settings in deployment files: systemd units, compose files, manifests, docker -e.

Samples of what is recognised (one setting each)::

    Environment="NCCL_IB_DISABLE=1" NCCL_DEBUG=INFO        # systemd unit (several per line)
    docker run -e NCCL_P2P_DISABLE=1 --env=FOO=bar ...     # docker command line
      - NCCL_IB_HCA=mlx5_0                                 # compose environment list
      NCCL_SOCKET_IFNAME: eth0                             # compose environment map
    - name: NCCL_IB_GID_INDEX                              # Kubernetes env entry
      value: "3"

Comment lines (``#``, ``;``) are skipped.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator

from doctor.facts.deploy import DeployFile
from doctor.lazyre import lazy

_UNIT_ENV = lazy(r"^\s*Environment\s*=\s*(.*)$")
_ASSIGN = lazy(r"""^["']?([A-Za-z_][A-Za-z0-9_]*)=(.*?)["']?$""")
_COMPOSE_LIST = lazy(r"""^\s*-\s*["']?([A-Za-z_][A-Za-z0-9_]*)=([^"'#]*)["']?\s*(#.*)?$""")
_COMPOSE_MAP = lazy(r"""^\s+([A-Z_][A-Z0-9_]*):\s*["']?([^"'#]*?)["']?\s*(#.*)?$""")
_K8S_NAME = lazy(r"""^\s*-?\s*name:\s*["']?([A-Za-z_][A-Za-z0-9_]*)["']?\s*$""")
_K8S_VALUE = lazy(r"""^\s*value:\s*["']?(.*?)["']?\s*$""")
_DOCKER_E = lazy(r"""(?:^|\s)(?:-e|--env)[ =]["']?([A-Za-z_][A-Za-z0-9_]*)=([^\s"']*)""")


def split_unit_env(value: str) -> Iterator[tuple[str, str]]:
    """The assignments of one systemd ``Environment=`` value (shell-like quoting)."""
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    for word in words:
        match = _ASSIGN.match(word)
        if match:
            yield match.group(1), match.group(2)


def deploy_env(files: Iterable[DeployFile]) -> list[tuple[str, str, str]]:
    """``(name, value, file)`` for every environment setting found in deployment files."""
    out: list[tuple[str, str, str]] = []
    for df in files:
        lines = df.text.splitlines()
        for i, line in enumerate(lines):
            if line.lstrip().startswith(("#", ";")):
                continue
            # each pattern is tried only on lines holding its literal part (most unit lines hold none)
            unit = _UNIT_ENV.match(line) if "Environment" in line else None
            if unit:
                out.extend((k, v, df.path) for k, v in split_unit_env(unit.group(1)))
                continue
            if "-e" in line:
                for match in _DOCKER_E.finditer(line):
                    out.append((match.group(1), match.group(2), df.path))
            listed = _COMPOSE_LIST.match(line) if "=" in line and "-" in line else None
            if listed:
                out.append((listed.group(1), listed.group(2).strip(), df.path))
                continue
            name = _K8S_NAME.match(line) if "name:" in line else None
            if name and i + 1 < len(lines):
                value = _K8S_VALUE.match(lines[i + 1])
                if value:
                    out.append((name.group(1), value.group(1), df.path))
                continue
            mapped = _COMPOSE_MAP.match(line) if ":" in line else None
            if mapped and mapped.group(2):
                out.append((mapped.group(1), mapped.group(2).strip(), df.path))
    return out
