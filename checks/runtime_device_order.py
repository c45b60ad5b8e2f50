"""runtime.device_order: CUDA_VISIBLE_DEVICES given by index while CUDA enumerates fastest first."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.procs import EnvSetting, by_place, setting_label, user_env
from doctor.facts import Facts
from doctor.findings import LOW, MEDIUM, PASS, Evidence, Finding, Fix, Impact
from doctor.fixes import make
from doctor.fixes.base import unit_of
from doctor.i18n import N_
from doctor.lazyre import lazy
from doctor.registry import check

#: CUDA programming guide, "CUDA Environment Variables": CUDA_DEVICE_ORDER takes FASTEST_FIRST or PCI_BUS_ID,
#: "(default is FASTEST_FIRST)"; "FASTEST_FIRST causes CUDA to enumerate the available devices in fastest to
#: slowest order using a simple heuristic. PCI_BUS_ID orders devices by PCI bus ID in ascending order."
CUDA_DOC = N_("CUDA programming guide, CUDA_DEVICE_ORDER: \"(default is FASTEST_FIRST)\"; \"FASTEST_FIRST causes CUDA to "
            "enumerate the available devices in fastest to slowest order using a simple heuristic. PCI_BUS_ID orders "
            "devices by PCI bus ID in ascending order.\" nvidia-smi numbers GPUs in PCI bus order")
REFERENCES = ("https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars",)
INDEX_LIST = lazy(r"\s*\d+\s*(,\s*\d+\s*)*,?")


def _shares_place(a: EnvSetting, b: EnvSetting) -> bool:
    return bool(set(a.pids) & set(b.pids) or set(a.files) & set(b.files))


@check("runtime.device_order", "CUDA device order behind CUDA_VISIBLE_DEVICES", "runtime", acts="application",
       fixes=("unit_env",), needs=("processes", "process_env", "deploy_files"),
       env=("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"))
def device_order(facts: Facts) -> Iterator[Finding]:
    """``CUDA_VISIBLE_DEVICES`` naming some of the GPUs by index where ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` is not
    set: medium when the GPUs differ (CUDA's fastest-first order then puts another card at index 0 than
    nvidia-smi), low when they are identical; a list of every GPU, UUIDs, MIG names and a single-GPU node
    do not apply.
    """
    gpus = facts.gpus.gpus
    if len(gpus) < 2:
        return
    ordered = [s for s in user_env(facts, ["CUDA_DEVICE_ORDER"]) if s.value.strip() == "PCI_BUS_ID"]
    models = sorted({g.name or "?" for g in gpus})
    found = False
    for setting in user_env(facts, ["CUDA_VISIBLE_DEVICES"]):
        if not INDEX_LIST.fullmatch(setting.value):
            continue
        if {int(x) for x in setting.value.split(",") if x.strip()} >= set(range(len(gpus))):
            continue  # every GPU named: the same GPUs are used in either order
        for s in by_place(setting):
            if any(_shares_place(s, o) for o in ordered):
                continue
            found = True
            yield _finding(facts, s, models)
    if not found:
        yield Finding(PASS, "node", N_("no CUDA_VISIBLE_DEVICES index list depends on CUDA's device order"),
                      evidence=tuple(Evidence(a, b) for s in user_env(facts, ["CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"])
                                     for a, b in s.evidence))


def _finding(facts: Facts, s: EnvSetting, models: list[str]) -> Finding:
    mixed = len(models) > 1
    places = ", ".join([f"pid {p}" for p in s.pids] + list(s.files))
    if mixed:
        effect = (f"the GPUs differ ({', '.join(models)}): CUDA numbers the fastest first, so index "
                  f"{s.value.split(',')[0].strip()} may be another card than nvidia-smi's, and the server can land on "
                  "the slower GPU, on one another server uses, or away from the NIC and CPUs it was placed near")
    else:
        effect = ("the GPUs are identical, so the order usually matches nvidia-smi's, but CUDA does not promise it: a "
                  "heuristic tie-break decides which card each index means")
    notes = (f"Set CUDA_DEVICE_ORDER=PCI_BUS_ID next to CUDA_VISIBLE_DEVICES={s.value} ({places}), or name the GPUs "
             "by UUID (nvidia-smi -L), and restart the server. To undo, remove CUDA_DEVICE_ORDER again.")
    unit = next((u for f in s.files if (u := unit_of(f))), None)
    fix = make("unit_env", notes, unit=unit, what="cuda-device-order", unset=[],
               set={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}) if unit else Fix(notes=notes)
    return Finding(
        MEDIUM if mixed else LOW, setting_label(facts, s),
        N_("CUDA_VISIBLE_DEVICES={value} counts GPUs in CUDA's fastest-first order, not nvidia-smi's", value=s.value),
        detail=N_('CUDA_DEVICE_ORDER is not PCI_BUS_ID where the server is started ({places}); {effect}.', places=places, effect=effect),
        evidence=tuple(Evidence(a, b) for a, b in s.evidence),
        expected=N_('CUDA_DEVICE_ORDER=PCI_BUS_ID, or GPU UUIDs'), observed=N_('CUDA_VISIBLE_DEVICES={value}, order unset', value=s.value),
        impact=Impact(30 if mixed else 3, N_('the server may use other GPUs than the ones named'), basis=CUDA_DOC),
        fix=fix, references=REFERENCES)
