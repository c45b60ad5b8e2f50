#!/usr/bin/env python3
"""Regenerate the example reports in docs/examples/ from the committed fixtures.

    .venv/bin/python docs/examples/make_examples.py

Writes hgx-h100-{healthy,sick}.{html,pdf,md}, the Chinese edition hgx-h100-sick.zh-CN.{html,pdf,md},
and prints render times, through `gnd report` as a user runs it. The fixtures are
synthetic, so the examples are not redacted (``gnd report --redact`` shows the redacted form).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent


def main() -> int:
    os.chdir(ROOT)  # so the report names the source by its repository path
    gnd = [sys.executable, "-m", "doctor", "report"]
    for name, lang in (("hgx-h100-healthy", "en"), ("hgx-h100-sick", "en"), ("hgx-h100-sick", "zh-CN")):
        stem = name if lang == "en" else f"{name}.{lang}"
        for suffix in ("html", "md", "pdf"):
            t0 = time.monotonic()
            subprocess.run([*gnd, f"fixtures/{name}", "--lang", lang, "-o", str(OUT / f"{stem}.{suffix}")],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(f"{stem}.{suffix}: {time.monotonic() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
