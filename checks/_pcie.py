"""Severity by lost PCIe bandwidth and kernel boot-parameter (GRUB) fix helpers shared by checks.

Links, path words, chipset detection and the rest of what checks read moved to :mod:`doctor.derived`.
"""

from __future__ import annotations

#: Severity thresholds: fraction of the path's expected bandwidth lost.
HIGH_LOSS = 0.5
MEDIUM_LOSS = 0.25


def severity_for_loss(loss: float) -> str:
    """``high`` at half the bandwidth or worse, ``medium`` from a quarter, else ``low``."""
    if loss >= HIGH_LOSS:
        return "high"
    if loss >= MEDIUM_LOSS:
        return "medium"
    return "low"


_DEBIAN = ("ubuntu", "debian", "mint", "pop!_os")
_RHEL = ("red hat", "rhel", "rocky", "alma", "centos", "fedora", "oracle", "amazon linux", "suse")
GRUB_DEFAULT = "/etc/default/grub"


def os_family(os_release: str | None) -> str | None:
    """``debian``, ``rhel`` or None (unknown: give both command sets)."""
    text = (os_release or "").lower()
    if any(n in text for n in _DEBIAN):
        return "debian"
    if any(n in text for n in _RHEL):
        return "rhel"
    return None


def grub_args_fix(add: tuple[str, ...], remove: tuple[str, ...], os_release: str | None
                  ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(persistent, rollback) commands adding/removing kernel boot parameters; a reboot applies them.

    Debian/Ubuntu edit ``GRUB_CMDLINE_LINUX`` (backup kept as ``/etc/default/grub.gnd-bak``) and run
    ``update-grub``; the RHEL family uses ``grubby`` on every installed kernel.
    """
    from doctor.findings import cmd

    family = os_family(os_release)
    persistent: list[str] = []
    rollback: list[str] = []
    if family in (None, "debian"):
        persistent.append(cmd("cp", "-a", GRUB_DEFAULT, f"{GRUB_DEFAULT}.gnd-bak"))
        for arg in remove:
            persistent.append(cmd("sed", "-i", "-E", f"/^GRUB_CMDLINE_LINUX/s/(^|[\" ]){_sed_escape(arg)}([\" ]|$)/\\1\\2/",
                                  GRUB_DEFAULT))
        if add:
            persistent.append(cmd("sed", "-i", f"s/^GRUB_CMDLINE_LINUX=\"/&{_sed_repl(' '.join(add))} /",
                                  GRUB_DEFAULT))
        persistent.append("update-grub")
        rollback += [cmd("cp", "-a", f"{GRUB_DEFAULT}.gnd-bak", GRUB_DEFAULT), "update-grub"]
    if family in (None, "rhel"):
        line = ["grubby", "--update-kernel=ALL"]
        if add:
            line.append("--args=" + " ".join(add))
        if remove:
            line.append("--remove-args=" + " ".join(remove))
        persistent.append(cmd(*line))
        back = ["grubby", "--update-kernel=ALL"]
        if add:
            back.append("--remove-args=" + " ".join(add))
        if remove:
            back.append("--args=" + " ".join(remove))
        rollback.append(cmd(*back))
    return tuple(persistent), tuple(rollback)


def _sed_escape(text: str) -> str:
    """Escape for a sed extended regular expression."""
    return "".join("\\" + ch if ch in "/&\\.[]*^$+?(){}|" else ch for ch in text)


def _sed_repl(text: str) -> str:
    """Escape for a sed replacement."""
    return "".join("\\" + ch if ch in "/&\\" else ch for ch in text)


def grub_note(os_release: str | None) -> str:
    family = os_family(os_release)
    which = {"debian": "Debian/Ubuntu (update-grub)", "rhel": "RHEL family (grubby)"}.get(
        family or "", "Debian/Ubuntu (cp, sed, update-grub) or RHEL family (grubby); run the set for your distribution")
    return f"Boot parameters take effect after a reboot. Commands for {which}."
