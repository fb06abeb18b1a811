"""The Xid table: what each driver error means and what it does to jobs and the GPU (pure).

Recovery actions use NVML's numbering (nvmlDeviceGpuRecoveryAction_t). Health is DCGM's view;
`device_plugin_healthy` is the Kubernetes device plugin's, which ignores only the application
Xids 13, 31, 43, 45, 68, 109 and marks a GPU unhealthy on any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from services.gpu_node.errors import ModelError


class Health(IntEnum):
    """DCGM health; values match the proto enum."""

    PASS = 1
    WARN = 2
    FAIL = 3


class RecoveryAction(IntEnum):
    """nvmlDeviceGpuRecoveryAction_t."""

    NONE = 0
    GPU_RESET = 1
    NODE_REBOOT = 2
    DRAIN_P2P = 3
    DRAIN_AND_RESET = 4


# Which recovery wins when several conditions are active (the most drastic).
RECOVERY_SEVERITY = (
    RecoveryAction.NONE,
    RecoveryAction.DRAIN_P2P,
    RecoveryAction.GPU_RESET,
    RecoveryAction.DRAIN_AND_RESET,
    RecoveryAction.NODE_REBOOT,
)

LeaseEffect = Literal["none", "affected", "all"]


@dataclass(frozen=True)
class XidInfo:
    xid: int
    meaning: str
    kernel_text: str  # what follows "pid=..., " in the NVRM line
    health: Health
    device_plugin_healthy: bool
    recovery: RecoveryAction
    leases_end: LeaseEffect  # none / the affected job / every job on the GPU
    gpu_lost: bool = False
    needs_reset: bool = False
    needs_reboot: bool = False
    names_process: bool = True  # the driver prints the pid of the faulting process

    @property
    def application(self) -> bool:
        return self.xid in APPLICATION_XIDS


APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})

_P, _W, _F = Health.PASS, Health.WARN, Health.FAIL
_R = RecoveryAction

XID_TABLE: dict[int, XidInfo] = {
    x.xid: x
    for x in (
        XidInfo(13, "Graphics Engine Exception (application fault)",
                "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address",
                _P, True, _R.NONE, "affected"),
        XidInfo(31, "GPU memory page fault (application fault)",
                "Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ "
                "0x7f2a_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
                _P, True, _R.NONE, "affected"),
        XidInfo(43, "GPU stopped processing (application fault)", "Ch 00000008",
                _P, True, _R.NONE, "affected"),
        XidInfo(45, "Preemptive cleanup, due to previous errors", "Ch 00000010",
                _P, True, _R.NONE, "affected"),
        XidInfo(68, "NVDEC0 exception (video decoder)", "NVDEC0 Exception: Invalid Bitstream",
                _P, True, _R.NONE, "affected"),
        XidInfo(109, "Context switch timeout", "Ch 00000010, errorString CTX SWITCH TIMEOUT, Info 0x3c046",
                _P, True, _R.NONE, "affected"),
        # Without containment a DBE poisons every context on the GPU: drain and reset.
        XidInfo(48, "Double-bit ECC error",
                "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer "
                "at partition 6, subpartition 0.",
                _F, False, _R.DRAIN_AND_RESET, "all", needs_reset=True),
        XidInfo(63, "Row-remap pending (ECC page retirement recorded)",
                "Row Remapper: New row marked for remapping, reset gpu to activate.",
                _W, False, _R.GPU_RESET, "none", needs_reset=True, names_process=False),
        XidInfo(64, "Row-remap failure", "Row Remapper Error: Failed to remap row.",
                _W, False, _R.GPU_RESET, "none", needs_reset=True, names_process=False),
        # A fatal NVLink error kills the P2P users of the GPU; NVML asks to drain P2P then reset.
        XidInfo(74, "NVLink error", "NVLink: fatal error detected on link {link}(0x0, 0x0, 0x10000, 0x0, "
                "0x0, 0x0, 0x0)",
                _F, False, _R.DRAIN_P2P, "all", needs_reset=True, names_process=False),
        XidInfo(79, "GPU has fallen off the bus", "GPU has fallen off the bus.",
                _F, False, _R.NODE_REBOOT, "all", gpu_lost=True, needs_reboot=True, names_process=False),
        XidInfo(92, "High single-bit ECC error rate", "High single-bit ECC error rate detected",
                _P, False, _R.NONE, "none", names_process=False),
        XidInfo(94, "Contained ECC error", "Contained: SM (0x1). RST: No, D-RST: No",
                _F, False, _R.GPU_RESET, "affected", needs_reset=True),
        XidInfo(95, "Uncontained ECC error", "Uncontained: FBHUB. RST: Yes, D-RST: No",
                _F, False, _R.GPU_RESET, "all", needs_reset=True),
        XidInfo(119, "GSP RPC timeout",
                "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 "
                "(GSP_RM_CONTROL) (0x20802a02 0x8).",
                _F, False, _R.GPU_RESET, "all", needs_reset=True, names_process=False),
        XidInfo(120, "GSP error", "GSP Error: Task 1 raised error code 0x5 for reason 0x0 at 0x6e3e8 "
                "(0 more errors skipped)",
                _F, False, _R.GPU_RESET, "all", needs_reset=True, names_process=False),
        XidInfo(140, "Unrecovered ECC error",
                "An uncorrectable ECC error detected (possible firmware handling failure) DRAM:-1840691960, "
                "LTC:0, MMU:0, RM:0",
                _F, False, _R.GPU_RESET, "all", needs_reset=True),
    )
}


def xid_info(xid: int) -> XidInfo:
    try:
        return XID_TABLE[xid]
    except KeyError:
        valid = ", ".join(map(str, sorted(XID_TABLE)))
        raise ModelError("INVALID_ARGUMENT", f"Xid {xid} not emulated; valid: {valid}") from None


def kernel_pci(pci_bus_id: str) -> str:
    """`00000000:1A:00.0` → `0000:1a:00`, the form NVRM prints."""
    domain, bus, devfn = pci_bus_id.split(":")
    return f"{domain[-4:]}:{bus}:{devfn.split('.')[0]}".lower()


def kernel_line(xid: int, pci_bus_id: str, pid: int | None, link: int = 0) -> str:
    """The NVRM line as dmesg shows it (without the timestamp)."""
    info = xid_info(xid)
    who = f"pid={pid}" if pid is not None and info.names_process else "pid='<unknown>'"
    text = info.kernel_text.format(link=link)
    return f"NVRM: Xid (PCI:{kernel_pci(pci_bus_id)}): {xid}, {who}, {text}"


def worst_recovery(actions: list[RecoveryAction]) -> RecoveryAction:
    return max(actions, key=RECOVERY_SEVERITY.index, default=RecoveryAction.NONE)
