"""NVIDIA's Xid catalogue as data: every code the driver defines through the R595 branch, with the resolution
NVIDIA publishes for it.

Source: NVIDIA's "Analyzing Xid Errors with the Xid Catalog" (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)
and its spreadsheet ("Catalog" sheet), read through the machine-readable copy GPUd generates from it
(leptonai/gpud ``components/accelerator/nvidia/xid/catalog_generated.go``, generated 2025-10-29, Apache-2.0), for
codes 1-172: mnemonic, the immediate and the investigatory resolution bucket; the catalogue publishes 162-172
without a resolution yet. Codes 173-176 are from the driver's own list (``src/common/sdk/nvidia/inc/nverror.h`` of
NVIDIA/open-gpu-kernel-modules 595.45.04, whose ``ROBUST_CHANNEL_LAST_ERROR`` is 176). Where no resolution is
published the bucket is empty and the check grades the code by its meaning (documented there). The descriptions
are short labels of ours after the catalogue's; "" where the catalogue marks the code Unused.

Resolution buckets, as the catalogue names them: ``RESTART_APP`` (the application's fault: restart it),
``RESET_GPU`` (the GPU needs a reset), ``RESTART_BM`` (reboot the bare-metal node), ``RESTART_VM`` (restart the
virtual machine), ``IGNORE`` (no action), ``CONTACT_SUPPORT`` (no field action; mostly codes unused on current GPUs),
``CHECK_MECHANICALS`` (power cables and seating), ``CHECK_UVM`` (the unified-memory driver), ``UPDATE_SWFW``
(driver/firmware update), ``WORKFLOW_*`` (a decision flow: Xid 13, 31, 45, 48, NVLink), ``XID_154`` (the recovery
action the line itself names).
"""

from __future__ import annotations

from functools import lru_cache

from doctor.record import record

#: The newest code this table knows (the driver's ``ROBUST_CHANNEL_LAST_ERROR`` in R595)
LAST_CODE = 176

#: Buckets after which the GPU itself must be recovered (reset, reboot, VM restart) before it is trusted again
GPU_RECOVERY_BUCKETS = frozenset({"RESET_GPU", "RESTART_BM", "RESTART_VM"})


@record
class XidEntry:
    """One code of the catalogue."""

    code: int
    mnemonic: str  # the driver's name (``ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS``)
    description: str  # "" when the catalogue marks the code Unused
    immediate: str  # resolution bucket, immediate action ("" when not published)
    investigatory: str  # resolution bucket, investigatory action ("" when none)

    @property
    def unused(self) -> bool:
        return not self.description

    @property
    def fatal(self) -> bool:
        """The catalogue asks for the GPU (or its node or VM) to be recovered: reset, reboot, VM restart."""
        return self.immediate in GPU_RECOVERY_BUCKETS


X = XidEntry
ENTRIES: tuple[XidEntry, ...] = (
    X(1, 'ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD', '', 'CONTACT_SUPPORT', ''),
    X(2, 'ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD', '', 'CONTACT_SUPPORT', ''),
    X(3, 'ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD', '', 'CONTACT_SUPPORT', ''),
    X(4, 'ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY', '', 'CONTACT_SUPPORT', ''),
    X(5, 'ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW', '', 'CONTACT_SUPPORT', ''),
    X(6, 'ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR', '', 'CONTACT_SUPPORT', ''),
    X(7, 'ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR', '', 'CONTACT_SUPPORT', ''),
    X(8, 'ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT', 'GPU stopped processing', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(9, 'ROBUST_CHANNEL_GR_ERROR_INSTANCE', '', 'CONTACT_SUPPORT', ''),
    X(10, 'ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP', '', 'CONTACT_SUPPORT', ''),
    X(11, 'ROBUST_CHANNEL_GR_ERROR_MISSING_HW', 'invalid or corrupted push buffer stream', 'RESTART_APP', 'CHECK_APP/CUDA'),
    X(12, 'ROBUST_CHANNEL_GR_ERROR_SW_METHOD', '', 'CONTACT_SUPPORT', ''),
    X(13, 'ROBUST_CHANNEL_GR_EXCEPTION/ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY', 'graphics engine exception', 'RESTART_APP', 'WORKFLOW_XID_13'),
    X(14, 'ROBUST_CHANNEL_FAKE_ERROR', '', 'IGNORE', 'CONTACT_SUPPORT'),
    X(15, 'ROBUST_CHANNEL_SCANLINE_TIMEOUT', '', 'CONTACT_SUPPORT', ''),
    X(16, 'ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT', '', 'CONTACT_SUPPORT', 'CONTACT_SUPPORT'),
    X(17, 'ROBUST_CHANNEL_PARAMETER_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(18, 'ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(19, 'ROBUST_CHANNEL_DISP_MISSED_NOTIFIER', '', 'CONTACT_SUPPORT', ''),
    X(20, 'ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD', '', 'CONTACT_SUPPORT', ''),
    X(21, 'ROBUST_CHANNEL_ME_ERROR_SW_METHOD', '', 'CONTACT_SUPPORT', ''),
    X(22, 'ROBUST_CHANNEL_VP_ERROR_SW_METHOD', '', 'CONTACT_SUPPORT', ''),
    X(23, 'ROBUST_CHANNEL_RC_LOGGING_ENABLED', '', 'CONTACT_SUPPORT', ''),
    X(24, 'ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT', '', 'CONTACT_SUPPORT', ''),
    X(25, 'ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY', 'invalid or illegal push buffer stream', 'RESTART_APP', 'CHECK_APP/CUDA'),
    X(26, 'ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT', '', 'CONTACT_SUPPORT', ''),
    X(27, 'ROBUST_CHANNEL_VP_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(28, 'ROBUST_CHANNEL_VP2_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(29, 'ROBUST_CHANNEL_BSP_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(30, 'ROBUST_CHANNEL_BAD_ADDR_ACCESS', '', 'CONTACT_SUPPORT', ''),
    X(31, 'ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT', 'GPU memory page fault', 'RESTART_APP', 'WORKFLOW_XID_31'),
    X(32, 'ROBUST_CHANNEL_PBDMA_ERROR', 'invalid or corrupted push buffer stream', 'RESTART_APP', 'CHECK_APP/CUDA'),
    X(33, 'ROBUST_CHANNEL_SEC_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(34, 'ROBUST_CHANNEL_MSVLD_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(35, 'ROBUST_CHANNEL_MSPDEC_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(36, 'ROBUST_CHANNEL_MSPPP_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(37, 'ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD', 'driver firmware error', 'IGNORE', 'CHECK_APP/CUDA'),
    X(38, 'ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT', 'driver firmware error', 'IGNORE', 'CONTACT_SUPPORT'),
    X(39, 'ROBUST_CHANNEL_CE0_ERROR', 'copy engine exception', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(40, 'ROBUST_CHANNEL_CE1_ERROR', 'copy engine exception', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(41, 'ROBUST_CHANNEL_CE2_ERROR', 'copy engine exception', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(42, 'ROBUST_CHANNEL_VIC_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(43, 'ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR', 'GPU stopped processing', 'IGNORE', 'CONTACT_SUPPORT'),
    X(44, 'ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW', 'graphics engine fault during context switch', 'IGNORE', 'CONTACT_SUPPORT'),
    X(45, 'ROBUST_CHANNEL_PREEMPTIVE_REMOVAL', 'preemptive cleanup after an earlier error', 'WORKFLOW_XID_45', 'Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid)'),
    X(46, 'ROBUST_CHANNEL_GPU_TIMEOUT_ERROR', 'GPU stopped processing', 'RESET_GPU', 'CONTACT_SUPPORT'),
    X(47, 'ROBUST_CHANNEL_NVENC0_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(48, 'ROBUST_CHANNEL_GPU_ECC_DBE', 'double bit ECC error', 'WORKFLOW_XID_48', 'WORKFLOW_XID_48'),
    X(49, 'SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY', '', 'CONTACT_SUPPORT', ''),
    X(50, 'SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(51, 'SILENT_RUNNING_STRESS_TEST_FAILURE', '', 'CONTACT_SUPPORT', ''),
    X(52, 'SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE', '', 'CONTACT_SUPPORT', ''),
    X(53, 'SILENT_RUNNING_TEMP_REDUCED_CLOCKING', '', 'CONTACT_SUPPORT', ''),
    X(54, 'SILENT_RUNNING_PWR_REDUCED_CLOCKING', 'auxiliary power not connected to the board', 'CHECK_MECHANICALS', 'CONTACT_SUPPORT'),
    X(55, 'SILENT_RUNNING_TEMPERATURE_READ_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(56, 'DISPLAY_CHANNEL_EXCEPTION', '', 'CONTACT_SUPPORT', ''),
    X(57, 'FB_LINK_TRAINING_FAILURE_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(58, 'FB_MEMORY_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(59, 'PMU_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(60, 'ROBUST_CHANNEL_SEC2_ERROR', 'video processor exception', 'RESTART_APP', 'INVESTIGATE_SW'),
    X(61, 'PMU_BREAKPOINT', '', 'CONTACT_SUPPORT', ''),
    X(62, 'PMU_HALT_ERROR', 'internal micro-controller halt', 'RESET_GPU', 'CONTACT_SUPPORT'),
    X(63, 'INFOROM_DRAM_RETIREMENT_EVENT', 'GPU memory row remapping event', 'IGNORE', 'IGNORE'),
    X(64, 'INFOROM_DRAM_RETIREMENT_FAILURE', 'GPU memory row remapping failure', 'RESET_GPU', 'CONTACT_SUPPORT'),
    X(65, 'ROBUST_CHANNEL_NVENC1_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(66, 'ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION', 'illegal access by driver', 'IGNORE', 'INVESTIGATE_SW'),
    X(67, 'ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION', 'illegal access by driver', 'IGNORE', 'CONTACT_SUPPORT'),
    X(68, 'ROBUST_CHANNEL_NVDEC0_ERROR', 'NVDEC0 exception', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(69, 'ROBUST_CHANNEL_GR_CLASS_ERROR', 'graphics engine class error', 'RESTART_APP', 'CHECK_APP/CUDA'),
    X(70, 'ROBUST_CHANNEL_CE3_ERROR', 'copy engine 3 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(71, 'ROBUST_CHANNEL_CE4_ERROR', 'copy engine 4 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(72, 'ROBUST_CHANNEL_CE5_ERROR', 'copy engine 5 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(73, 'ROBUST_CHANNEL_NVENC2_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(74, 'NVLINK_ERROR', 'NVLink error', 'WORKFLOW_NVLINK_ERR', 'CONTACT_SUPPORT'),
    X(75, 'ROBUST_CHANNEL_CE6_ERROR', 'copy engine 6 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(76, 'ROBUST_CHANNEL_CE7_ERROR', 'copy engine 7 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(77, 'ROBUST_CHANNEL_CE8_ERROR', 'copy engine 8 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(78, 'VGPU_START_ERROR', 'vGPU start error', 'UPDATE_SWFW', 'UPDATE_SWFW'),
    X(79, 'ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS', 'GPU has fallen off the bus', 'RESTART_BM', 'CONTACT_SUPPORT'),
    X(80, 'PBDMA_PUSHBUFFER_CRC_MISMATCH', 'corrupted data sent to GPU', 'RESTART_APP', 'CHECK_APP/CUDA'),
    X(81, 'ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(82, 'ROBUST_CHANNEL_NVJPG0_ERROR', 'NVJPG0 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(83, 'ROBUST_CHANNEL_NVDEC1_ERROR', 'NVDEC1 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(84, 'ROBUST_CHANNEL_NVDEC2_ERROR', 'NVDEC2 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(85, 'ROBUST_CHANNEL_CE9_ERROR', 'copy engine 9 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(86, 'ROBUST_CHANNEL_OFA0_ERROR', 'OFA exception', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(87, 'NVTELEMETRY_DRIVER_REPORT', '', 'CONTACT_SUPPORT', ''),
    X(88, 'ROBUST_CHANNEL_NVDEC3_ERROR', 'NVDEC3 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(89, 'ROBUST_CHANNEL_NVDEC4_ERROR', 'NVDEC4 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(90, 'LTC_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(91, 'RESERVED_XID', '', 'CONTACT_SUPPORT', ''),
    X(92, 'EXCESSIVE_SBE_INTERRUPTS', 'high single-bit ECC error rate', 'IGNORE', 'CONTACT_SUPPORT'),
    X(93, 'INFOROM_ERASE_LIMIT_EXCEEDED', 'InfoROM wear limit exceeded (non-fatal)', 'IGNORE', 'CONTACT_SUPPORT'),
    X(94, 'ROBUST_CHANNEL_CONTAINED_ERROR', 'contained memory error', 'RESTART_APP', 'IGNORE (sympathetic)'),
    X(95, 'ROBUST_CHANNEL_UNCONTAINED_ERROR', 'uncontained memory error', 'RESET_GPU', 'IGNORE (sympathetic)'),
    X(96, 'ROBUST_CHANNEL_NVDEC5_ERROR', 'NVDEC5 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(97, 'ROBUST_CHANNEL_NVDEC6_ERROR', 'NVDEC6 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(98, 'ROBUST_CHANNEL_NVDEC7_ERROR', 'NVDEC7 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(99, 'ROBUST_CHANNEL_NVJPG1_ERROR', 'NVJPG1 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(100, 'ROBUST_CHANNEL_NVJPG2_ERROR', 'NVJPG2 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(101, 'ROBUST_CHANNEL_NVJPG3_ERROR', 'NVJPG3 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(102, 'ROBUST_CHANNEL_NVJPG4_ERROR', 'NVJPG4 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(103, 'ROBUST_CHANNEL_NVJPG5_ERROR', 'NVJPG5 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(104, 'ROBUST_CHANNEL_NVJPG6_ERROR', 'NVJPG6 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(105, 'ROBUST_CHANNEL_NVJPG7_ERROR', 'NVJPG7 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(106, 'SMBPBI_TEST_MESSAGE', 'SMBPBI test message', 'IGNORE', 'IGNORE'),
    X(107, 'SMBPBI_TEST_MESSAGE_SILENT', 'SMBPBI test message silent', 'IGNORE', 'IGNORE'),
    X(108, 'NVLINK_REMOTE_TRANSLATION_ERROR', '', 'IGNORE', 'XID_137_FLOW'),
    X(109, 'ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR', 'context switch timeout error', 'RESET_GPU', 'CONTACT_SUPPORT'),
    X(110, 'SEC_FAULT_ERROR', 'security fault error', 'RESET_GPU', 'INVESTIGATE_SW'),
    X(111, 'BUNDLE_ERROR_EVENT', '', 'CONTACT_SUPPORT', ''),
    X(112, 'DISP_SUPERVISOR_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(113, 'DP_LT_FAILURE', '', 'CONTACT_SUPPORT', ''),
    X(114, 'HEAD_RG_UNDERFLOW', '', 'CONTACT_SUPPORT', ''),
    X(115, 'CORE_CHANNEL_REGS', '', 'CONTACT_SUPPORT', ''),
    X(116, 'WINDOW_CHANNEL_REGS', '', 'CONTACT_SUPPORT', ''),
    X(117, 'CURSOR_CHANNEL_REGS', '', 'CONTACT_SUPPORT', ''),
    X(118, 'HEAD_REGS', '', 'CONTACT_SUPPORT', ''),
    X(119, 'GSP_RPC_TIMEOUT', 'GSP RPC timeout', 'RESET_GPU', 'INVESTIGATE_SW'),
    X(120, 'GSP_ERROR', 'GSP error', 'RESET_GPU', 'INVESTIGATE_SW'),
    X(121, 'C2C_ERROR', 'C2C link error', 'IGNORE', 'CONTACT_SUPPORT'),
    X(122, 'SPI_PMU_RPC_READ_FAIL', '', 'CONTACT_SUPPORT', ''),
    X(123, 'SPI_PMU_RPC_WRITE_FAIL', '', 'CONTACT_SUPPORT', ''),
    X(124, 'SPI_PMU_RPC_ERASE_FAIL', '', 'CONTACT_SUPPORT', ''),
    X(125, 'INFOROM_FS_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(126, 'ROBUST_CHANNEL_CE10_ERROR', 'copy engine 10 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(127, 'ROBUST_CHANNEL_CE11_ERROR', 'copy engine 11 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(128, 'ROBUST_CHANNEL_CE12_ERROR', 'copy engine 12 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(129, 'ROBUST_CHANNEL_CE13_ERROR', 'copy engine 13 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(130, 'ROBUST_CHANNEL_CE14_ERROR', 'copy engine 14 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(131, 'ROBUST_CHANNEL_CE15_ERROR', 'copy engine 15 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(132, 'ROBUST_CHANNEL_CE16_ERROR', 'copy engine 16 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(133, 'ROBUST_CHANNEL_CE17_ERROR', 'copy engine 17 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(134, 'ROBUST_CHANNEL_CE18_ERROR', 'copy engine 18 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(135, 'ROBUST_CHANNEL_CE19_ERROR', 'copy engine 19 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(136, 'ALI_TRAINING_FAIL', 'link training failed', 'RESET_GPU', 'INVESTIGATE_LINK_SI'),
    X(137, 'NVLINK_PRIV_ERR', 'NVLink privilege error', 'IGNORE', 'XID_137_FLOW'),
    X(138, 'ROBUST_CHANNEL_DLA_ERROR', '', 'CONTACT_SUPPORT', ''),
    X(139, 'ROBUST_CHANNEL_OFA1_ERROR', 'OFA1 error', 'RESTART_APP', 'CONTACT_SUPPORT'),
    X(140, 'UNRECOVERABLE_ECC_ERROR_ESCAPE', 'ECC unrecovered error', 'RESET_GPU', 'CONTACT_SUPPORT'),
    X(141, 'ROBUST_CHANNEL_FAST_PATH_ERROR', 'CUDA fast path error', 'IGNORE', 'CONTACT_SUPPORT'),
    X(142, 'ROBUST_CHANNEL_NVENC3_ERROR', 'NVENC3 error', 'CONTACT_SUPPORT', ''),
    X(143, 'GPU_INIT_ERROR', 'GPU initialization error', 'RESET_GPU', 'CONTACT_SUPPORT'),
    X(144, 'NVLINK_SAW_ERROR', 'NVLink SAW error', 'WORKFLOW_NVLINK5_ERR', 'WORKFLOW_NVLINK5_ERR'),
    X(145, 'NVLINK_RLW_ERROR', 'NVLink RLW error', 'WORKFLOW_NVLINK5_ERR', 'WORKFLOW_NVLINK5_ERR'),
    X(146, 'NVLINK_TLW_ERROR', 'NVLink TLW error', 'WORKFLOW_NVLINK5_ERR', 'WORKFLOW_NVLINK5_ERR'),
    X(147, 'NVLINK_TREX_ERROR', 'NVLink TREX error', 'WORKFLOW_NVLINK5_ERR', 'WORKFLOW_NVLINK5_ERR'),
    X(148, 'NVLINK_NVLPW_CTRL_ERROR', 'NVLink NVLPW_CTRL error', 'WORKFLOW_NVLINK5_ERR', 'WORKFLOW_NVLINK5_ERR'),
    X(149, 'NVLINK_NETIR_ERROR', 'NVLink NETIR error', 'WORKFLOW_NVLINK5_ERR', 'WORKFLOW_NVLINK5_ERR'),
    X(150, 'NVLINK_MSE_ERROR', 'NVLink MSE error', 'WORKFLOW_NVLINK5_ERR', 'WORKFLOW_NVLINK5_ERR'),
    X(151, 'ROBUST_CHANNEL_KEY_ROTATION_ERROR', 'key rotation error', 'RESTART_VM', 'CONTACT_SUPPORT'),
    X(152, 'ROBUST_CHANNEL_DLA_SMMU_ERROR', 'DLA SMMU error', 'IGNORE', 'CONTACT_SUPPORT'),
    X(153, 'ROBUST_CHANNEL_DLA_TIMEOUT', 'DLA timeout error', 'IGNORE', 'CONTACT_SUPPORT'),
    X(154, 'GPU_RECOVERY_ACTION_CHANGED', 'GPU recovery action changed', 'XID_154', 'N/A Informational only regarding another Xid'),
    X(155, 'NVLINK_SW_DEFINED_ERROR', 'NVLink software-defined error', 'RESET_GPU', 'INVESTIGATE_SW_USER'),
    X(156, 'RESOURCE_RETIREMENT_EVENT', 'resource retirement event', 'RESET_GPU', 'IGNORE'),
    X(157, 'RESOURCE_RETIREMENT_FAILURE', 'resource retirement failure', 'IGNORE', 'CONTACT_SUPPORT'),
    X(158, 'GPU_FATAL_TIMEOUT', 'GPU fatal timeout', 'RESET_GPU', 'CONTACT_SUPPORT'),
    X(159, 'ROBUST_CHANNEL_CHI_NON_DATA_ERROR', 'CHI Non-Data error', 'CHECK_UVM', 'SYMPATHETIC_REPORT_SOLO'),
    X(160, 'CHANNEL_RETIREMENT_EVENT', 'channel retirement event', 'IGNORE', 'INVESTIGATE_SW'),
    X(161, 'CHANNEL_RETIREMENT_FAILURE', 'channel retirement failure', 'IGNORE', 'INVESTIGATE_SW'),
    X(162, 'PSHC_REENGAGED', 'power-smoothing circuitry re-engaged', '', ''),
    X(163, 'PSHC_DISENGAGED', 'power-smoothing circuitry disengaged', '', ''),
    X(164, 'PSHC_LOW_LIFETIME', 'power-smoothing circuitry near end of life', '', ''),
    X(165, 'PSHC_ZERO_LIFETIME', 'power-smoothing circuitry lifetime exhausted', '', ''),
    X(166, 'NVLINK_SECURE_CRYPTO_ERR', 'NVLink encrypted-traffic error (confidential computing)', '', ''),
    X(167, 'PCIE_FATAL_TIMEOUT', 'PCIe fatal timeout', '', ''),
    X(168, 'REDUCED_GPU_MEMORY_CAPACITY', 'reduced GPU memory capacity (errors in the write-protected region)', '', ''),
    X(169, 'SEC2_HALT_ERROR', 'internal micro-controller halt', '', ''),
    X(170, 'NVLINK_SECURE_OTHER', 'NVLink interrupt in confidential-computing mode', '', ''),
    X(171, 'UNCORRECTABLE_DRAM_ERROR', 'uncorrectable DRAM error (detail beside xid 48)', '', ''),
    X(172, 'UNCORRECTABLE_SRAM_ERROR', 'uncorrectable SRAM error (detail beside xid 48)', '', ''),
    X(173, 'C2C_FATAL_LINK_FAILURE', 'fatal chip-to-chip (C2C) link failure', '', ''),
    X(174, 'ROBUST_CHANNEL_RESETCHANNEL_KILL_PROCESS_SILENT', 'channel reset that kills the process without a report', '', ''),
    X(175, 'MEMORY_SUBSYSTEM_ERROR', 'memory subsystem error', '', ''),
    X(176, 'PCIE_CORRECTABLE_ERROR_FAULT', 'PCIe correctable errors raised to a fault', '', ''),
)
CATALOGUE: dict[int, XidEntry] = {e.code: e for e in ENTRIES}


@lru_cache(maxsize=256)
def _mask(pattern: str) -> tuple[int, int]:
    """``"------000000----------0111000110"`` (bit 31 first, ``-`` any) -> (mask, value)."""
    mask = value = 0
    for ch in pattern:
        mask, value = mask << 1, value << 1
        if ch != "-":
            mask |= 1
            value |= ch == "1"
    return mask, value


@record
class NvlinkRule:
    """One row of the catalogue's "Xid 144-150 Decode" sheet: an NVLink5 unit, the interrupt-information bits
    that name it (bits 20-25 the subcode, the low bits the unit; two encodings, by driver generation), the error
    status word, and what NVIDIA says of that combination."""

    xid: int
    unit: str  # ``NETIR_LINK_EVT/NETIR_LINK_DOWN``
    pattern_v1: str
    pattern_v2: str
    error_status: int
    resolution: str  # ``RESET_GPU``, ``IGNORE``, ``XID_154_EVAL`` (the Xid 154 that follows names the action)
    severity: str  # the catalogue's words: ``Fatal``, ``Link Fatal``, ``Non-fatal`` (footnote marks kept)

    @property
    def fatal(self) -> bool:
        return not self.severity.lower().startswith("non")

    def matches(self, intrinfo: int, error_status: int) -> bool:
        if error_status != self.error_status:
            return False
        return any(intrinfo & m == v for m, v in (_mask(self.pattern_v1), _mask(self.pattern_v2)))


R = NvlinkRule
#: The catalogue's "Xid 144-150 Decode" sheet (same source as ENTRIES)
NVLINK_RULES: tuple[NvlinkRule, ...] = (
    R(144, 'SAW_MVB', '------000000----------0000100001', '------000000-------------0000001', 0x00000001, 'IGNORE', 'Non-fatal'),
    R(144, 'SAW_MVB', '------000000----------0000100001', '------000000-------------0000001', 0x00000002, 'RESET_GPU', 'Fatal'),
    R(144, 'SAW_MVB', '------000000----------0000100001', '------000000-------------0000001', 0x00000004, 'IGNORE', 'Non-fatal'),
    R(144, 'SAW_MVB', '------000000----------0000100001', '------000000-------------0000001', 0x00000008, 'IGNORE', 'Non-fatal'),
    R(144, 'SAW_MVB', '------000000----------0000100001', '------000000-------------0000001', 0x00000010, 'RESET_GPU', 'Fatal'),
    R(144, 'SAW_MVB', '------000000----------0000100001', '------000000-------------0000001', 0x00000020, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_CTRL', '------000000----------0001100010', '------000000-------------0000011', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x00000001, 'XID_154_EVAL', 'Non-fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x00000002, 'XID_154_EVAL', 'Non-fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x00000004, 'XID_154_EVAL', 'Non-fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x00000008, 'XID_154_EVAL', 'Non-fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x00000010, 'XID_154_EVAL', 'Non-fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x00000020, 'XID_154_EVAL', 'Non-fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x00000040, 'RESET_GPU', 'Fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x00000080, 'RESET_GPU', 'Fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x00000100, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x00000200, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_REMAP', '------000000----------0010000010', '------000000-------------0000100', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_RSPCOL', '------000000----------0010100010', '------000000-------------0000101', 0x00000001, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_RSPCOL', '------000000----------0010100010', '------000000-------------0000101', 0x00000002, 'RESET_GPU', 'Fatal'),
    R(145, 'RLW_RSPCOL', '------000000----------0010100010', '------000000-------------0000101', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_RXPIPE', '------000000---------00011000010', '------000000------------00000110', 0x00000001, 'IGNORE', 'Non-fatal*'),
    R(145, 'RLW_RXPIPE', '------000000---------00011000010', '------000000------------00000110', 0x00000002, 'IGNORE', 'Non-fatal*'),
    R(145, 'RLW_RXPIPE', '------000000---------00011000010', '------000000------------00000110', 0x00000004, 'IGNORE', 'Non-fatal*'),
    R(145, 'RLW_RXPIPE', '------000000----------0011000010', '------000000-------------0000110', 0x00000008, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_RXPIPE', '------000000----------0011000010', '------000000-------------0000110', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_SRC_TRACK', '------000000----------0011100010', '------000000-------------0000111', 0x00000001, 'RESET_GPU', 'Fatal'),
    R(145, 'RLW_SRC_TRACK', '------000000----------0011100010', '------000000-------------0000111', 0x00000002, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_SRC_TRACK', '------000000----------0011100010', '------000000-------------0000111', 0x00000004, 'XID_154_EVAL', 'Non-fatal'),
    R(145, 'RLW_SRC_TRACK', '------000000----------0011100010', '------000000-------------0000111', 0x00000008, 'XID_154_EVAL', 'Non-fatal'),
    R(145, 'RLW_SRC_TRACK', '------000000----------0011100010', '------000000-------------0000111', 0x00000010, 'RESET_GPU', 'Fatal'),
    R(145, 'RLW_SRC_TRACK', '------000000----------0011100010', '------000000-------------0000111', 0x00000020, 'RESET_GPU', 'Fatal'),
    R(145, 'RLW_SRC_TRACK', '------000000----------0011100010', '------000000-------------0000111', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_TAGSTATE', '------000000----------0100000010', '------000000-------------0001000', 0x00000001, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_TAGSTATE', '------000000----------0100000010', '------000000-------------0001000', 0x00000002, 'RESET_GPU', 'Fatal'),
    R(145, 'RLW_TAGSTATE', '------000000----------0100000010', '------000000-------------0001000', 0x00010000, 'IGNORE', 'Non-fatal'),
    R(145, 'RLW_TAGSTATE', '------000000----------0100000010', '------000000-------------0001000', 0x00020000, 'RESET_GPU', 'Fatal'),
    R(145, 'RLW_TAGSTATE', '------000000----------0100000010', '------000000-------------0001000', 0x00100000, 'RESET_GPU', 'Fatal'),
    R(145, 'RLW_TAGSTATE', '------000000----------0100000010', '------000000-------------0001000', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_CTRL', '------000000----------0100100011', '------000000-------------0001001', 0x00000001, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_CTRL', '------000000----------0100100011', '------000000-------------0001001', 0x00000002, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_CTRL', '------000000----------0100100011', '------000000-------------0001001', 0x00000004, 'RESET_GPU', 'Fatal'),
    R(146, 'TLW_CTRL', '------000000----------0100100011', '------000000-------------0001001', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_RX/TLW_RX_PIPE0', '------000000----------0101000011', '------000000-------------0001010', 0x00000001, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_RX/TLW_RX_PIPE0', '------000000----------0101000011', '------000000-------------0001010', 0x00000002, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_RX/TLW_RX_PIPE0', '------000000----------0101000011', '------000000-------------0001010', 0x00000004, 'RESET_GPU', 'Fatal'),
    R(146, 'TLW_RX/TLW_RX_PIPE0', '------000000----------0101000011', '------000000-------------0001010', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_RX/TLW_RX_PIPE1', '------000000----------0101000011', '------000000-------------0001011', 0x00000001, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_RX/TLW_RX_PIPE1', '------000000----------0101000011', '------000000-------------0001011', 0x00000002, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_RX/TLW_RX_PIPE1', '------000000----------0101000011', '------000000-------------0001011', 0x00000004, 'RESET_GPU', 'Fatal'),
    R(146, 'TLW_RX/TLW_RX_PIPE1', '------000000----------0101000011', '------000000-------------0001011', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_TX/TLW_TX_PIPE0', '------000000----------0101100011', '------000000-------------0001100', 0x00000001, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_TX/TLW_TX_PIPE0', '------000000----------0101100011', '------000000-------------0001100', 0x00000002, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_TX/TLW_TX_PIPE0', '------000000----------0101100011', '------000000-------------0001100', 0x00000004, 'RESET_GPU', 'Fatal'),
    R(146, 'TLW_TX/TLW_TX_PIPE0', '------000000----------0101100011', '------000000-------------0001100', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_TX/TLW_TX_PIPE1', '------000000----------0101100011', '------000000-------------0001101', 0x00000001, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_TX/TLW_TX_PIPE1', '------000000----------0101100011', '------000000-------------0001101', 0x00000002, 'IGNORE', 'Non-fatal'),
    R(146, 'TLW_TX/TLW_TX_PIPE1', '------000000----------0101100011', '------000000-------------0001101', 0x00000004, 'RESET_GPU', 'Fatal'),
    R(146, 'TLW_TX/TLW_TX_PIPE1', '------000000----------0101100011', '------000000-------------0001101', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(147, 'TREX', '------000000----------0110000100', '------000000-------------0001110', 0x00000001, 'IGNORE', 'Non-fatal'),
    R(147, 'TREX', '------000000----------0110000100', '------000000-------------0001110', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(148, 'NVLPW_CTRL/NVLPW', '------000000----------0000000101', '------000000-------------0001111', 0x80000000, 'IGNORE', 'Non-fatal'),
    R(149, 'NETIR/NETIR_INT', '------000000----------0000000110', '------000000-------------0011000', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_BER_EVENT', '------000000----------1000100110', '------000000-------------0010011', 0x00000000, 'IGNORE', 'Non-fatal'),
    R(149, 'NETIR_BER_EVENT', '------000000----------1000100110', '------000000-------------0010011', 0x00000001, 'IGNORE', 'Non-fatal'),
    R(149, 'NETIR_BER_EVENT', '------000000----------1000100110', '------000000-------------0010011', 0x00000002, 'IGNORE', 'Non-fatal'),
    R(149, 'NETIR_BER_EVENT', '------000000----------1000100110', '------000000-------------0010011', 0x00000003, 'IGNORE', 'Non-fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------000000----------0111000110', '------000000-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------000001----------0111000110', '------000001-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------000010----------0111000110', '------000010-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------000100----------0111000110', '------000100-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------001010----------0111000110', '------001010-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------001111----------0111000110', '------001111-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------010000----------0111000110', '------010000-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------010001----------0111000110', '------010001-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------010010----------0111000110', '------010010-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------010101----------0111000110', '------010101-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------010110----------0111000110', '------010110-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------100000----------0111000110', '------100000-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------100001----------0111000110', '------100001-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------100010----------0111000110', '------100010-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------100011----------0111000110', '------100011-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------100100----------0111000110', '------100100-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------100101----------0111000110', '------100101-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------100110----------0111000110', '------100110-------------0010001', 0x00000000, 'IGNORE', 'Link Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------101000----------0111000110', '------101000-------------0010001', 0x00000000, 'IGNORE', 'Fatal'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------101010----------0111000110', '------101010-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal?'),
    R(149, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', '------101011----------0111000110', '------101011-------------0010001', 0x00000000, 'RESET_GPU', 'Link Fatal?'),
    R(149, 'NETIR_MFDE_EVENT', '------000000----------1001000110', '------000000-------------0010100', 0x00000001, 'RESET_GPU', 'Fatal**'),
    R(149, 'NETIR_MFDE_EVENT', '------000000----------1001000110', '------000000-------------0010100', 0x00000003, 'IGNORE', 'Non-fatal'),
    R(149, 'NETIR_MFDE_EVENT', '------000000----------1001000110', '------000000-------------0010100', 0x00000004, 'RESET_GPU', 'Fatal**'),
    R(149, 'NETIR_MFDE_EVENT', '------000000----------1001000110', '------000000-------------0010100', 0x00000005, 'RESET_GPU', 'Fatal**'),
    R(149, 'NETIR_MFDE_EVENT', '------000000----------1001000110', '------000000-------------0010100', 0x00000007, 'RESET_GPU', 'Fatal**'),
    R(150, 'MSE_WATCHDOG', '------000000----------0000000000', '------000000-------------0000000', 0x00000000, 'RESET_GPU', 'Fatal'),
)
_RULES_BY_XID: dict[int, tuple[NvlinkRule, ...]] = {
    x: tuple(r for r in NVLINK_RULES if r.xid == x) for x in sorted({r.xid for r in NVLINK_RULES})}


def nvlink_rule(xid: int, intrinfo: int, error_status: int) -> NvlinkRule | None:
    """The decode row for an Xid 144-150 line's first two interrupt words; None when no row matches (a
    combination the catalogue does not list, or a line without them)."""
    for rule in _RULES_BY_XID.get(xid, ()):
        if rule.matches(intrinfo, error_status):
            return rule
    return None


def entry(code: int) -> XidEntry | None:
    """The catalogue's entry for an Xid code; None for a code newer than this table (or not a code)."""
    return CATALOGUE.get(code)
