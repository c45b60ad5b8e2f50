"""Consistent redaction of hostnames, addresses, MACs, serials and UUIDs.

The same value always maps to the same placeholder (``host-1``, ``ip-1``, ``mac-1``,
``serial-1``, ``uuid-1``, ``guid-1``, ``id-1``) for as long as the same map file is used; the map
(placeholder -> original) is written to its own file with mode 0600 and never into an output.
Known values (hostname, serials, machine-id, MACs) are found first from the data itself; shapes
(IPv4, IPv6 and GIDs, MACs, UUIDs, InfiniBand GUIDs) are caught by pattern everywhere else.
PCI addresses, versions and sysctl values are left alone.
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

_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
_ALNUM_AFTER = r"(?![A-Za-z0-9])"
_HEX_COLON = "0-9A-Fa-f:"
#: MAC (6 octets) and InfiniBand hardware addresses (20 octets)
MAC_RE = lazy(rf"(?<![{_HEX_COLON}])[0-9A-Fa-f]{{2}}(?::[0-9A-Fa-f]{{2}}){{5,19}}(?![{_HEX_COLON}])")
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


class Redactor:
    """Maps sensitive values to stable placeholders; ``text()`` redacts one string."""

    def __init__(self, placeholders: dict[str, str] | None = None) -> None:
        self.original: dict[str, str] = {}  # normalised original -> placeholder
        self.shown: dict[str, str] = {}  # placeholder -> original as first seen (case kept, for the map)
        self.counts: dict[str, int] = dict.fromkeys(PREFIX, 0)
        self.changed = False
        self._literal: re.Pattern[str] | None = None
        #: the map file new placeholders are allocated in (under its lock), when there is one
        self.store: MapFile | None = None
        for placeholder, value in (placeholders or {}).items():
            m = PLACEHOLDER_RE.match(placeholder)
            if not m or not isinstance(value, str):
                continue
            self.original[self._norm(value)] = placeholder
            self.shown[placeholder] = value.strip()
            self.counts[m.group(1)] = max(self.counts[m.group(1)], int(m.group(2)))

    @staticmethod
    def _norm(value: str) -> str:
        return value.strip().lower()

    def placeholder(self, value: str, kind: str) -> str:
        """The placeholder for ``value`` (allocated on first sight)."""
        key = self._norm(value)
        found = self.original.get(key)
        if found is None and self.store is not None:
            return self.store.allocate(self, value, kind)
        if found is None:
            self.counts[kind] += 1
            found = f"{PREFIX[kind]}-{self.counts[kind]}"
            self.original[key] = found
            self.shown[found] = value.strip()
            self.changed = True
            self._literal = None
        return found

    def learn(self, value: object, kind: str) -> None:
        """Register a known value (hostname, serial ...) so it is replaced wherever it appears."""
        if not isinstance(value, str):
            return
        value = value.strip()
        if value.lower() in _BORING or PLACEHOLDER_RE.match(value):
            return
        if kind == "uuid" and value.upper().startswith("GPU-"):
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
                self.shown.setdefault(placeholder, other.shown.get(placeholder, key))
        for kind, count in other.counts.items():
            self.counts[kind] = max(self.counts[kind], count)
        self._literal = None

    def mapping(self) -> dict[str, str]:
        """placeholder -> original, for the map file."""
        return {p: self.shown.get(p, o) for o, p in sorted(self.original.items(), key=lambda kv: _sort_key(kv[1]))}

    def _literals(self) -> re.Pattern[str] | None:
        """Known words (hostnames, serials, ids); shaped values (IPs, MACs, UUIDs) go by pattern."""
        words = sorted((k for k, p in self.original.items() if p.split("-", 1)[0] in LITERAL_KINDS),
                       key=len, reverse=True)
        if self._literal is None and words:
            # names shorter than 3 characters match in their own case only ("n1", not every "N1" in prose)
            long_words = "|".join(map(re.escape, (w for w in words if len(w) >= 3)))
            short = [re.escape(self.shown.get(self.original[w], w)) for w in words if len(w) < 3]
            alternatives = ([f"(?i:{long_words})"] if long_words else []) + short
            self._literal = re.compile(_ALNUM_BEFORE + "(" + "|".join(alternatives) + ")" + _ALNUM_AFTER)
        return self._literal

    def text(self, text: str) -> str:
        """``text`` with every known value and every address/MAC/UUID shape replaced."""
        if not text:
            return text
        literals = self._literals()
        if literals is not None:
            text = literals.sub(lambda m: self.original.get(self._norm(m.group(1)), m.group(1)), text)
        text = MAC_RE.sub(lambda m: self.placeholder(m.group(0), "mac"), text)
        text = UUID_RE.sub(lambda m: self.placeholder(m.group(0), "uuid"), text)
        text = IPV6_RE.sub(self._ipv6, text)
        text = GUID_RE.sub(lambda m: self.placeholder(m.group(0), "guid"), text)
        text = IPV4_RE.sub(self._ipv4, text)
        text = LSPCI_SERIAL_RE.sub(lambda m: m.group(1) + self._serial(m.group(2)), text)
        return text

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


def learn_result(redactor: Redactor, data: dict[str, Any]) -> None:
    """Register the identities a result names (hostname, machine-id, board and GPU serials/UUIDs)."""
    source = _obj(data.get("source"))
    inv = _obj(data.get("inventory"))
    host = _obj(inv.get("host"))
    redactor.learn(source.get("hostname"), "host")
    redactor.learn(host.get("hostname"), "host")
    redactor.learn(host.get("machine_id"), "id")
    redactor.learn(host.get("board_serial"), "serial")
    for gpu in inv.get("gpus") or []:
        if isinstance(gpu, dict):
            redactor.learn(gpu.get("serial"), "serial")
            redactor.learn(gpu.get("uuid"), "uuid")


def redact_data(data: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """``data`` with secrets masked and identities replaced (no file written)."""
    learn_result(redactor, data)
    out = redactor.value(mask_strings(data))
    out.setdefault("redacted", True)
    return dict(out)


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
        return redactor.text(text).encode("utf-8")

    return transform
