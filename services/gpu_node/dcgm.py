"""Prometheus text exposition in dcgm-exporter's shape (names, HELP/TYPE lines, labels).

Field list: dcgm-exporter's default-counters.csv plus the ECC volatile totals and NVLink error
totals many sites add. Integer DCGM fields print as integers, double fields with six decimals, as
the exporter formats them. A MIG-enabled GPU with GPU instances emits one series per instance
(extra labels GPU_I_PROFILE, GPU_I_ID) whose memory and activity values are the instance's own;
a lost GPU emits nothing, as DCGM cannot read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from services.gpu_node import activity
from services.gpu_node.mig import GpuInstance
from services.gpu_node.model import NodeModel
from services.gpu_node.views import GpuView


@dataclass(frozen=True)
class Sample:
    """What one series reports: the GPU, plus the GPU instance it stands for (if any)."""

    gpu: GpuView
    gi: GpuInstance | None
    act: activity.Activity
    fb_used: int
    fb_free: int
    fb_reserved: int


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # "gauge" or "counter", as in default-counters.csv
    help: str
    value: Callable[[Sample], float | int]


def _nvlink_total(attr: str) -> Callable[[Sample], int]:
    return lambda s: sum(getattr(link, attr) for link in s.gpu.nvlinks)


FIELDS: tuple[Field, ...] = (
    Field("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", lambda s: s.gpu.sm_clock_mhz),
    Field("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", lambda s: s.gpu.mem_clock_mhz),
    Field("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).",
          lambda s: round(s.gpu.memory_temperature_c)),
    Field("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", lambda s: round(s.gpu.temperature_c)),
    Field("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", lambda s: float(s.gpu.power_w)),
    Field("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).",
          lambda s: s.gpu.total_energy_mj),
    Field("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.",
          lambda s: s.gpu.pcie_replay_counter),
    Field("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", lambda s: s.act.gpu_util),
    Field("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", lambda s: s.act.mem_copy_util),
    Field("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", lambda s: 0),
    Field("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", lambda s: 0),
    Field("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", lambda s: s.gpu.last_xid),
    Field("DCGM_FI_DEV_FB_FREE", "gauge", "Frame buffer memory free (in MB).", lambda s: s.fb_free),
    Field("DCGM_FI_DEV_FB_USED", "gauge", "Frame buffer memory used (in MB).", lambda s: s.fb_used),
    Field("DCGM_FI_DEV_FB_RESERVED", "gauge", "Frame buffer memory reserved (in MB).", lambda s: s.fb_reserved),
    Field("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
          lambda s: s.gpu.ecc.volatile_sbe),
    Field("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
          lambda s: s.gpu.ecc.volatile_dbe),
    Field("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors",
          lambda s: s.gpu.ecc.uncorrectable_remapped_rows),
    Field("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors",
          lambda s: s.gpu.ecc.correctable_remapped_rows),
    Field("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed",
          lambda s: int(s.gpu.ecc.row_remap_failure)),
    Field("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter",
          "Total number of NVLink flow-control CRC errors.", _nvlink_total("crc_errors")),
    Field("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries.",
          _nvlink_total("replay_errors")),
    Field("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors.",
          _nvlink_total("recovery_errors")),
    Field("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.",
          lambda s: float(s.act.gr_engine_active)),
    Field("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.",
          lambda s: float(s.act.tensor_active)),
    Field("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
          "Ratio of cycles the device memory interface is active sending or receiving data.",
          lambda s: float(s.act.dram_active)),
    Field("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
          "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads "
          "- in bytes per second.", lambda s: s.act.pcie_tx_bytes),
    Field("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
          "The rate of data received over the PCIe bus - including both protocol headers and data payloads "
          "- in bytes per second.", lambda s: s.act.pcie_rx_bytes),
)
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(model: NodeModel, s: Sample) -> str:
    pairs = [
        ("gpu", str(s.gpu.index)),
        ("UUID", s.gpu.uuid),
        ("pci_bus_id", s.gpu.pci_bus_id),
        ("device", f"nvidia{s.gpu.index}"),
        ("modelName", s.gpu.name),
    ]
    if s.gi is not None:
        pairs += [("GPU_I_PROFILE", s.gi.profile), ("GPU_I_ID", str(s.gi.id))]
    pairs += [("Hostname", model.spec.name), ("DCGM_FI_DRIVER_VERSION", model.spec.driver_version)]
    return ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)


def _format(value: float | int) -> str:
    return f"{value:f}" if isinstance(value, float) else str(int(value))


def samples(model: NodeModel) -> list[Sample]:
    out: list[Sample] = []
    for view in model.list_gpus():
        if view.lost:
            continue
        gis = model.gpu_instances_raw(view.index) if view.mig_enabled else []
        if not gis:
            act = activity.activity(view.gpu_util)
            out.append(Sample(view, None, act, view.memory_used_mib, view.memory_free_mib, view.memory_reserved_mib))
            continue
        for gi in sorted(gis, key=lambda g: g.start):
            act = activity.activity(model.gi_utilization(view.index, gi))
            used = model.gi_memory_used_mib(view.index, gi)
            total = int(gi.spec.memory_gib * 1024)
            out.append(Sample(view, gi, act, used, max(0, total - used), 0))
    return out


def render(model: NodeModel) -> str:
    """The body of GET /metrics on port 9400."""
    rows = samples(model)
    lines: list[str] = []
    for f in FIELDS:
        lines.append(f"# HELP {f.name} {f.help}")
        lines.append(f"# TYPE {f.name} {f.type}")
        lines.extend(f"{f.name}{{{_labels(model, s)}}} {_format(f.value(s))}" for s in rows)
    return "\n".join(lines) + "\n"
