"""PDF start-up: loading WeasyPrint's libraries spawns no library-search processes (ldconfig, gcc, ld)."""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec

import pytest

if find_spec("weasyprint") is None:
    pytest.skip("WeasyPrint is not installed", allow_module_level=True)

PROBE = """
import ctypes.util, subprocess, sys
spawned = []
real_popen_init = subprocess.Popen.__init__
def recording_init(self, args, *a, **k):
    spawned.append(args)
    real_popen_init(self, args, *a, **k)
subprocess.Popen.__init__ = recording_init
original = ctypes.util.find_library
from reports.pdf import _import_weasyprint
try:
    _import_weasyprint()
except Exception as exc:  # no Pango here: nothing to measure
    print("SKIP", exc)
    raise SystemExit(0)
import weasyprint.text.ffi as ffi
assert ffi.pango is not None and ffi.fontconfig is not None and ffi.pangoft2 is not None
assert ctypes.util.find_library is original, "find_library not restored"
print("SPAWNED", len(spawned), spawned[:3])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the library-search shortcut is Linux-only")
def test_importing_weasyprint_spawns_no_process_and_restores_find_library() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if proc.stdout.startswith("SKIP"):
        pytest.skip(proc.stdout.strip())
    assert "SPAWNED 0 " in proc.stdout, proc.stdout
