"""Check gpu.row_remap (tests moved from test_gpu_health_checks.py)."""

from __future__ import annotations

import re

from tests.helpers import HEALTHY, facts, findings_of

SMI = "commands/nvidia-smi_-q_-x"


def _smi(gpu_bus: str, **fields: str) -> str:
    """The healthy fixture's nvidia-smi XML with fields changed inside one GPU's block."""
    text = (HEALTHY / SMI).read_text()
    start = text.index(f'<gpu id="00000000:{gpu_bus.upper()}:00.0">')
    end = text.index("</gpu>", start)
    block = text[start:end]
    for tag, value in fields.items():
        block, n = re.subn(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{value}</{tag}>", block)
        assert n, tag
    return text[:start] + block + text[end:]


def test_row_remap_healthy_fixture_passes() -> None:
    (f,) = findings_of(facts(), "gpu.row_remap")
    assert f.severity == "pass" and "8 GPUs" in f.title


def test_pending_remap_is_high_and_asks_for_a_reset() -> None:
    (f,) = findings_of(facts({SMI: _smi("3a", remapped_row_pending="Yes")}), "gpu.row_remap")
    assert (f.severity, f.subject) == ("high", "0000:3a:00.0") and "GPU 2" in f.title and "Pending" in f.title
    assert f.fix.runtime == ("nvidia-smi -r -i 2",)


def test_remap_failure_is_critical_and_mentions_rma() -> None:
    (f,) = findings_of(facts({SMI: _smi("9c", remapped_row_failure="Yes", remapped_row_pending="Yes")}),
                       "gpu.row_remap")
    assert f.severity == "critical" and f.subject == "0000:9c:00.0" and "RMA" in f.fix.notes
    assert len(f.evidence) == 2


def test_volatile_uncorrectable_ecc_is_high() -> None:
    text = _smi("18").replace("<dram_uncorrectable>0</dram_uncorrectable>", "<dram_uncorrectable>4</dram_uncorrectable>", 1)
    (f,) = findings_of(facts({SMI: text}), "gpu.row_remap")
    assert (f.severity, f.subject) == ("high", "0000:18:00.0") and "uncorrectable ECC errors: 4" in f.title


def test_silent_without_row_remapper_data() -> None:
    text = re.sub(r"<remapped_rows>.*?</remapped_rows>", "", (HEALTHY / SMI).read_text(), flags=re.S)
    text = re.sub(r"<ecc_errors>.*?</ecc_errors>", "", text, flags=re.S)
    assert findings_of(facts({SMI: text}), "gpu.row_remap") == []
