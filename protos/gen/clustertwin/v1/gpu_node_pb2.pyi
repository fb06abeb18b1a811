from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GpuHealth(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GPU_HEALTH_UNSPECIFIED: _ClassVar[GpuHealth]
    GPU_HEALTH_PASS: _ClassVar[GpuHealth]
    GPU_HEALTH_WARN: _ClassVar[GpuHealth]
    GPU_HEALTH_FAIL: _ClassVar[GpuHealth]

class GpuRecoveryAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GPU_RECOVERY_ACTION_NONE: _ClassVar[GpuRecoveryAction]
    GPU_RECOVERY_ACTION_GPU_RESET: _ClassVar[GpuRecoveryAction]
    GPU_RECOVERY_ACTION_NODE_REBOOT: _ClassVar[GpuRecoveryAction]
    GPU_RECOVERY_ACTION_DRAIN_P2P: _ClassVar[GpuRecoveryAction]
    GPU_RECOVERY_ACTION_DRAIN_AND_RESET: _ClassVar[GpuRecoveryAction]

class GpuFaultKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GPU_FAULT_KIND_UNSPECIFIED: _ClassVar[GpuFaultKind]
    GPU_FAULT_KIND_XID: _ClassVar[GpuFaultKind]
    GPU_FAULT_KIND_THERMAL_SLOWDOWN: _ClassVar[GpuFaultKind]
    GPU_FAULT_KIND_ECC_SBE: _ClassVar[GpuFaultKind]
    GPU_FAULT_KIND_ECC_DBE: _ClassVar[GpuFaultKind]
    GPU_FAULT_KIND_NVLINK_DOWN: _ClassVar[GpuFaultKind]
GPU_HEALTH_UNSPECIFIED: GpuHealth
GPU_HEALTH_PASS: GpuHealth
GPU_HEALTH_WARN: GpuHealth
GPU_HEALTH_FAIL: GpuHealth
GPU_RECOVERY_ACTION_NONE: GpuRecoveryAction
GPU_RECOVERY_ACTION_GPU_RESET: GpuRecoveryAction
GPU_RECOVERY_ACTION_NODE_REBOOT: GpuRecoveryAction
GPU_RECOVERY_ACTION_DRAIN_P2P: GpuRecoveryAction
GPU_RECOVERY_ACTION_DRAIN_AND_RESET: GpuRecoveryAction
GPU_FAULT_KIND_UNSPECIFIED: GpuFaultKind
GPU_FAULT_KIND_XID: GpuFaultKind
GPU_FAULT_KIND_THERMAL_SLOWDOWN: GpuFaultKind
GPU_FAULT_KIND_ECC_SBE: GpuFaultKind
GPU_FAULT_KIND_ECC_DBE: GpuFaultKind
GPU_FAULT_KIND_NVLINK_DOWN: GpuFaultKind

class GpuEccCounters(_message.Message):
    __slots__ = ("volatile_sbe", "volatile_dbe", "aggregate_sbe", "aggregate_dbe", "correctable_remapped_rows", "uncorrectable_remapped_rows", "row_remap_pending", "row_remap_failure")
    VOLATILE_SBE_FIELD_NUMBER: _ClassVar[int]
    VOLATILE_DBE_FIELD_NUMBER: _ClassVar[int]
    AGGREGATE_SBE_FIELD_NUMBER: _ClassVar[int]
    AGGREGATE_DBE_FIELD_NUMBER: _ClassVar[int]
    CORRECTABLE_REMAPPED_ROWS_FIELD_NUMBER: _ClassVar[int]
    UNCORRECTABLE_REMAPPED_ROWS_FIELD_NUMBER: _ClassVar[int]
    ROW_REMAP_PENDING_FIELD_NUMBER: _ClassVar[int]
    ROW_REMAP_FAILURE_FIELD_NUMBER: _ClassVar[int]
    volatile_sbe: int
    volatile_dbe: int
    aggregate_sbe: int
    aggregate_dbe: int
    correctable_remapped_rows: int
    uncorrectable_remapped_rows: int
    row_remap_pending: bool
    row_remap_failure: bool
    def __init__(self, volatile_sbe: _Optional[int] = ..., volatile_dbe: _Optional[int] = ..., aggregate_sbe: _Optional[int] = ..., aggregate_dbe: _Optional[int] = ..., correctable_remapped_rows: _Optional[int] = ..., uncorrectable_remapped_rows: _Optional[int] = ..., row_remap_pending: _Optional[bool] = ..., row_remap_failure: _Optional[bool] = ...) -> None: ...

class GpuNvLink(_message.Message):
    __slots__ = ("link", "up", "bandwidth_gbytes", "nvswitch", "crc_errors", "replay_errors", "recovery_errors")
    LINK_FIELD_NUMBER: _ClassVar[int]
    UP_FIELD_NUMBER: _ClassVar[int]
    BANDWIDTH_GBYTES_FIELD_NUMBER: _ClassVar[int]
    NVSWITCH_FIELD_NUMBER: _ClassVar[int]
    CRC_ERRORS_FIELD_NUMBER: _ClassVar[int]
    REPLAY_ERRORS_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_ERRORS_FIELD_NUMBER: _ClassVar[int]
    link: int
    up: bool
    bandwidth_gbytes: float
    nvswitch: int
    crc_errors: int
    replay_errors: int
    recovery_errors: int
    def __init__(self, link: _Optional[int] = ..., up: _Optional[bool] = ..., bandwidth_gbytes: _Optional[float] = ..., nvswitch: _Optional[int] = ..., crc_errors: _Optional[int] = ..., replay_errors: _Optional[int] = ..., recovery_errors: _Optional[int] = ...) -> None: ...

class GpuInfo(_message.Message):
    __slots__ = ("index", "uuid", "name", "pci_bus_id", "pci_device_id", "serial", "compute_capability", "numa_node", "memory_total_mib", "memory_used_mib", "memory_free_mib", "memory_reserved_mib", "temperature_c", "memory_temperature_c", "power_w", "power_limit_w", "total_energy_mj", "gpu_util", "mem_copy_util", "sm_clock_mhz", "mem_clock_mhz", "max_sm_clock_mhz", "persistence_mode", "compute_mode", "mig_enabled", "lost", "health", "last_xid", "recovery_action", "ecc", "nvlinks", "clock_throttle_reasons", "lease_ids", "pcie_replay_counter", "tensor_active", "dram_active", "gr_engine_active", "device_plugin_healthy", "health_reason", "fabric_state", "fabric_status", "fabric_clique_id", "fabric_cluster_uuid", "fabric_bandwidth")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PCI_BUS_ID_FIELD_NUMBER: _ClassVar[int]
    PCI_DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    SERIAL_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    NUMA_NODE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TOTAL_MIB_FIELD_NUMBER: _ClassVar[int]
    MEMORY_USED_MIB_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FREE_MIB_FIELD_NUMBER: _ClassVar[int]
    MEMORY_RESERVED_MIB_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_C_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TEMPERATURE_C_FIELD_NUMBER: _ClassVar[int]
    POWER_W_FIELD_NUMBER: _ClassVar[int]
    POWER_LIMIT_W_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ENERGY_MJ_FIELD_NUMBER: _ClassVar[int]
    GPU_UTIL_FIELD_NUMBER: _ClassVar[int]
    MEM_COPY_UTIL_FIELD_NUMBER: _ClassVar[int]
    SM_CLOCK_MHZ_FIELD_NUMBER: _ClassVar[int]
    MEM_CLOCK_MHZ_FIELD_NUMBER: _ClassVar[int]
    MAX_SM_CLOCK_MHZ_FIELD_NUMBER: _ClassVar[int]
    PERSISTENCE_MODE_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_MODE_FIELD_NUMBER: _ClassVar[int]
    MIG_ENABLED_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    LAST_XID_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_ACTION_FIELD_NUMBER: _ClassVar[int]
    ECC_FIELD_NUMBER: _ClassVar[int]
    NVLINKS_FIELD_NUMBER: _ClassVar[int]
    CLOCK_THROTTLE_REASONS_FIELD_NUMBER: _ClassVar[int]
    LEASE_IDS_FIELD_NUMBER: _ClassVar[int]
    PCIE_REPLAY_COUNTER_FIELD_NUMBER: _ClassVar[int]
    TENSOR_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    DRAM_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    GR_ENGINE_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_PLUGIN_HEALTHY_FIELD_NUMBER: _ClassVar[int]
    HEALTH_REASON_FIELD_NUMBER: _ClassVar[int]
    FABRIC_STATE_FIELD_NUMBER: _ClassVar[int]
    FABRIC_STATUS_FIELD_NUMBER: _ClassVar[int]
    FABRIC_CLIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    FABRIC_CLUSTER_UUID_FIELD_NUMBER: _ClassVar[int]
    FABRIC_BANDWIDTH_FIELD_NUMBER: _ClassVar[int]
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
    health: GpuHealth
    last_xid: int
    recovery_action: GpuRecoveryAction
    ecc: GpuEccCounters
    nvlinks: _containers.RepeatedCompositeFieldContainer[GpuNvLink]
    clock_throttle_reasons: _containers.RepeatedScalarFieldContainer[str]
    lease_ids: _containers.RepeatedScalarFieldContainer[str]
    pcie_replay_counter: int
    tensor_active: float
    dram_active: float
    gr_engine_active: float
    device_plugin_healthy: bool
    health_reason: str
    fabric_state: str
    fabric_status: str
    fabric_clique_id: int
    fabric_cluster_uuid: str
    fabric_bandwidth: str
    def __init__(self, index: _Optional[int] = ..., uuid: _Optional[str] = ..., name: _Optional[str] = ..., pci_bus_id: _Optional[str] = ..., pci_device_id: _Optional[str] = ..., serial: _Optional[str] = ..., compute_capability: _Optional[str] = ..., numa_node: _Optional[int] = ..., memory_total_mib: _Optional[int] = ..., memory_used_mib: _Optional[int] = ..., memory_free_mib: _Optional[int] = ..., memory_reserved_mib: _Optional[int] = ..., temperature_c: _Optional[float] = ..., memory_temperature_c: _Optional[float] = ..., power_w: _Optional[float] = ..., power_limit_w: _Optional[float] = ..., total_energy_mj: _Optional[int] = ..., gpu_util: _Optional[int] = ..., mem_copy_util: _Optional[int] = ..., sm_clock_mhz: _Optional[int] = ..., mem_clock_mhz: _Optional[int] = ..., max_sm_clock_mhz: _Optional[int] = ..., persistence_mode: _Optional[bool] = ..., compute_mode: _Optional[str] = ..., mig_enabled: _Optional[bool] = ..., lost: _Optional[bool] = ..., health: _Optional[_Union[GpuHealth, str]] = ..., last_xid: _Optional[int] = ..., recovery_action: _Optional[_Union[GpuRecoveryAction, str]] = ..., ecc: _Optional[_Union[GpuEccCounters, _Mapping]] = ..., nvlinks: _Optional[_Iterable[_Union[GpuNvLink, _Mapping]]] = ..., clock_throttle_reasons: _Optional[_Iterable[str]] = ..., lease_ids: _Optional[_Iterable[str]] = ..., pcie_replay_counter: _Optional[int] = ..., tensor_active: _Optional[float] = ..., dram_active: _Optional[float] = ..., gr_engine_active: _Optional[float] = ..., device_plugin_healthy: _Optional[bool] = ..., health_reason: _Optional[str] = ..., fabric_state: _Optional[str] = ..., fabric_status: _Optional[str] = ..., fabric_clique_id: _Optional[int] = ..., fabric_cluster_uuid: _Optional[str] = ..., fabric_bandwidth: _Optional[str] = ...) -> None: ...

class GpuNodeInfo(_message.Message):
    __slots__ = ("hostname", "rack", "product_name", "driver_version", "cuda_version", "gpu_count", "nvswitch_count", "cpu_sockets", "cpu_cores_per_socket", "cpu_threads", "cpu_model", "memory_bytes", "health", "boot_id", "uptime_s", "active_leases", "fabric_manager_running")
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    PRODUCT_NAME_FIELD_NUMBER: _ClassVar[int]
    DRIVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    CUDA_VERSION_FIELD_NUMBER: _ClassVar[int]
    GPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    NVSWITCH_COUNT_FIELD_NUMBER: _ClassVar[int]
    CPU_SOCKETS_FIELD_NUMBER: _ClassVar[int]
    CPU_CORES_PER_SOCKET_FIELD_NUMBER: _ClassVar[int]
    CPU_THREADS_FIELD_NUMBER: _ClassVar[int]
    CPU_MODEL_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    BOOT_ID_FIELD_NUMBER: _ClassVar[int]
    UPTIME_S_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_LEASES_FIELD_NUMBER: _ClassVar[int]
    FABRIC_MANAGER_RUNNING_FIELD_NUMBER: _ClassVar[int]
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
    health: GpuHealth
    boot_id: int
    uptime_s: float
    active_leases: int
    fabric_manager_running: bool
    def __init__(self, hostname: _Optional[str] = ..., rack: _Optional[str] = ..., product_name: _Optional[str] = ..., driver_version: _Optional[str] = ..., cuda_version: _Optional[str] = ..., gpu_count: _Optional[int] = ..., nvswitch_count: _Optional[int] = ..., cpu_sockets: _Optional[int] = ..., cpu_cores_per_socket: _Optional[int] = ..., cpu_threads: _Optional[int] = ..., cpu_model: _Optional[str] = ..., memory_bytes: _Optional[int] = ..., health: _Optional[_Union[GpuHealth, str]] = ..., boot_id: _Optional[int] = ..., uptime_s: _Optional[float] = ..., active_leases: _Optional[int] = ..., fabric_manager_running: _Optional[bool] = ...) -> None: ...

class GpuMigProfile(_message.Message):
    __slots__ = ("name", "gi_profile_id", "max_instances", "free_instances", "sm_count", "memory_gib", "memory_slices", "placements", "free_placements")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GI_PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    FREE_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    SM_COUNT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_GIB_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SLICES_FIELD_NUMBER: _ClassVar[int]
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    FREE_PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    gi_profile_id: int
    max_instances: int
    free_instances: int
    sm_count: int
    memory_gib: float
    memory_slices: int
    placements: _containers.RepeatedScalarFieldContainer[int]
    free_placements: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., gi_profile_id: _Optional[int] = ..., max_instances: _Optional[int] = ..., free_instances: _Optional[int] = ..., sm_count: _Optional[int] = ..., memory_gib: _Optional[float] = ..., memory_slices: _Optional[int] = ..., placements: _Optional[_Iterable[int]] = ..., free_placements: _Optional[_Iterable[int]] = ...) -> None: ...

class GpuComputeInstance(_message.Message):
    __slots__ = ("id", "profile", "slices", "uuid")
    ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    SLICES_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    id: int
    profile: str
    slices: int
    uuid: str
    def __init__(self, id: _Optional[int] = ..., profile: _Optional[str] = ..., slices: _Optional[int] = ..., uuid: _Optional[str] = ...) -> None: ...

class GpuInstance(_message.Message):
    __slots__ = ("gpu", "id", "profile", "gi_profile_id", "placement_start", "placement_size", "compute_instances")
    GPU_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    GI_PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_START_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_SIZE_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    id: int
    profile: str
    gi_profile_id: int
    placement_start: int
    placement_size: int
    compute_instances: _containers.RepeatedCompositeFieldContainer[GpuComputeInstance]
    def __init__(self, gpu: _Optional[int] = ..., id: _Optional[int] = ..., profile: _Optional[str] = ..., gi_profile_id: _Optional[int] = ..., placement_start: _Optional[int] = ..., placement_size: _Optional[int] = ..., compute_instances: _Optional[_Iterable[_Union[GpuComputeInstance, _Mapping]]] = ...) -> None: ...

class GpuDevice(_message.Message):
    __slots__ = ("gpu", "uuid", "gi_id", "ci_id", "mig_profile", "is_mig")
    GPU_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    GI_ID_FIELD_NUMBER: _ClassVar[int]
    CI_ID_FIELD_NUMBER: _ClassVar[int]
    MIG_PROFILE_FIELD_NUMBER: _ClassVar[int]
    IS_MIG_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    uuid: str
    gi_id: int
    ci_id: int
    mig_profile: str
    is_mig: bool
    def __init__(self, gpu: _Optional[int] = ..., uuid: _Optional[str] = ..., gi_id: _Optional[int] = ..., ci_id: _Optional[int] = ..., mig_profile: _Optional[str] = ..., is_mig: _Optional[bool] = ...) -> None: ...

class GpuLease(_message.Message):
    __slots__ = ("id", "job_id", "devices", "env", "created_at", "active", "end_reason", "ended_at", "utilization", "pid")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    id: str
    job_id: str
    devices: _containers.RepeatedCompositeFieldContainer[GpuDevice]
    env: _containers.ScalarMap[str, str]
    created_at: float
    active: bool
    end_reason: str
    ended_at: float
    utilization: int
    pid: int
    def __init__(self, id: _Optional[str] = ..., job_id: _Optional[str] = ..., devices: _Optional[_Iterable[_Union[GpuDevice, _Mapping]]] = ..., env: _Optional[_Mapping[str, str]] = ..., created_at: _Optional[float] = ..., active: _Optional[bool] = ..., end_reason: _Optional[str] = ..., ended_at: _Optional[float] = ..., utilization: _Optional[int] = ..., pid: _Optional[int] = ...) -> None: ...

class GpuFault(_message.Message):
    __slots__ = ("id", "kind", "gpu", "xid", "link", "count", "lease_id", "injected_at", "active", "cleared_at", "effect")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    XID_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    INJECTED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    CLEARED_AT_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: GpuFaultKind
    gpu: int
    xid: int
    link: int
    count: int
    lease_id: str
    injected_at: float
    active: bool
    cleared_at: float
    effect: str
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[_Union[GpuFaultKind, str]] = ..., gpu: _Optional[int] = ..., xid: _Optional[int] = ..., link: _Optional[int] = ..., count: _Optional[int] = ..., lease_id: _Optional[str] = ..., injected_at: _Optional[float] = ..., active: _Optional[bool] = ..., cleared_at: _Optional[float] = ..., effect: _Optional[str] = ...) -> None: ...

class GpuEvent(_message.Message):
    __slots__ = ("seq", "time", "node", "kind", "gpu", "xid", "lease_id", "health", "message")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    XID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    seq: int
    time: float
    node: str
    kind: str
    gpu: int
    xid: int
    lease_id: str
    health: GpuHealth
    message: str
    def __init__(self, seq: _Optional[int] = ..., time: _Optional[float] = ..., node: _Optional[str] = ..., kind: _Optional[str] = ..., gpu: _Optional[int] = ..., xid: _Optional[int] = ..., lease_id: _Optional[str] = ..., health: _Optional[_Union[GpuHealth, str]] = ..., message: _Optional[str] = ...) -> None: ...

class GpuTopologyMatrix(_message.Message):
    __slots__ = ("labels", "rows")
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.RepeatedScalarFieldContainer[str]
    rows: _containers.RepeatedCompositeFieldContainer[GpuTopologyRow]
    def __init__(self, labels: _Optional[_Iterable[str]] = ..., rows: _Optional[_Iterable[_Union[GpuTopologyRow, _Mapping]]] = ...) -> None: ...

class GpuTopologyRow(_message.Message):
    __slots__ = ("label", "cells", "cpu_affinity", "numa_affinity")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    CELLS_FIELD_NUMBER: _ClassVar[int]
    CPU_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    NUMA_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    label: str
    cells: _containers.RepeatedScalarFieldContainer[str]
    cpu_affinity: str
    numa_affinity: str
    def __init__(self, label: _Optional[str] = ..., cells: _Optional[_Iterable[str]] = ..., cpu_affinity: _Optional[str] = ..., numa_affinity: _Optional[str] = ...) -> None: ...

class GpuGetNodeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GpuGetNodeResponse(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: GpuNodeInfo
    def __init__(self, node: _Optional[_Union[GpuNodeInfo, _Mapping]] = ...) -> None: ...

class GpuListGpusRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GpuListGpusResponse(_message.Message):
    __slots__ = ("gpus", "next_page_token")
    GPUS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    gpus: _containers.RepeatedCompositeFieldContainer[GpuInfo]
    next_page_token: str
    def __init__(self, gpus: _Optional[_Iterable[_Union[GpuInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GpuGetGpuRequest(_message.Message):
    __slots__ = ("gpu",)
    GPU_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    def __init__(self, gpu: _Optional[int] = ...) -> None: ...

class GpuGetGpuResponse(_message.Message):
    __slots__ = ("gpu",)
    GPU_FIELD_NUMBER: _ClassVar[int]
    gpu: GpuInfo
    def __init__(self, gpu: _Optional[_Union[GpuInfo, _Mapping]] = ...) -> None: ...

class GpuGetTopologyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GpuGetTopologyResponse(_message.Message):
    __slots__ = ("topology",)
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    topology: GpuTopologyMatrix
    def __init__(self, topology: _Optional[_Union[GpuTopologyMatrix, _Mapping]] = ...) -> None: ...

class GpuSetMigModeRequest(_message.Message):
    __slots__ = ("gpu", "enabled")
    GPU_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    enabled: bool
    def __init__(self, gpu: _Optional[int] = ..., enabled: _Optional[bool] = ...) -> None: ...

class GpuSetMigModeResponse(_message.Message):
    __slots__ = ("gpu",)
    GPU_FIELD_NUMBER: _ClassVar[int]
    gpu: GpuInfo
    def __init__(self, gpu: _Optional[_Union[GpuInfo, _Mapping]] = ...) -> None: ...

class GpuListMigProfilesRequest(_message.Message):
    __slots__ = ("gpu", "page_size", "page_token")
    GPU_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    page_size: int
    page_token: str
    def __init__(self, gpu: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GpuListMigProfilesResponse(_message.Message):
    __slots__ = ("profiles", "next_page_token")
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    profiles: _containers.RepeatedCompositeFieldContainer[GpuMigProfile]
    next_page_token: str
    def __init__(self, profiles: _Optional[_Iterable[_Union[GpuMigProfile, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GpuListGpuInstancesRequest(_message.Message):
    __slots__ = ("gpu", "page_size", "page_token")
    GPU_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    page_size: int
    page_token: str
    def __init__(self, gpu: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GpuListGpuInstancesResponse(_message.Message):
    __slots__ = ("instances", "next_page_token")
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    instances: _containers.RepeatedCompositeFieldContainer[GpuInstance]
    next_page_token: str
    def __init__(self, instances: _Optional[_Iterable[_Union[GpuInstance, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GpuCreateGpuInstanceRequest(_message.Message):
    __slots__ = ("gpu", "profile", "placement_start", "default_compute_instance")
    GPU_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_START_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_COMPUTE_INSTANCE_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    profile: str
    placement_start: int
    default_compute_instance: bool
    def __init__(self, gpu: _Optional[int] = ..., profile: _Optional[str] = ..., placement_start: _Optional[int] = ..., default_compute_instance: _Optional[bool] = ...) -> None: ...

class GpuCreateGpuInstanceResponse(_message.Message):
    __slots__ = ("instance",)
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    instance: GpuInstance
    def __init__(self, instance: _Optional[_Union[GpuInstance, _Mapping]] = ...) -> None: ...

class GpuDestroyGpuInstanceRequest(_message.Message):
    __slots__ = ("gpu", "gi_id")
    GPU_FIELD_NUMBER: _ClassVar[int]
    GI_ID_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    gi_id: int
    def __init__(self, gpu: _Optional[int] = ..., gi_id: _Optional[int] = ...) -> None: ...

class GpuDestroyGpuInstanceResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GpuCreateComputeInstanceRequest(_message.Message):
    __slots__ = ("gpu", "gi_id", "slices")
    GPU_FIELD_NUMBER: _ClassVar[int]
    GI_ID_FIELD_NUMBER: _ClassVar[int]
    SLICES_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    gi_id: int
    slices: int
    def __init__(self, gpu: _Optional[int] = ..., gi_id: _Optional[int] = ..., slices: _Optional[int] = ...) -> None: ...

class GpuCreateComputeInstanceResponse(_message.Message):
    __slots__ = ("instance",)
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    instance: GpuComputeInstance
    def __init__(self, instance: _Optional[_Union[GpuComputeInstance, _Mapping]] = ...) -> None: ...

class GpuDestroyComputeInstanceRequest(_message.Message):
    __slots__ = ("gpu", "gi_id", "ci_id")
    GPU_FIELD_NUMBER: _ClassVar[int]
    GI_ID_FIELD_NUMBER: _ClassVar[int]
    CI_ID_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    gi_id: int
    ci_id: int
    def __init__(self, gpu: _Optional[int] = ..., gi_id: _Optional[int] = ..., ci_id: _Optional[int] = ...) -> None: ...

class GpuDestroyComputeInstanceResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GpuAcquireLeaseRequest(_message.Message):
    __slots__ = ("job_id", "count", "gpus", "mig_profile", "utilization")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    MIG_PROFILE_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    count: int
    gpus: _containers.RepeatedScalarFieldContainer[int]
    mig_profile: str
    utilization: int
    def __init__(self, job_id: _Optional[str] = ..., count: _Optional[int] = ..., gpus: _Optional[_Iterable[int]] = ..., mig_profile: _Optional[str] = ..., utilization: _Optional[int] = ...) -> None: ...

class GpuAcquireLeaseResponse(_message.Message):
    __slots__ = ("lease",)
    LEASE_FIELD_NUMBER: _ClassVar[int]
    lease: GpuLease
    def __init__(self, lease: _Optional[_Union[GpuLease, _Mapping]] = ...) -> None: ...

class GpuReleaseLeaseRequest(_message.Message):
    __slots__ = ("lease_id",)
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    def __init__(self, lease_id: _Optional[str] = ...) -> None: ...

class GpuReleaseLeaseResponse(_message.Message):
    __slots__ = ("lease",)
    LEASE_FIELD_NUMBER: _ClassVar[int]
    lease: GpuLease
    def __init__(self, lease: _Optional[_Union[GpuLease, _Mapping]] = ...) -> None: ...

class GpuListLeasesRequest(_message.Message):
    __slots__ = ("include_ended", "page_size", "page_token")
    INCLUDE_ENDED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    include_ended: bool
    page_size: int
    page_token: str
    def __init__(self, include_ended: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GpuListLeasesResponse(_message.Message):
    __slots__ = ("leases", "next_page_token")
    LEASES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[GpuLease]
    next_page_token: str
    def __init__(self, leases: _Optional[_Iterable[_Union[GpuLease, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GpuReportLoadRequest(_message.Message):
    __slots__ = ("lease_id", "utilization")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    utilization: int
    def __init__(self, lease_id: _Optional[str] = ..., utilization: _Optional[int] = ...) -> None: ...

class GpuReportLoadResponse(_message.Message):
    __slots__ = ("lease",)
    LEASE_FIELD_NUMBER: _ClassVar[int]
    lease: GpuLease
    def __init__(self, lease: _Optional[_Union[GpuLease, _Mapping]] = ...) -> None: ...

class GpuSetLeasePidRequest(_message.Message):
    __slots__ = ("lease_id", "pid")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    pid: int
    def __init__(self, lease_id: _Optional[str] = ..., pid: _Optional[int] = ...) -> None: ...

class GpuSetLeasePidResponse(_message.Message):
    __slots__ = ("lease",)
    LEASE_FIELD_NUMBER: _ClassVar[int]
    lease: GpuLease
    def __init__(self, lease: _Optional[_Union[GpuLease, _Mapping]] = ...) -> None: ...

class GpuInjectFaultRequest(_message.Message):
    __slots__ = ("kind", "gpu", "xid", "link", "count", "lease_id")
    KIND_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    XID_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    kind: GpuFaultKind
    gpu: int
    xid: int
    link: int
    count: int
    lease_id: str
    def __init__(self, kind: _Optional[_Union[GpuFaultKind, str]] = ..., gpu: _Optional[int] = ..., xid: _Optional[int] = ..., link: _Optional[int] = ..., count: _Optional[int] = ..., lease_id: _Optional[str] = ...) -> None: ...

class GpuInjectFaultResponse(_message.Message):
    __slots__ = ("fault",)
    FAULT_FIELD_NUMBER: _ClassVar[int]
    fault: GpuFault
    def __init__(self, fault: _Optional[_Union[GpuFault, _Mapping]] = ...) -> None: ...

class GpuClearFaultRequest(_message.Message):
    __slots__ = ("fault_id",)
    FAULT_ID_FIELD_NUMBER: _ClassVar[int]
    fault_id: str
    def __init__(self, fault_id: _Optional[str] = ...) -> None: ...

class GpuClearFaultResponse(_message.Message):
    __slots__ = ("fault",)
    FAULT_FIELD_NUMBER: _ClassVar[int]
    fault: GpuFault
    def __init__(self, fault: _Optional[_Union[GpuFault, _Mapping]] = ...) -> None: ...

class GpuListFaultsRequest(_message.Message):
    __slots__ = ("include_cleared", "page_size", "page_token")
    INCLUDE_CLEARED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    include_cleared: bool
    page_size: int
    page_token: str
    def __init__(self, include_cleared: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GpuListFaultsResponse(_message.Message):
    __slots__ = ("faults", "next_page_token")
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    faults: _containers.RepeatedCompositeFieldContainer[GpuFault]
    next_page_token: str
    def __init__(self, faults: _Optional[_Iterable[_Union[GpuFault, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GpuResetGpuRequest(_message.Message):
    __slots__ = ("gpu",)
    GPU_FIELD_NUMBER: _ClassVar[int]
    gpu: int
    def __init__(self, gpu: _Optional[int] = ...) -> None: ...

class GpuResetGpuResponse(_message.Message):
    __slots__ = ("gpu",)
    GPU_FIELD_NUMBER: _ClassVar[int]
    gpu: GpuInfo
    def __init__(self, gpu: _Optional[_Union[GpuInfo, _Mapping]] = ...) -> None: ...

class GpuRebootNodeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GpuRebootNodeResponse(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: GpuNodeInfo
    def __init__(self, node: _Optional[_Union[GpuNodeInfo, _Mapping]] = ...) -> None: ...

class GpuKernelLogRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GpuKernelLogResponse(_message.Message):
    __slots__ = ("lines",)
    LINES_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, lines: _Optional[_Iterable[str]] = ...) -> None: ...

class GpuStopFabricManagerRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GpuStopFabricManagerResponse(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: GpuNodeInfo
    def __init__(self, node: _Optional[_Union[GpuNodeInfo, _Mapping]] = ...) -> None: ...

class GpuStartFabricManagerRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GpuStartFabricManagerResponse(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: GpuNodeInfo
    def __init__(self, node: _Optional[_Union[GpuNodeInfo, _Mapping]] = ...) -> None: ...

class GpuWatchEventsRequest(_message.Message):
    __slots__ = ("after_seq", "replay")
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    REPLAY_FIELD_NUMBER: _ClassVar[int]
    after_seq: int
    replay: bool
    def __init__(self, after_seq: _Optional[int] = ..., replay: _Optional[bool] = ...) -> None: ...

class GpuWatchEventsResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: GpuEvent
    def __init__(self, event: _Optional[_Union[GpuEvent, _Mapping]] = ...) -> None: ...
