"""Parsers for ``sysctl -a`` output and ``/etc/sysctl.conf`` / ``/etc/sysctl.d/*.conf`` files.

``sysctl -a`` sample (sosreport ``sos_commands/kernel/sysctl_-a``)::

    net.core.rmem_max = 212992
    net.ipv4.tcp_rmem = 4096\t131072\t6291456
    sysctl: permission denied on key 'fs.protected_fifos'
    vm.swappiness = 60

``sysctl.d`` sample::

    # Increase socket buffers
    net.core.rmem_max = 268435456
    ; legacy comment style
    -net.ipv4.tcp_mtu_probing = 1

Values have whitespace runs collapsed to one space (``"4096 131072 6291456"``).
"""

from __future__ import annotations

from doctor.lazyre import lazy

__all__ = ["parse_sysctl_a", "parse_sysctl_conf"]

_WS_RE = lazy(r"\s+")
_KEY_RE = lazy(r"^[A-Za-z0-9_][A-Za-z0-9_.*/:\-]*$")


def _collapse(value: str) -> str:
    return _WS_RE.sub(" ", value).strip()


def _split(line: str) -> tuple[str, str] | None:
    key, sep, value = line.partition("=")
    if not sep:
        return None
    key = key.strip()
    if not key or not _KEY_RE.match(key):
        return None
    return key, _collapse(value)


def parse_sysctl_a(text: str) -> dict[str, str]:
    """Parse ``sysctl -a`` into ``{key: value}``; error lines (``sysctl: ...``) are skipped.

    Keys are kept as printed (dotted form; ``sysctl -a`` prints ``/`` inside a component as
    ``.`` already, e.g. ``net.ipv4.conf.eth0/100`` stays verbatim). Never raises.
    """
    result: dict[str, str] = {}
    if not isinstance(text, str):
        return result
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("sysctl:") or line.startswith("#"):
            continue
        kv = _split(line)
        if kv is not None:
            result[kv[0]] = kv[1]
    return result


def parse_sysctl_conf(text: str) -> dict[str, str]:
    """Parse a sysctl.conf-format file; ``#``/``;`` comments, ``-`` (ignore-errors) prefix.

    Later assignments win, as with ``sysctl --system`` within one file. Slash-separated keys
    (``net/ipv4/ip_forward``) are converted to the dotted form. Never raises.
    """
    result: dict[str, str] = {}
    if not isinstance(text, str):
        return result
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("-"):
            line = line[1:].lstrip()
        kv = _split(line)
        if kv is None:
            continue
        key, value = kv
        if "/" in key and "." not in key:
            key = key.replace("/", ".")
        result[key] = value
    return result
