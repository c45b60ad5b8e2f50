"""sysctl.persistence: boot-time sysctl files that undo the doctor's fixes or differ from the running values.

See docs/checks.md#sysctl-persistence.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.facts import Facts
from doctor.findings import LOW, MEDIUM, PASS, Evidence, Finding, Fix, Impact
from doctor.fixes import sysctl_fix
from doctor.fixes.sysctl_keys import KNOWN_SYSCTLS, generic_key
from doctor.i18n import N_, join
from doctor.registry import check

GND_PREFIX = "90-gnd-"
PERSIST_CONF = "90-gnd-persist.conf"
REFERENCES = (
    "https://man7.org/linux/man-pages/man8/sysctl.8.html",
    "https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html",
)


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _norm(value: str) -> str:
    return join(' ', value.split())


@check("sysctl.persistence", "Boot-time sysctl files vs. the doctor's fixes and the running values", "network", acts="os",
       fixes=("sysctl",), needs=("sysctls",))
def persistence(facts: Facts) -> Iterator[Finding]:
    """A later-sorting sysctl file that overrides a ``90-gnd-*.conf`` value (medium); a running value of a
    sysctl the checks judge that differs from what the boot files set (low: lost at the next reboot)."""
    sysctls = facts.sysctls
    files = sysctls.files
    if not files:
        return
    flagged: set[str] = set()
    for i, (path, values) in enumerate(files):
        if not _base(path).startswith(GND_PREFIX):
            continue
        for key, ours in values.items():
            later = [(p, v[key]) for p, v in files[i + 1:] if key in v and _norm(v[key]) != _norm(ours)]
            if not later:
                continue
            where, theirs = later[-1]
            flagged.add(key)
            yield Finding(
                MEDIUM, key, N_('{where} overrides {key} = {ours} from {base} at boot', where=where, key=key, ours=ours, base=_base(path)),
                detail=(N_('sysctl --system applies files by name and /etc/sysctl.conf last, so {where} wins: after the next reboot {key} is {theirs} again.', where=where, key=key, theirs=theirs)),
                evidence=(Evidence(path, f"{key} = {ours}"), Evidence(where, f"{key} = {theirs}")),
                expected=N_('{key} = {ours} at boot', key=key, ours=ours), observed=N_('{key} = {theirs} from {where}', key=key, theirs=theirs, where=where),
                impact=Impact(10, N_('the fix is lost at the next reboot'),
                          basis=N_("sysctl --system applies /etc/sysctl.d files in name order; the later file's value wins at boot")),
                fix=Fix(notes=N_('Remove {key} from /{where} (or set it to {ours} there), then run sysctl --system.', key=key, where=where, ours=ours)),
                references=REFERENCES)
    effective: dict[str, tuple[str, str]] = {}
    for path, values in files:
        for key, value in values.items():
            effective[key] = (value, path)
    drift = 0
    for key, (boot, path) in sorted(effective.items()):
        if key in flagged or generic_key(key) not in KNOWN_SYSCTLS:
            continue
        now = sysctls.get(key)
        if now is None or _norm(now) == _norm(boot):
            continue
        drift += 1
        persist_here = _base(path) <= PERSIST_CONF and not path.endswith("etc/sysctl.conf")
        notes = (N_("If the running value is the one you want, keep it at boot; otherwise run sysctl --system to go back to the files' value."))
        fix = (sysctl_fix({key: _norm(now)}, sysctls, PERSIST_CONF, notes=notes) if persist_here else
               Fix(notes=N_('{notes} {path} sorts after {PERSIST_CONF}: change {key} in /{path} itself.', notes=notes, path=path, PERSIST_CONF=PERSIST_CONF, key=key)))
        yield Finding(
            LOW, key, N_('{key} runs {norm} but the boot files set {norm2}', key=key, norm=_norm(now), norm2=_norm(boot)),
            detail=N_('The running value was set by hand or by a tool; at the next reboot {path} sets {norm}.', path=path, norm=_norm(boot)),
            evidence=(Evidence(sysctls.origins.get(key, "sysctl"), f"{key} = {_norm(now)}"),
                      Evidence(path, f"{key} = {_norm(boot)}")),
            expected=N_('running value = boot value ({norm})', norm=_norm(boot)), observed=_norm(now),
            impact=Impact(5, N_('the running tuning changes at the next reboot'),
                          basis=N_("sysctl --system applies /etc/sysctl.d files in name order; the later file's value wins at boot")), fix=fix, references=REFERENCES)
    if not flagged and not drift:
        yield Finding(PASS, "node", N_('{n_files} sysctl file(s) agree with the running values', n_files=len(files)))
