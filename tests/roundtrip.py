#!/usr/bin/env python3
"""Round trip on this host: `gnd collect` then `gnd check` of the snapshot must find what the live run finds.

    python tests/roundtrip.py [GND]        # exit 0 when they match, 1 with the differences

Compared: every check's status and every finding's (check, subject, severity, title, expected,
observed). Not compared: timing, the source block (kind, path, collection time) and evidence
locations (a live command is named by its argv, a snapshot's by its file). CI runs this after pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any


def comparable(data: dict[str, Any]) -> dict[str, Any]:
    """The parts of a ``gnd check --format json`` result that must not depend on the source kind."""
    return {
        "checks": sorted((str(c.get("id")), str(c.get("status"))) for c in data.get("checks", [])),
        "findings": sorted((str(f.get("check")), str(f.get("subject")), str(f.get("severity")), str(f.get("title")),
                            str(f.get("expected")), str(f.get("observed"))) for f in data.get("findings", [])),
    }


def differences(live: dict[str, Any], snap: dict[str, Any]) -> list[str]:
    """Human-readable lines for what one side has and the other lacks (empty when they match)."""
    a, b = comparable(live), comparable(snap)
    out = []
    for key in ("checks", "findings"):
        out += [f"live only: {x}" for x in sorted(set(a[key]) - set(b[key]))]
        out += [f"snapshot only: {x}" for x in sorted(set(b[key]) - set(a[key]))]
    return out


def _check(gnd: list[str], *args: str) -> dict[str, Any]:
    proc = subprocess.run([*gnd, "check", "--format", "json", *args], capture_output=True, text=True, timeout=300)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"roundtrip: gnd check {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def main(argv: list[str]) -> int:
    gnd = argv[1:] or [sys.executable, "-m", "doctor"]
    with tempfile.TemporaryDirectory(prefix="gnd-roundtrip-") as tmp:
        snap = os.path.join(tmp, "s.tar.gz")
        proc = subprocess.run([*gnd, "collect", "-o", snap], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            print(f"roundtrip: gnd collect exited {proc.returncode}: {proc.stderr.strip()}", file=sys.stderr)
            return 1
        live = _check(gnd)
        snapped = _check(gnd, snap)
    diff = differences(live, snapped)
    for line in diff:
        print(f"roundtrip: {line}", file=sys.stderr)
    n = len(live.get("findings", []))
    print(f"roundtrip: {'MISMATCH' if diff else 'ok'}: live and snapshot ({n} findings)", file=sys.stderr)
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
