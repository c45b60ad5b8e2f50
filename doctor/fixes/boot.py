"""Which boot-loader commands apply to a distribution, and the note that goes with them."""

from __future__ import annotations

from doctor.i18n import N_

_DEBIAN = ("ubuntu", "debian", "mint", "pop!_os")
_RHEL = ("red hat", "rhel", "rocky", "alma", "centos", "fedora", "oracle", "amazon linux", "suse")


def os_family(os_release: str | None) -> str | None:
    """``debian``, ``rhel`` or None (unknown: fixes list both command sets)."""
    text = (os_release or "").lower()
    if any(n in text for n in _DEBIAN):
        return "debian"
    if any(n in text for n in _RHEL):
        return "rhel"
    return None


def grub_note(os_release: str | None) -> str:
    family = os_family(os_release)
    which = {"debian": N_("Debian/Ubuntu (update-grub)"), "rhel": N_("RHEL family (grubby)")}.get(
        family or "", N_("Debian/Ubuntu (cp, sed, update-grub) or RHEL family (grubby); run the set for your "
                         "distribution"))
    return N_("Boot parameters take effect after a reboot. Commands for {which}.", which=which)
