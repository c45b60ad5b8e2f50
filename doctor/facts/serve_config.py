"""Config files that an inference server's command line names (``vllm serve --config FILE``, SGLang
``--config``, TensorRT-LLM ``--extra_llm_api_options``): read when the source holds them.

The path comes from the process's argv, so no spec can list it in advance: a live run reads the file,
a snapshot only when it happens to contain it. A relative path cannot be resolved (the process's
working directory is not recorded) and is reported as such.
"""

from __future__ import annotations

import re

from doctor.facts.procs import Process
from doctor.lazyre import lazy
from doctor.reads import Reads
from doctor.record import record
from doctor.sources import Source

CONFIG_FLAGS = ("--config", "--extra_llm_api_options", "--extra-llm-api-options")
MAX_CONFIG_BYTES = 1 << 20
MAX_CONFIGS = 16
#: the config paths are read from these options' values
READS = Reads(flags=CONFIG_FLAGS)
SAFE_PATH = lazy(r"/[A-Za-z0-9_./@+-]{1,4095}")
#: command lines whose config files are read (inference servers only; anything else is left alone)
SERVER_WORDS = lazy(r"vllm|sglang|trtllm|tensorrt_llm", re.IGNORECASE)


@record
class ServeConfig:
    """One config file named by a server process; ``text`` is None when it could not be read (``reason``)."""

    pid: int
    flag: str
    path: str
    text: str | None
    reason: str | None


def config_paths(argv: tuple[str, ...]) -> list[tuple[str, str]]:
    """(flag, path) pairs: ``--config FILE`` and ``--config=FILE``."""
    out = []
    for i, arg in enumerate(argv):
        for flag in CONFIG_FLAGS:
            if arg == flag and i + 1 < len(argv):
                out.append((flag, argv[i + 1]))
            elif arg.startswith(flag + "="):
                out.append((flag, arg[len(flag) + 1:]))
    return out


def build_serve_configs(src: Source, processes: tuple[Process, ...]) -> tuple[ServeConfig, ...]:
    out: list[ServeConfig] = []
    for proc in processes:
        if not SERVER_WORDS.search(" ".join(proc.argv[:4])):
            continue
        for flag, path in config_paths(proc.argv):
            if len(out) >= MAX_CONFIGS:
                return tuple(out)
            if not SAFE_PATH.fullmatch(path) or "/../" in path + "/":
                out.append(ServeConfig(proc.pid, flag, path, None,
                                       "a relative or unusual path (the process's working directory is not recorded)"))
                continue
            text = src.read_text(path.lstrip("/"), cap=MAX_CONFIG_BYTES)
            if text is not None:
                from doctor.allowlist import keep_deploy

                text = keep_deploy(text, path)
            out.append(ServeConfig(proc.pid, flag, path, text,
                                   None if text is not None else
                                   f"{path} is not in this {src.kind}, or not a regular file under 1 MiB"))
    return tuple(out)
