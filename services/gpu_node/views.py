"""Read-only snapshots the model hands out; field names match the proto messages one to one,
so the servicer converts with `Message(**dataclasses.asdict(view))`."""

from __future__ import annotations

from dataclasses import dataclass, field

from services.gpu_node.records import EccState
from services.gpu_node.xid import Health, RecoveryAction


@dataclass(frozen=True)
class NvLinkView:
    link: int
    up: bool
    bandwidth_gbytes: float
    nvswitch: int
    crc_errors: int
    replay_errors: int
    recovery_errors: int


@dataclass(frozen=True)
class GpuView:
    index: int
    uuid: str
    name: str
    pci_bus_id: str
    pci_device_id: str
    serial: str
    compute_capability: str
    numa_node: int
    memory_total_mib: int
    memory_used_mib: int
    memory_free_mib: int
    memory_reserved_mib: int
    temperature_c: float
    memory_temperature_c: float
    power_w: float
    power_limit_w: float
    total_energy_mj: int
    gpu_util: int
    mem_copy_util: int
    sm_clock_mhz: int
    mem_clock_mhz: int
    max_sm_clock_mhz: int
    persistence_mode: bool
    compute_mode: str
    mig_enabled: bool
    lost: bool
    health: Health
    last_xid: int
    recovery_action: RecoveryAction
    ecc: EccState
    nvlinks: list[NvLinkView]
    clock_throttle_reasons: list[str]
    lease_ids: list[str]
    pcie_replay_counter: int
    tensor_active: float
    dram_active: float
    gr_engine_active: float
    device_plugin_healthy: bool
    health_reason: str
    # `nvidia-smi -q` Fabric section (NVML nvmlDeviceGetGpuFabricInfo).
    fabric_state: str = "Completed"
    fabric_status: str = "Success"
    fabric_clique_id: int = 0
    fabric_cluster_uuid: str = "00000000-0000-0000-0000-000000000000"
    fabric_bandwidth: str = "Full"


@dataclass(frozen=True)
class NodeView:
    hostname: str
    rack: str
    product_name: str
    driver_version: str
    cuda_version: str
    gpu_count: int
    nvswitch_count: int
    cpu_sockets: int
    cpu_cores_per_socket: int
    cpu_threads: int
    cpu_model: str
    memory_bytes: int
    health: Health
    boot_id: int
    uptime_s: float
    active_leases: int
    fabric_manager_running: bool = True


@dataclass(frozen=True)
class MigProfileView:
    name: str
    gi_profile_id: int
    max_instances: int
    free_instances: int
    sm_count: int
    memory_gib: float
    memory_slices: int
    placements: list[int]
    free_placements: list[int]


@dataclass(frozen=True)
class ComputeInstanceView:
    id: int
    profile: str
    slices: int
    uuid: str


@dataclass(frozen=True)
class GpuInstanceView:
    gpu: int
    id: int
    profile: str
    gi_profile_id: int
    placement_start: int
    placement_size: int
    compute_instances: list[ComputeInstanceView] = field(default_factory=list)
