"""Consistent redaction of hostnames, addresses, MACs, serials and UUIDs.

The same value of the same kind always maps to the same placeholder (``host-1``, ``ip-1``, ``mac-1``,
``serial-1``, ``uuid-1``, ``guid-1``, ``id-1``) for as long as the same map file is used (a host
named like a GPU UUID is ``host-1`` in host fields and the UUID ``uuid-1`` in the GPU's); the map
(placeholder -> original) is written to its own file with mode 0600 and never into an output.
Known values (hostname, serials, machine-id, MACs) are found first from the data itself; shapes
(IPv4, IPv6 and GIDs, MACs, UUIDs, InfiniBand GUIDs) are caught by pattern everywhere else.
PCI addresses, versions and sysctl values are left alone.

Redaction works on data, never on the tool's words: a result is redacted field by field, by what
each field holds (:data:`TOOL_KEYS` are the tool's own words and are never touched; prose fields
get only unmistakable values), before anything is rendered. A value such as ``high``, ``gpu`` or
``PCIe`` that could be a word of the tool's text is replaced only where the data says it is an
identity: in identity fields (the source's and inventory's host name, machine-id, serials, UUIDs),
as a fix parameter naming the node, and in host syntax (``//NAME``, ``user@NAME``, ``NAME:port``,
``--host NAME``, ``MASTER_ADDR=NAME``). Other values are replaced as whole names (never inside a
longer name such as ``gpu-node-doctor`` or ``mlx5_0``) in data and prose alike.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from doctor.errors import DoctorError
from doctor.lazyre import lazy
from doctor.safe_open import read_text
from doctor.secrets import mask_data

MAP_FORMAT = "gpu-node-doctor redaction map"
DEFAULT_MAP = "gnd-redact-map.json"

_HEX_COLON = "0-9A-Fa-f:"
#: MAC (6 octets) and InfiniBand hardware addresses (20 octets)
MAC_RE = lazy(rf"(?<![{_HEX_COLON}])[0-9A-Fa-f]{{2}}(?::[0-9A-Fa-f]{{2}}){{5,19}}(?![{_HEX_COLON}])")
#: MACs written with dashes (``aa-bb-cc-dd-ee-ff``) or as three dotted groups (``aabb.ccdd.eeff``)
MAC_DASH_RE = lazy(r"(?<![0-9A-Za-z-])[0-9A-Fa-f]{2}(?:-[0-9A-Fa-f]{2}){5}(?![0-9A-Za-z-])")
MAC_DOT_RE = lazy(r"(?<![0-9A-Za-z.])[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}(?![0-9A-Za-z.])")
#: a MAC in the spellings that are also other numbers (``0x02abcd001122``, ``02 ab cd 00 11 22``, bare hex):
#: by shape only after a word that says it is one (``Base MAC:``, ``HWaddr``, ``lladdr``); a known MAC
#: is replaced in them everywhere (:func:`_spellings`)
MAC_SAID_RE = lazy(r"(?i)(?<![A-Za-z0-9_])(?:mac|hw ?addr(?:ess)?|ether|lladdr|(?:base|permanent|port) address)"
                   r"(?![A-Za-z0-9_])[^\n0-9A-Fa-f]{0,16}?((?:0x)?[0-9A-Fa-f]{12}|[0-9A-Fa-f]{2}(?: [0-9A-Fa-f]{2}){5})"
                   r"(?![0-9A-Za-z:.-])")
#: a GPU or MIG UUID written as 32 bare hex digits after its prefix (``GPU-e51a1391...``)
UUID_BARE_RE = lazy(r"(?i)(?<![0-9A-Za-z])(?:GPU|MIG)-([0-9A-F]{32})(?![0-9A-Za-z])")
UUID_RE = lazy(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
               r"(?![0-9A-Fa-f])")
#: IPv6 candidates: a whole run of hex digits, colons and dots (validated with :mod:`ipaddress`, which
#: PCI addresses fail). One bounded repeat, so a hostile ``a:a:a:...`` line costs linear time.
IPV6_RE = lazy(r"(?<![0-9A-Za-z:.])[0-9A-Fa-f:.]{2,64}(?![0-9A-Za-z:])")
GUID_RE = lazy(rf"(?<![{_HEX_COLON}])[0-9A-Fa-f]{{4}}(?::[0-9A-Fa-f]{{4}}){{3}}(?![{_HEX_COLON}])")
IPV4_RE = lazy(r"(?<![0-9.])(?:\d{1,3}\.){3}\d{1,3}(?![0-9]|\.\d)")
#: ``Device Serial Number 12-34-...`` in lspci, ``[SN] Serial number: X`` in VPD
LSPCI_SERIAL_RE = lazy(r"((?:Device Serial Number|\[SN\] Serial number:)\s+)(\S+)")
XML_TAG_RE = lazy(r"<(serial|uuid|board_id|module_id|gpu_module_id)>\s*([^<\s][^<]*?)\s*</\1>")

#: ``Serial Number : X`` / ``GPU UUID : GPU-...`` in ``nvidia-smi -q`` text
NVSMI_TEXT_RE = lazy(r"^\s*(Serial Number|GPU UUID|Board ID)\s*:\s*(\S+)\s*$", re.MULTILINE)
#: Placeholder prefix per kind of value
PREFIX = {"host": "host", "ip": "ip", "mac": "mac", "serial": "serial", "uuid": "uuid", "guid": "guid",
          "id": "id"}
#: Kinds replaced as literal words (the others are caught by their shape everywhere)
LITERAL_KINDS = ("host", "serial", "id")
PLACEHOLDER_RE = lazy(r"^(host|ip|mac|serial|uuid|guid|id)-(\d+)$")

#: Files whose whole (stripped) content is an identity to redact, by kind
IDENTITY_FILES: dict[str, str] = {
    "etc/hostname": "host", "proc/sys/kernel/hostname": "host", "etc/machine-id": "id",
    "var/lib/dbus/machine-id": "id", "sys/class/dmi/id/product_serial": "serial",
    "sys/class/dmi/id/board_serial": "serial", "sys/class/dmi/id/chassis_serial": "serial",
    "sys/class/dmi/id/product_uuid": "uuid",
}
IDENTITY_GLOBS: dict[str, str] = {"sys/class/net/*/address": "mac", "sys/class/infiniband/*/node_guid": "guid",
                                  "sys/class/infiniband/*/sys_image_guid": "guid"}
#: Values never worth redacting (placeholders for "unset")
_BORING = {"", "0", "none", "n/a", "not specified", "to be filled by o.e.m.", "default string", "(null)",
           "00:00:00:00:00:00", "0000:0000:0000:0000", "unknown", "not available", "[n/a]"}


def _boring_ip(text: str) -> bool:
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return True
    if addr.is_loopback or addr.is_unspecified:
        return True
    if addr.version == 6 and int(addr) & ((1 << 64) - 1) == 0:  # a prefix such as fe80::, not a host
        return True
    return addr.version == 4 and text.startswith(("255.", "0."))


#: Characters that continue a name: a known value is never replaced inside a longer name
_NAME_BEFORE = r"(?<![A-Za-z0-9_])"
_NAME_AFTER = r"(?![A-Za-z0-9_])"
#: Where a word-like value (``high``, ``nvidia``) is a host by syntax: the value of a host-naming key
#: or flag just before it (``--host X``, ``MASTER_ADDR=X``, ``hostname: X``); a bare key before a space
#: is a word of prose (``node 0`` is a NUMA node), a flag before one is not; of the keys that say
#: ``node`` only those naming it (``nodeName:``, ``--node-name``), not ``--cpunodebind=0`` or ``numa_node=1``
_HOST_KEY = lazy(r"(?:^|[^A-Za-z0-9_-])(?:-{1,2}[A-Za-z0-9_-]*(?i:host|node[-_]?name|addr|server|peer|master|endpoint)"
                 r"[A-Za-z0-9_-]*(?:=|:[ \t]*|[ \t]+)|[A-Za-z0-9_-]*(?i:host|node[-_]?name|addr|server|peer|master|endpoint)"
                 r"[A-Za-z0-9_-]*(?:=|:[ \t]*))$")
#: ``:port`` after a host (not the ``:18:00.0`` of a PCI address or a time)
_PORT = lazy(r":\d{1,5}(?![0-9A-Za-z:.])")
_MAC_SEPARATORS = str.maketrans("", "", ":-. ")
_BARE_MAC = lazy(r"[0-9a-f]{12}")
_GUIDISH = lazy(r"(?:0x)?([0-9a-f]{4}):?([0-9a-f]{4}):?([0-9a-f]{4}):?([0-9a-f]{4})")
_UUIDISH = lazy(r"(?:gpu-|mig-)?\{?([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})\}?")


def _canonical(value: str, kind: str) -> str:
    """The spelling every other spelling of ``value``, a ``kind`` of value, maps to: a MAC as
    ``aa:bb:cc:dd:ee:ff`` (from dashes, Cisco dots, blanks, bare hex or a ``0x`` prefix), a UUID as
    lower-case dashed hex (from ``GPU-``/``MIG-`` prefixes, braces, upper case or bare 32 hex digits),
    an InfiniBand GUID as ``xxxx:xxxx:xxxx:xxxx`` (from ibstat's ``0x`` form or bare 16 hex digits);
    anything else (a host name, serial, id, address) stripped and lower-cased."""
    key = value.strip().lower()
    if kind == "uuid" and (m := _UUIDISH.fullmatch(key)):
        return "-".join(m.groups())
    if kind == "guid" and (m := _GUIDISH.fullmatch(key)) and (key.count(":") == 3 or ":" not in key):
        return ":".join(m.groups())
    if kind == "mac":
        bare = key.removeprefix("0x").translate(_MAC_SEPARATORS)
        if _BARE_MAC.fullmatch(bare):
            return ":".join(bare[i:i + 2] for i in range(0, 12, 2))
    return key


def _spellings(kind: str, key: str) -> tuple[str, ...]:
    """Every spelling of a canonical ``key`` of ``kind`` written as a literal (the separated ones also go
    by shape)."""
    if kind == "uuid" and (m := _UUIDISH.fullmatch(key)) and "-" in key:
        return (key, "".join(m.groups()))
    if kind == "guid" and (m := _GUIDISH.fullmatch(key)) and key.count(":") == 3:
        bare = "".join(m.groups())
        return (key, bare, "0x" + bare)
    if kind == "mac" and len(key) == 17 and _BARE_MAC.fullmatch(key.replace(":", "")):
        bare = key.replace(":", "")
        return (key, key.replace(":", "-"), f"{bare[:4]}.{bare[4:8]}.{bare[8:]}", bare, "0x" + bare,
                key.replace(":", " "))
    return (key,)


#: Which kind a known value found in text is taken for when several kinds hold it (a host named like a
#: GPU's UUID): its shape first, a host in host syntax (:meth:`Redactor._literals` ``words=True``)
KIND_ORDER = ("uuid", "mac", "guid", "ip", "host", "serial", "id")
HOST_FIRST = ("host", *(k for k in KIND_ORDER if k != "host"))


def wordlike(value: str, kind: str = "host") -> bool:
    """Whether ``value`` could be a word of the tool's own text or of other data (``high``, ``PCIe``,
    ``x16``, ``mlx5``, ``高``, a short number): such a value is replaced only where the data says it
    is an identity. A host name is word-like unless it has parts (``gpu-node-13``, ``n7.example.com``);
    a serial or id unless it has a digit and is not a short number."""
    text = value.strip()
    if kind == "host":
        return not any(sep in text.strip(".-") for sep in ".-")
    return text.isalpha() or (text.isdigit() and len(text) < 6)


#: A whole name in text: the run a match must not be only part of when the run is the tool's word
_RUN = lazy(r"[A-Za-z0-9_.-]+")
#: How the tool's own fields are cut into words (:meth:`Redactor.protect`)
_WORD_SPLIT = lazy(r"[^A-Za-z0-9_.-]+")


class Redactor:
    """Maps sensitive values to stable placeholders; ``text()`` redacts one string of data,
    ``field()`` one identity field, ``prose()`` one sentence of the tool's with values in it."""

    def __init__(self, placeholders: dict[str, str] | None = None) -> None:
        #: (kind, canonical original) -> placeholder: one value of two kinds (a host named like a GPU's
        #: UUID) has a placeholder of each kind
        self.original: dict[tuple[str, str], str] = {}
        self.shown: dict[str, str] = {}  # placeholder -> original as first seen (case kept, for the map)
        self.counts: dict[str, int] = dict.fromkeys(PREFIX, 0)
        self.changed = False
        self._literal: dict[bool, re.Pattern[str] | None] = {}
        #: per pass of :meth:`_literals`: each literal (lower case) -> the kinds it is known as there, in
        #: the order a match is taken for them
        self._literal_kinds: dict[bool, dict[str, tuple[str, ...]]] = {}
        #: the map file new placeholders are allocated in (under its lock), when there is one
        self.store: MapFile | None = None
        #: the tool's own words (lower case): a known value equal to one is word-like, and a name
        #: inside one (``gpu-node`` in ``gpu-node-doctor``) is left alone
        self.vocabulary: set[str] = {"gpu-node-doctor", "gnd"}
        for placeholder, value in (placeholders or {}).items():
            m = PLACEHOLDER_RE.match(placeholder)
            if not m or not isinstance(value, str):
                continue
            self.original[(m.group(1), _canonical(value, m.group(1)))] = placeholder
            self.shown[placeholder] = value.strip()
            self.counts[m.group(1)] = max(self.counts[m.group(1)], int(m.group(2)))

    def find(self, value: str, kinds: Iterable[str] = KIND_ORDER) -> str | None:
        """The placeholder ``value`` has as the first of ``kinds`` that holds it, else None."""
        return next((p for kind in kinds if (p := self.original.get((kind, _canonical(value, kind)))) is not None),
                    None)

    def placeholder(self, value: str, kind: str) -> str:
        """The placeholder for ``value`` as a ``kind`` of value (allocated on first sight)."""
        key = (kind, _canonical(value, kind))
        found = self.original.get(key)
        if found is None and self.store is not None:
            return self.store.allocate(self, value, kind)
        if found is None:
            self.counts[kind] += 1
            found = f"{PREFIX[kind]}-{self.counts[kind]}"
            self.original[key] = found
            self.shown[found] = value.strip()
            self.changed = True
            self._literal, self._literal_kinds = {}, {}
        return found

    def learn(self, value: object, kind: str) -> None:
        """Register a known value (hostname, serial ...) so it is replaced wherever it appears."""
        if not isinstance(value, str):
            return
        value = value.strip()
        if not value or PLACEHOLDER_RE.match(value) or kind != "host" and value.lower() in _BORING:
            return  # a host name is replaced even when it reads "unknown": it is where the data says
        if kind == "uuid" and value.upper().startswith(("GPU-", "MIG-")):
            value = value[4:]
        if kind in ("serial", "id") and len(value) < 3:
            return
        self.placeholder(value, kind)
        if kind == "host" and "." in value and not _looks_ip(value):
            labels = [label for label in value.split(".") if label]
            self.placeholder(labels[0], kind)
            for i in range(1, len(labels) - 1):  # the domain and its parents (corp.example.com, example.com)
                self.placeholder(".".join(labels[i:]), kind)

    def merge(self, other: Redactor) -> None:
        """Take the placeholders ``other`` (the map as another run left it) holds and this one lacks."""
        for key, placeholder in other.original.items():
            if self.original.setdefault(key, placeholder) == placeholder:
                self.shown.setdefault(placeholder, other.shown.get(placeholder, key[1]))
        for kind, count in other.counts.items():
            self.counts[kind] = max(self.counts[kind], count)
        self._literal, self._literal_kinds = {}, {}

    def mapping(self) -> dict[str, str]:
        """placeholder -> original, for the map file."""
        return {p: self.shown.get(p, o[1]) for o, p in sorted(self.original.items(), key=lambda kv: _sort_key(kv[1]))}

    def _literals(self, words: bool) -> re.Pattern[str] | None:
        """Known values as literals: names (``words=False``), or (``words=True``) word-like values and every
        host name, for where the text is host syntax (there a host name is the host's, whatever its shape)."""
        if words not in self._literal:
            keys = [(kind, k) for (kind, k), p in self.original.items() if kind in LITERAL_KINDS + ("uuid", "mac", "guid")
                    and ((wordlike(self.shown.get(p, k), kind) or k in self.vocabulary) == words
                         or words and kind == "host")]
            order = HOST_FIRST if words else KIND_ORDER
            kinds: dict[str, list[str]] = {}
            for kind, k in keys:
                for spelling in _spellings(kind, k):
                    kinds.setdefault(spelling.lower(), []).append(kind)
            self._literal_kinds[words] = {w: tuple(sorted(ks, key=order.index)) for w, ks in kinds.items()}
            spelt = sorted({s for kind, k in keys for s in _spellings(kind, k)}, key=len, reverse=True)
            # names shorter than 3 characters match in their own case only ("n1", not every "N1" in prose)
            long_words = "|".join(map(re.escape, (w for w in spelt if len(w) >= 3)))
            short = [re.escape(self.shown.get(self.find(w) or "", w)) for w in spelt if len(w) < 3]
            alternatives = "|".join(([f"(?i:{long_words})"] if long_words else []) + short)
            self._literal[words] = re.compile(f"{_NAME_BEFORE}({alternatives}){_NAME_AFTER}") if alternatives else None
        return self._literal[words]

    def protect(self, texts: Iterable[str]) -> None:
        """Add the words of ``texts`` (the tool's own fields: check ids and titles, categories) to
        :attr:`vocabulary`."""
        for text in texts:
            self.vocabulary.update(w.lower().strip(".") for w in _WORD_SPLIT.split(text) if w.strip("."))
        self._literal, self._literal_kinds = {}, {}

    def _swap(self, m: re.Match[str], words: bool = False) -> str:
        """The placeholder of the literal matched in pass ``words`` of :meth:`_literals`, as the kind it is
        known as there (a host first in host syntax; a serial, not a host of one-part name, elsewhere)."""
        run = _RUN.search(m.string, max(0, m.start() - 256), m.end() + 256)
        while run is not None and run.end() < m.end():
            run = _RUN.search(m.string, run.end(), m.end() + 256)
        if run is not None and run.start() <= m.start() and run.group(0).lower().strip(".") in self.vocabulary:
            return m.group(0)  # part of one of the tool's words
        kinds = self._literal_kinds.get(words, {}).get(m.group(1).lower()) or (HOST_FIRST if words else KIND_ORDER)
        return self.find(m.group(1), kinds) or m.group(1)

    def text(self, text: str) -> str:
        """A string of data (evidence, argv, a file) with every known value and every address, MAC,
        UUID and GUID shape replaced; a word-like value (``high``) only where it is a host by syntax."""
        return self.prose(text, keys=True)

    def prose(self, text: str, keys: bool = False) -> str:
        """A sentence of the tool's own words with values in it: names that cannot be words of the
        tool's text and shapes (addresses, MACs, UUIDs) are replaced; word-like values only after
        ``@`` or ``//`` and before ``:port`` (and, in data, ``keys``: after ``--host``, ``ADDR=`` ...)."""
        if not text:
            return text
        host_syntax = self._literals(True)
        if host_syntax is not None:
            text = host_syntax.sub(lambda m: self._swap(m, True) if _host_syntax(m, keys) else m.group(0), text)
        text = UUID_BARE_RE.sub(lambda m: m.group(0)[:4] + self.placeholder(m.group(1), "uuid"), text)
        text = MAC_SAID_RE.sub(lambda m: m.group(0)[:m.start(1) - m.start(0)] + self.placeholder(m.group(1), "mac"),
                               text)
        text = MAC_RE.sub(lambda m: self.placeholder(m.group(0), "mac"), text)
        text = MAC_DASH_RE.sub(lambda m: self.placeholder(m.group(0), "mac"), text)
        text = MAC_DOT_RE.sub(lambda m: self.placeholder(m.group(0), "mac"), text)
        text = UUID_RE.sub(lambda m: self.placeholder(m.group(0), "uuid"), text)
        text = IPV6_RE.sub(self._ipv6, text)
        text = GUID_RE.sub(lambda m: self.placeholder(m.group(0), "guid"), text)
        text = IPV4_RE.sub(self._ipv4, text)
        text = LSPCI_SERIAL_RE.sub(lambda m: m.group(1) + self._serial(m.group(2)), text)
        literals = self._literals(False)  # after the shapes: a name never cuts an address in two
        return literals.sub(self._swap, text) if literals is not None else text

    def field(self, value: str, kind: str | None = None) -> str:
        """An identity field (a host name, serial, UUID, node name) holding a ``kind`` of value: its
        placeholder when the whole value is a known one of that kind (of any kind when not given),
        word-like or not; else redacted as data."""
        found = self.find(value, (kind,) if kind else KIND_ORDER) if value.strip() else None
        return found if found is not None else self.text(value)

    def _serial(self, value: str) -> str:
        return value if PLACEHOLDER_RE.match(value) else self.placeholder(value, "serial")

    def _ipv6(self, m: re.Match[str]) -> str:
        raw = m.group(0)
        cand = raw.rstrip(".")
        if cand.count(":") < 2 or _boring_ip(cand):
            return raw
        try:
            addr = ipaddress.IPv6Address(cand)
        except ValueError:
            return raw
        rest = raw[len(cand):]
        if addr.ipv4_mapped is not None:  # RoCE v2 IPv4 GID: keep the shape, share the IPv4 placeholder
            return "::ffff:" + self.placeholder(str(addr.ipv4_mapped), "ip") + rest
        if addr.is_link_local:
            return "fe80::" + self.placeholder(str(addr), "ip") + rest
        return self.placeholder(str(addr), "ip") + rest

    def _ipv4(self, m: re.Match[str]) -> str:
        raw = m.group(0)
        try:
            ipaddress.IPv4Address(raw)
        except ValueError:
            return raw
        return raw if _boring_ip(raw) else self.placeholder(raw, "ip")

    def value(self, obj: Any) -> Any:
        """Redact every string (and mapping key) inside a JSON-like value."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, list):
            return [self.value(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.value(v) for v in obj)
        if isinstance(obj, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in obj.items()}
        return obj


def _host_syntax(m: re.Match[str], keys: bool = True) -> bool:
    """Whether the value matched at ``m`` stands where a host name does: after ``//`` or ``@``,
    before ``:port`` (not inside a path, nor a PCI address), or (``keys``) as the value of a
    host-naming key or flag."""
    text, start, end = m.string, m.start(), m.end()
    before = text[max(0, start - 2):start]
    if before.endswith("@") or before == "//":
        return True
    if _PORT.match(text, end) and not before.endswith(("/", ".")):
        return True
    return keys and _HOST_KEY.search(text[max(0, start - 80):start]) is not None


def _looks_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _sort_key(placeholder: str) -> tuple[str, int]:
    m = PLACEHOLDER_RE.match(placeholder)
    return (m.group(1), int(m.group(2))) if m else (placeholder, 0)


# ---------------------------------------------------------------------------------------------
# map file
# ---------------------------------------------------------------------------------------------

def load_map(path: str | None) -> Redactor:
    """A redactor continuing the map at ``path`` (empty when the file does not exist yet)."""
    if not path or not os.path.lexists(path):
        return Redactor()
    try:
        data = json.loads(read_text(path, "redaction map"))
    except ValueError as exc:
        raise DoctorError(f"cannot read redaction map {path}: {exc}") from None
    except RecursionError:
        raise DoctorError(f"cannot read redaction map {path}: nested too deeply") from None
    if not isinstance(data, dict) or data.get("format") != MAP_FORMAT or not isinstance(data.get("map"), dict):
        raise DoctorError(f"{path} is not a gnd redaction map")
    return Redactor({str(k): v for k, v in data["map"].items()})


def save_map(redactor: Redactor, path: str) -> None:
    """Write the map (placeholder -> original) with mode 0600, atomically: a reader sees the old map or
    the new one, never half of one. A link or anything but a regular file at ``path`` is refused."""
    body = json.dumps({"format": MAP_FORMAT, "version": 1,
                       "note": "Private: maps the placeholders in redacted gnd outputs back to real values.",
                       "map": redactor.mapping()}, indent=2) + "\n"
    folder = os.path.dirname(path) or "."
    try:
        if os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode):
            raise DoctorError(f"cannot write redaction map {path}: not a regular file")
        fd, temp = tempfile.mkstemp(prefix=".gnd-redact-", dir=folder)  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())  # the new map is on disk before its name replaces the old one
            os.replace(temp, path)  # replaces a name, never follows a link there
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    except OSError as exc:
        raise DoctorError(f"cannot write redaction map {path}: {exc.strerror}") from None
    redactor.changed = False


class MapFile:
    """A redaction map shared by runs that may overlap (one map for a fleet's reports): each new
    placeholder is allocated under an exclusive lock on the map's folder, after taking what other
    runs added, and the map is rewritten before the lock is released, so two values never share a
    placeholder and no run's additions are lost."""

    def __init__(self, path: str) -> None:
        self.path = path

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import fcntl

        folder = os.path.dirname(self.path) or "."
        try:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise DoctorError(f"cannot lock redaction map {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def allocate(self, redactor: Redactor, value: str, kind: str) -> str:
        """The placeholder of ``value``: the one another run gave it, else the next free one."""
        with self._locked():
            redactor.merge(load_map(self.path))
            store, redactor.store = redactor.store, None
            try:
                found = redactor.placeholder(value, kind)
            finally:
                redactor.store = store
            save_map(redactor, self.path)
        return found

    def sync(self, redactor: Redactor) -> None:
        """Write ``redactor``'s map, with what other runs added meanwhile."""
        with self._locked():
            redactor.merge(load_map(self.path))
            save_map(redactor, self.path)


def open_map(path: str) -> Redactor:
    """A redactor continuing the map at ``path`` that allocates through :class:`MapFile`."""
    redactor = load_map(path)
    redactor.store = MapFile(path)
    return redactor


def default_map_path(output: str | None) -> str:
    """``<output>.redact-map.json`` next to the output, else ``gnd-redact-map.json`` here."""
    return f"{output}.redact-map.json" if output and output != "-" else DEFAULT_MAP


def _note(path: str) -> None:
    print(f"gnd: redaction map written to {path} (keep it private; it is not part of the output)",
          file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------

def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


#: The tool's own words in a result, per kind of object: never redacted (severities, check ids and
#: titles, categories, references, builder names, the schema). Unlisted keys are data.
TOOL_KEYS: dict[str, frozenset[str]] = {
    "result": frozenset({"schema_version", "tool", "generated_at", "duration_s", "summary", "redacted"}),
    "check": frozenset({"id", "title", "category", "plugin", "status", "findings", "duration_ms"}),
    "finding": frozenset({"severity", "check", "category", "rank", "confidence", "references"}),
    "impact": frozenset({"score", "source"}),
    "fix": frozenset({"builder"}),
    "step": frozenset({"phase", "kind", "unattended", "key"}),
}
#: Sentences of the tool's with values in them: only unmistakable values are replaced (:meth:`Redactor.prose`)
PROSE_KEYS: dict[str, frozenset[str]] = {
    "check": frozenset({"reason", "detail"}), "finding": frozenset({"title", "detail"}),
    "impact": frozenset({"text", "basis"}), "fix": frozenset({"notes"}), "step": frozenset({"description"}),
}
#: Identity fields: the whole value is an identity, word-like or not (:meth:`Redactor.field`)
IDENTITY_FIELDS: dict[str, frozenset[str]] = {
    "source": frozenset({"hostname", "machine_id"}),
    "host": frozenset({"hostname", "machine_id", "board_serial", "product_serial", "product_uuid"}),
    "gpu": frozenset({"serial", "uuid", "board_id"}),
}
#: The kind of value each identity field holds (its placeholder's kind)
FIELD_KINDS: dict[str, str] = {"hostname": "host", "machine_id": "id", "board_serial": "serial",
                               "product_serial": "serial", "product_uuid": "uuid", "serial": "serial",
                               "uuid": "uuid", "board_id": "serial", "node": "host"}
#: Fix parameters that name this node (the kubelet builder's ``node``): identity fields too, and so
#: is an argv word of the same fix equal to one of them
HOST_PARAMS = frozenset({"node"})
#: Evidence read from these files is an identity as a whole
IDENTITY_EVIDENCE = frozenset(IDENTITY_FILES)


def learn_result(redactor: Redactor, data: dict[str, Any]) -> None:
    """Register the identities a result names (hostname, machine-id, board and GPU serials/UUIDs)."""
    from doctor.derived.digest import is_identity

    source = _obj(data.get("source"))
    inv = _obj(data.get("inventory"))
    host = _obj(inv.get("host"))
    redactor.learn(source.get("hostname"), "host")
    redactor.learn(source.get("machine_id"), "id")
    redactor.learn(host.get("hostname"), "host")
    redactor.learn(host.get("machine_id"), "id")
    redactor.learn(host.get("board_serial"), "serial")
    for gpu in inv.get("gpus") or []:
        if isinstance(gpu, dict):
            redactor.learn(gpu.get("serial"), "serial")
            redactor.learn(gpu.get("uuid"), "uuid")
    for key, value in _obj(inv.get("digest")).items():
        if isinstance(key, str) and is_identity(key) and (kind := _digest_kind(key)) is not None:
            redactor.learn(value, kind)
    learn_shapes(redactor, data)


def _digest_kind(key: str) -> str | None:
    """The kind of identity a digest key holds (None: an address or path, found by its shape)."""
    if key == "cmdline.root" or key.endswith(".addr"):
        return None
    return "host" if key == "host.hostname" else "uuid" if key.endswith(".uuid") else \
        "id" if key == "host.machine_id" else "serial"


#: Shapes that say what a value is wherever it stands (a MAC, a UUID): learnt from the whole result
#: before any of it is redacted, so the spellings that are also other numbers (a bare or ``0x`` MAC,
#: a UUID without dashes) are replaced wherever the same value is written
_SHAPES = (("mac", MAC_RE), ("mac", MAC_DASH_RE), ("mac", MAC_DOT_RE), ("uuid", UUID_RE))


def learn_shapes(redactor: Redactor, data: Any) -> None:
    """Register every MAC and UUID written in a separated spelling anywhere in ``data``."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            for kind, pattern in _SHAPES:
                for m in pattern.finditer(item):
                    redactor.learn(m.group(0), kind)
        elif isinstance(item, dict):
            stack.extend(item.values())
            stack.extend(k for k in item if isinstance(k, str))
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def _identity_dict(redactor: Redactor, obj: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    return {redactor.text(k): redactor.field(v, FIELD_KINDS.get(k)) if k in keys and isinstance(v, str)
            else redactor.value(v) for k, v in obj.items()}


def _kind(redactor: Redactor, obj: Any, kind: str) -> Any:
    """``obj`` (a ``kind`` object of the result) redacted key by key, by what each key holds."""
    if not isinstance(obj, dict):
        return redactor.value(obj)
    tool, prose = TOOL_KEYS.get(kind, frozenset()), PROSE_KEYS.get(kind, frozenset())
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if key in tool:
            out[key] = value
        elif key in prose and isinstance(value, str):
            out[key] = redactor.prose(value)
        elif kind == "finding" and key in ("impact", "fix") or kind == "fix" and key == "steps":
            child = {"impact": "impact", "fix": "fix", "steps": "step"}[key]
            out[key] = [_kind(redactor, v, child) for v in value] if isinstance(value, list) else \
                _kind(redactor, value, child)
        elif kind == "finding" and key == "evidence" and isinstance(value, list):
            out[key] = [_evidence(redactor, e) for e in value]
        elif kind == "fix" and key == "params" and isinstance(value, dict):
            out[key] = _identity_dict(redactor, value, HOST_PARAMS)
        else:
            out[key] = redactor.value(value)
    if kind == "fix":
        _host_argv(redactor, obj, out)
    return out


def _evidence(redactor: Redactor, item: Any) -> Any:
    if not isinstance(item, dict):
        return redactor.value(item)
    kind = IDENTITY_FILES.get(str(item.get("source", "")).lstrip("/"))
    return {k: redactor.field(v, kind) if kind and k == "value" and isinstance(v, str) else redactor.value(v)
            for k, v in item.items()}


def _host_argv(redactor: Redactor, fix: dict[str, Any], out: dict[str, Any]) -> None:
    """Argv words of ``fix`` that are the node name it was built for get the name's placeholder."""
    params = _obj(fix.get("params"))
    names = {_canonical(v, "host") for k, v in params.items() if k in HOST_PARAMS and isinstance(v, str)}
    if not names:
        return
    for step in out.get("steps") or []:
        if isinstance(step, dict) and isinstance(step.get("argv"), list):
            step["argv"] = [redactor.field(a, "host") if isinstance(a, str) and _canonical(a, "host") in names else a
                            for a in step["argv"]]


def _inventory(redactor: Redactor, inv: Any) -> Any:
    from doctor.derived.digest import is_identity

    if not isinstance(inv, dict):
        return redactor.value(inv)
    out: dict[str, Any] = {}
    for key, value in inv.items():
        if key == "host" and isinstance(value, dict):
            out[key] = _identity_dict(redactor, value, IDENTITY_FIELDS["host"])
        elif key == "gpus" and isinstance(value, list):
            out[key] = [_identity_dict(redactor, g, IDENTITY_FIELDS["gpu"]) if isinstance(g, dict)
                        else redactor.value(g) for g in value]
        elif key == "digest" and isinstance(value, dict):
            out[key] = {redactor.text(k): redactor.field(v, _digest_kind(k)) if isinstance(k, str) and is_identity(k)
                        and isinstance(v, str) else redactor.value(v) for k, v in value.items()}
        else:
            out[key] = redactor.value(value)
    return out


def _tool_words(data: dict[str, Any]) -> Iterator[str]:
    """The tool's own words in ``data``: check ids, titles and categories, finding check ids."""
    for item in [*(data.get("checks") or []), *(data.get("findings") or [])]:
        if isinstance(item, dict):
            for key in ("id", "title", "category", "check"):
                if isinstance(item.get(key), str) and (key != "title" or "id" in item):
                    yield item[key]


def redact_data(data: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """``data`` (a result's JSON form) with secrets masked and identities replaced, field by field:
    the tool's own words (:data:`TOOL_KEYS`) as they are, prose through :meth:`Redactor.prose`,
    identity fields through :meth:`Redactor.field`, other data through :meth:`Redactor.text`. No
    file is written; nothing is substituted in rendered text."""
    learn_result(redactor, data)
    redactor.protect(_tool_words(data))
    data = mask_strings(data)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in TOOL_KEYS["result"]:
            out[key] = value
        elif key == "source" and isinstance(value, dict):
            out[key] = _identity_dict(redactor, value, IDENTITY_FIELDS["source"])
        elif key == "inventory":
            out[key] = _inventory(redactor, value)
        elif key in ("findings", "checks") and isinstance(value, list):
            out[key] = [_kind(redactor, v, key[:-1]) for v in value]
        else:
            out[key] = redactor.value(value)
    out.setdefault("redacted", True)
    return out


def redact_result(data: dict[str, Any], map_path: str | None) -> dict[str, Any]:
    """The JSON result ``data`` redacted; the map is written to ``map_path`` (default ``gnd-redact-map.json``)."""
    path = map_path or DEFAULT_MAP
    redactor = open_map(path)
    out = redact_data(data, redactor)
    redactor.store.sync(redactor)  # type: ignore[union-attr]
    _note(path)
    return out


def mask_strings(obj: Any) -> Any:
    """Mask secrets in every string (done for every report, redacted or not)."""
    return mask_data(obj)


# ---------------------------------------------------------------------------------------------
# snapshots
# ---------------------------------------------------------------------------------------------

def learn_source(redactor: Redactor, source: Any) -> None:
    """Pre-scan a source for identities: hostname, machine-id, DMI serials, MACs, GUIDs, GPU serials."""
    for path, kind in IDENTITY_FILES.items():
        redactor.learn(_read(source, path), kind)
    for pattern, kind in IDENTITY_GLOBS.items():
        try:
            paths = source.glob(pattern)
        except Exception:  # a source that cannot glob has nothing to learn here
            paths = []
        for path in paths:
            redactor.learn(_read(source, path), kind)
    for text in _command_texts(source, ("nvidia_smi_xml", "nvidia_smi_q")):
        for tag, value in XML_TAG_RE.findall(text) + NVSMI_TEXT_RE.findall(text):
            redactor.learn(value, "uuid" if "uuid" in tag.lower() else "serial")


def _read(source: Any, path: str) -> str | None:
    try:
        text = source.read_text(path)
    except Exception:
        return None
    return text.strip() if isinstance(text, str) else None


def _command_texts(source: Any, names: Iterable[str]) -> list[str]:
    texts: list[str] = []
    for name in names:
        try:
            out = source.command(name)
        except Exception:
            continue
        text = getattr(out, "text", None)
        if isinstance(text, str):
            texts.append(text)
    return texts


#: PCI Express extended capability ID of the Device Serial Number
_DSN_CAP = 0x0003


def scrub_config_space(data: bytes) -> bytes:
    """PCI config space with the Device Serial Number capability's 8 serial bytes zeroed."""
    if len(data) < 0x104:
        return data
    out = bytearray(data)
    offset, seen = 0x100, set()
    while 0x100 <= offset <= len(out) - 4 and offset not in seen:
        seen.add(offset)
        header = int.from_bytes(out[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            break
        if header & 0xFFFF == _DSN_CAP:
            end = min(offset + 12, len(out))
            out[offset + 4:end] = bytes(end - offset - 4)
        offset = (header >> 20) & 0xFFC
    return bytes(out)


def _nul_separated_text(name: str, text: str) -> bool:
    """Whether a file holding NULs is NUL-separated text (``/proc/<pid>/cmdline``, ``environ``) to redact."""
    if name.endswith(("/cmdline", "/environ")):
        return True
    return all(ch.isprintable() or ch in "\0\n\t" for ch in text)


def _identity_kind(name: str) -> str | None:
    """The kind of identity file ``name`` holds, or None when it is not one."""
    import fnmatch

    return IDENTITY_FILES.get(name) or next((k for g, k in IDENTITY_GLOBS.items() if fnmatch.fnmatchcase(name, g)), None)


def _identity_file(name: str) -> bool:
    return _identity_kind(name) is not None


def snapshot_transform(source: Any, map_path: str | None) -> Callable[[str, bytes], bytes]:
    """A ``collect`` transform redacting each text file, NUL-separated records (``cmdline``, ``environ``)
    included; PCI config space loses its Device Serial Number; other binary files pass unchanged.

    The map is written once after the pre-scan and again whenever a new value gets a placeholder.
    """
    path = map_path or DEFAULT_MAP
    redactor = open_map(path)
    learn_source(redactor, source)
    redactor.store.sync(redactor)  # type: ignore[union-attr]
    _note(path)

    def transform(name: str, data: bytes) -> bytes:
        if name.endswith("/config") and name.startswith("sys/"):
            return scrub_config_space(data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        if b"\0" in data and not _nul_separated_text(name, text):
            return data
        if _identity_file(name) and text.strip():  # the whole content is the identity, word-like or not
            return (redactor.field(text.strip(), _identity_kind(name)) + "\n").encode("utf-8")
        return redactor.text(text).encode("utf-8")

    return transform
