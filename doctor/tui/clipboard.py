"""Copy text: OSC 52 through the terminal (works over SSH), plus a local clipboard tool when there is one."""

from __future__ import annotations

import os
import shutil
import subprocess

#: (environment variable that must be set, command) tried in order for a local desktop clipboard
LOCAL_TOOLS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("WAYLAND_DISPLAY", ("wl-copy",)),
    ("DISPLAY", ("xclip", "-selection", "clipboard")),
    ("DISPLAY", ("xsel", "--clipboard", "--input")),
)


def copy_local(text: str) -> str | None:
    """Also copy with a desktop clipboard tool when a display is attached; returns the tool used."""
    for env, argv in LOCAL_TOOLS:
        if os.environ.get(env) and shutil.which(argv[0]):
            try:
                subprocess.run(argv, input=text.encode(), timeout=2, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            except (OSError, subprocess.SubprocessError):
                continue
            return argv[0]
    return None
