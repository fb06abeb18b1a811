"""The mutable records the node model keeps, and their JSON form for the state store.

Every record round-trips through `to_dict`/`from_dict` exactly (lists, ints, floats, strings),
so a restarted daemon shows clients what they saw before.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from services.gpu_node import mig, thermal

NVLINKS_PER_GPU = 18
NVLINK_GBYTES = 26.562  # NVLink4, per link and direction
# 18 links spread over the 4 NVSwitch chips of the baseboard (5 + 4 + 4 + 5 on HGX H100).
NVLINK_SWITCH = (0,) * 5 + (1,) * 4 + (2,) * 4 + (3,) * 5

FaultKind = Literal["XID", "THERMAL_SLOWDOWN", "ECC_SBE", "ECC_DBE", "NVLINK_DOWN"]
FAULT_KINDS: tuple[str, ...] = ("XID", "THERMAL_SLOWDOWN", "ECC_SBE", "ECC_DBE", "NVLINK_DOWN")

# NVLink fabric training state of a GPU, as `nvidia-smi -q` prints it under "Fabric" (NVML
# nvmlGpuFabricState_t: NOT_SUPPORTED, NOT_STARTED, IN_PROGRESS, COMPLETED).
FABRIC_NOT_STARTED = "Not Started"
FABRIC_IN_PROGRESS = "In Progress"
FABRIC_COMPLETED = "Completed"
FABRIC_STATES: tuple[str, ...] = (FABRIC_NOT_STARTED, FABRIC_IN_PROGRESS, FABRIC_COMPLETED)


@dataclass
class Device:
    gpu: int
    uuid: str
    gi_id: int = 0
    ci_id: int = 0
    mig_profile: str = ""
    is_mig: bool = False


@dataclass
class Lease:
    id: str
    job_id: str
    devices: list[Device]
    env: dict[str, str]
    created_at: float
    utilization: int
    pid: int  # the pid the driver prints in Xid lines for this job's process
    active: bool = True
    end_reason: str = ""
    ended_at: float = 0.0

    @property
    def gpus(self) -> list[int]:
        return sorted({d.gpu for d in self.devices})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Lease:
        return cls(**{**d, "devices": [Device(**x) for x in d["devices"]], "env": dict(d["env"])})


@dataclass
class Fault:
    id: str
    kind: str  # one of FAULT_KINDS
    gpu: int
    injected_at: float
    xid: int = 0  # the Xid the fault raised, 0 if none
    link: int = 0
    count: int = 0
    lease_id: str = ""
    active: bool = True
    cleared_at: float = 0.0
    effect: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fault:
        return cls(**d)


@dataclass
class EccState:
    volatile_sbe: int = 0
    volatile_dbe: int = 0
    aggregate_sbe: int = 0
    aggregate_dbe: int = 0
    correctable_remapped_rows: int = 0
    uncorrectable_remapped_rows: int = 0
    row_remap_pending: bool = False
    row_remap_failure: bool = False


@dataclass
class LinkState:
    up: bool = True
    crc_errors: int = 0
    replay_errors: int = 0
    recovery_errors: int = 0


@dataclass
class GpuState:
    index: int
    thermal: thermal.ThermalState
    mig_enabled: bool = False
    # The mode nvmlDeviceSetMigMode asked for while the GPU could not be reset to apply it (in use):
    # NVML's pending MIG mode, applied at the next GPU reset or reboot. Equal to mig_enabled otherwise.
    mig_pending: bool = False
    gis: list[mig.GpuInstance] = field(default_factory=list)
    lost: bool = False
    last_xid: int = 0
    pcie_replay: int = 0
    ecc: EccState = field(default_factory=EccState)
    links: list[LinkState] = field(default_factory=lambda: [LinkState() for _ in range(NVLINKS_PER_GPU)])
    fabric_state: str = FABRIC_COMPLETED  # one of FABRIC_STATES
    # Twin time the fabric manager began training this GPU's NVLinks; None = not scheduled
    # (trained already, or waiting for a stopped fabric manager).
    fabric_train_start: float | None = None
    # What NVML's set calls change (nvidia-smi -pl / -pm / -e / -ac). The power limit, persistence mode
    # and application clocks last until the driver reloads (a reboot); an ECC mode change waits for a
    # reset or reboot.
    power_limit_w: float = thermal.POWER_CAP_W
    persistence: bool = True
    ecc_enabled: bool = True
    ecc_pending: bool = True
    app_sm_mhz: int = thermal.SM_CLOCK_MAX_MHZ     # application clocks (nvidia-smi -ac)
    app_mem_mhz: int = thermal.MEM_CLOCK_MHZ

    def gi(self, gi_id: int) -> mig.GpuInstance | None:
        return next((g for g in self.gis if g.id == gi_id), None)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GpuState:
        gis = [
            mig.GpuInstance(
                id=g["id"], profile=g["profile"], start=g["start"],
                cis=[mig.ComputeInstance(**c) for c in g["cis"]],
            )
            for g in d["gis"]
        ]
        return cls(
            index=d["index"],
            thermal=thermal.ThermalState(**d["thermal"]),
            mig_enabled=d["mig_enabled"],
            mig_pending=d.get("mig_pending", d["mig_enabled"]),   # saved before NVML's SetMigMode: none
            gis=gis,
            lost=d["lost"],
            last_xid=d["last_xid"],
            pcie_replay=d["pcie_replay"],
            ecc=EccState(**d["ecc"]),
            links=[LinkState(**x) for x in d["links"]],
            # States saved before the fabric manager was modelled are of trained GPUs.
            fabric_state=d.get("fabric_state", FABRIC_COMPLETED),
            fabric_train_start=d.get("fabric_train_start"),
            # States saved before NVML's set calls: the defaults.
            power_limit_w=d.get("power_limit_w", thermal.POWER_CAP_W),
            persistence=d.get("persistence", True),
            ecc_enabled=d.get("ecc_enabled", True),
            ecc_pending=d.get("ecc_pending", True),
            app_sm_mhz=d.get("app_sm_mhz", thermal.SM_CLOCK_MAX_MHZ),
            app_mem_mhz=d.get("app_mem_mhz", thermal.MEM_CLOCK_MHZ),
        )
