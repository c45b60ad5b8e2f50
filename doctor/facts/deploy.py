"""Kubelet configuration and the deployment files that start inference servers."""

from __future__ import annotations

import json
import re

from doctor import specs
from doctor.errors import DoctorError
from doctor.lazyre import lazy
from doctor.record import record
from doctor.safe_open import open_regular
from doctor.secrets import sanitize_deploy
from doctor.sources import Source

_TOP_KEY = lazy(r"^([A-Za-z][A-Za-z0-9_]*):\s*(.*?)\s*(#.*)?$")


@record
class Kubelet:
    origin: str | None
    settings: dict[str, str]  # top-level scalar keys of the KubeletConfiguration
    flags: dict[str, str]  # --cpu-manager-policy=... style flags from kubeadm-flags.env / drop-ins
    cpu_manager_state: dict[str, object] | None
    #: the config file as written (nested settings are read from it in doctor/derived/kubelet.py)
    text: str | None = None

    def policy(self, config_key: str, flag: str) -> tuple[str | None, str | None]:
        """The effective value and where it came from (flags override the config file)."""
        if flag in self.flags:
            return self.flags[flag], "kubelet flags"
        if config_key in self.settings:
            return self.settings[config_key], self.origin
        return None, None


def _top_level_yaml(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        match = _TOP_KEY.match(line)
        if match and match.group(2) not in ("", "|", ">"):
            out[match.group(1)] = match.group(2).strip("'\"")
    return out


def build_kubelet(src: Source) -> Kubelet | None:
    origin = None
    settings: dict[str, str] = {}
    config: str | None = None
    for path in ("var/lib/kubelet/config.yaml", "etc/kubernetes/kubelet-config.yaml", "root/cdk/kubelet/config.yaml"):
        text = src.read_text(path, cap=1 << 20)
        if text is not None:
            origin, settings, config = path, _top_level_yaml(text), text
            break
    flags: dict[str, str] = {}
    flag_files = ["var/lib/kubelet/kubeadm-flags.env", *src.glob("etc/systemd/system/kubelet.service.d/*.conf")]
    for path in flag_files:
        for match in re.finditer(r"--([a-z-]+)=([^\s\"']+)", src.read_text(path, cap=1 << 20) or ""):
            flags[match.group(1)] = match.group(2)
    state_text = src.read_text("var/lib/kubelet/cpu_manager_state", cap=1 << 20)
    state = None
    if state_text:
        try:
            loaded = json.loads(state_text)
            state = loaded if isinstance(loaded, dict) else None
        except (ValueError, RecursionError):
            state = None
    if origin is None and not flags and state is None:
        return None
    return Kubelet(origin, settings, flags, state, config)


#: largest deployment file read (units, compose files and manifests are kilobytes)
DEPLOY_CAP = 1 << 20


def read_deploy_file(path: str) -> bytes:
    """A ``--deploy`` file; one-line DoctorError if it is missing, not a regular file or over 1 MiB
    (read whole or refused: a cut file would hide what its end says)."""
    with open_regular(path, "deploy file") as fh:
        try:
            data = fh.read(DEPLOY_CAP + 1)
        except OSError as exc:
            raise DoctorError(f"{path}: cannot read the deploy file: {exc.strerror}") from None
    if len(data) > DEPLOY_CAP:
        raise DoctorError(f"{path}: the deploy file is larger than the 1 MiB limit")
    return data


def keep_deploy_bytes(raw: bytes, path: str) -> str:
    """A deployment file's text with every value no check reads masked, the token patterns after."""
    from doctor.allowlist import keep_deploy

    return sanitize_deploy(keep_deploy(raw.decode("utf-8", "replace"), path).encode()).decode()


@record
class DeployFile:
    path: str
    text: str  # values no check reads masked (doctor.allowlist)


def build_deploy_files(src: Source, extra: tuple[str, ...] = ()) -> tuple[DeployFile, ...]:
    """Units, compose files and manifests in the source, plus files given with ``--deploy``."""
    out = []
    for path in src.spec_paths(specs.get("deploy.files")):
        raw = src.read_bytes(path, cap=1 << 20)
        if raw is not None:
            out.append(DeployFile(path, keep_deploy_bytes(raw, path)))
    for path in extra:
        out.append(DeployFile(path, keep_deploy_bytes(read_deploy_file(path), path)))
    return tuple(out)
