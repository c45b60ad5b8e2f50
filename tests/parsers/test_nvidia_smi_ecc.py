"""Row remapper and volatile ECC fields of nvidia-smi, XML (new and old drivers) and text."""

from __future__ import annotations

from doctor.parsers.nvidia_smi import parse_nvidia_smi_text, parse_nvidia_smi_xml

# driver >= 525 layout (as printed for an A100/H100)
XML_NEW = """<?xml version="1.0" ?>
<nvidia_smi_log><driver_version>550.90.07</driver_version>
<gpu id="00000000:3B:00.0">
    <ecc_errors>
        <volatile>
            <sram_correctable>0</sram_correctable>
            <sram_uncorrectable_parity>0</sram_uncorrectable_parity>
            <sram_uncorrectable_secded>1</sram_uncorrectable_secded>
            <dram_correctable>177</dram_correctable>
            <dram_uncorrectable>2</dram_uncorrectable>
        </volatile>
        <aggregate><dram_uncorrectable>9</dram_uncorrectable></aggregate>
    </ecc_errors>
    <remapped_rows>
        <remapped_row_corr>1</remapped_row_corr>
        <remapped_row_unc>2</remapped_row_unc>
        <remapped_row_pending>Yes</remapped_row_pending>
        <remapped_row_failure>No</remapped_row_failure>
    </remapped_rows>
</gpu></nvidia_smi_log>
"""

# pre-Ampere layout: single/double bit, row remapper absent, ECC N/A on a consumer board
XML_OLD = """<nvidia_smi_log><gpu id="00000000:01:00.0"><ecc_errors><volatile>
<single_bit><device_memory>N/A</device_memory><total>N/A</total></single_bit>
<double_bit><device_memory>N/A</device_memory><total>N/A</total></double_bit>
</volatile></ecc_errors></gpu>
<gpu id="00000000:02:00.0"><ecc_errors><volatile>
<single_bit><total>4</total></single_bit><double_bit><device_memory>3</device_memory><total>3</total></double_bit>
</volatile></ecc_errors></gpu></nvidia_smi_log>"""

TEXT = """\
==============NVSMI LOG==============
Driver Version                            : 470.57.02
GPU 00000000:10:1C.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 177
            DRAM Uncorrectable            : 0
        Aggregate
            DRAM Uncorrectable            : 5
    Remapped Rows
        Correctable Error                 : 1
        Uncorrectable Error               : 0
        Pending                           : No
        Remapping Failure Occurred        : Yes
        Bank Remap Availability Histogram
            Max                           : 639 bank(s)
"""


def test_xml_new_driver_fields() -> None:
    (g,) = parse_nvidia_smi_xml(XML_NEW).gpus
    assert (g.remap_pending, g.remap_failure) == (True, False)
    assert (g.remapped_rows_correctable, g.remapped_rows_uncorrectable) == (1, 2)
    assert g.ecc_volatile_uncorrectable == 3  # DRAM 2 + SRAM SEC-DED 1; aggregate ignored


def test_xml_old_driver_double_bit_and_na() -> None:
    consumer, old = parse_nvidia_smi_xml(XML_OLD).gpus
    assert (consumer.remap_pending, consumer.remap_failure, consumer.ecc_volatile_uncorrectable) == (None, None, None)
    assert old.ecc_volatile_uncorrectable == 3 and old.remap_pending is None


def test_text_remapped_rows_section() -> None:
    (g,) = parse_nvidia_smi_text(TEXT).gpus
    assert (g.remap_pending, g.remap_failure) == (False, True)
    assert (g.remapped_rows_correctable, g.remapped_rows_uncorrectable, g.ecc_volatile_uncorrectable) == (1, 0, 0)
