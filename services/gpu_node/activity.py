"""What a given utilisation looks like to DCGM's profiling and memory counters (pure).

A transformer training step keeps the graphics engine busy, the tensor pipes about half the time
and HBM somewhat less; these ratios are plausible defaults, not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

MEMORY_TOTAL_MIB = 81559
MEMORY_RESERVED_MIB = 585  # driver/firmware reservation nvidia-smi shows on H100 80GB
TENSOR_SHARE = 0.55
DRAM_SHARE = 0.45
MEM_COPY_SHARE = 0.60
PCIE_TX_BYTES_BUSY = 2.0e9  # bytes/s at full load (data loading, host offload)
PCIE_RX_BYTES_BUSY = 6.0e9


@dataclass(frozen=True)
class Activity:
    gpu_util: int
    mem_copy_util: int
    gr_engine_active: float
    tensor_active: float
    dram_active: float
    pcie_tx_bytes: int
    pcie_rx_bytes: int


def activity(util: float) -> Activity:
    u = min(max(util, 0.0), 100.0) / 100.0
    return Activity(
        gpu_util=round(u * 100),
        mem_copy_util=round(u * 100 * MEM_COPY_SHARE),
        gr_engine_active=round(u * 0.98, 4),
        tensor_active=round(u * TENSOR_SHARE, 4),
        dram_active=round(u * DRAM_SHARE, 4),
        pcie_tx_bytes=round(u * PCIE_TX_BYTES_BUSY),
        pcie_rx_bytes=round(u * PCIE_RX_BYTES_BUSY),
    )


def memory_used_mib(capacity_mib: int, util: float, held: bool) -> int:
    """A held device with load keeps most of its memory allocated (model weights, activations)."""
    if not held:
        return 0
    if util <= 0:
        return 512  # a CUDA context and a few buffers
    return int(capacity_mib * 0.92)
