"""One HGX H100 server as a deterministic state machine (no I/O, no sockets, no wall clock).

Every mutating method takes `now` (twin clock, seconds), validates the whole request first and
raises `ModelError` before touching anything, so a refused request changes nothing. Changes
append events (seq strictly increasing over the node's whole life, across restores); the servicer
drains them, persists and publishes.

Consequences of faults follow FIDELITY.md §2 and `xid.XID_TABLE`: health is derived from the
active faults on a GPU (clear, reset or reboot make it healthy again), Xid 79 makes the GPU vanish
until the node reboots, and Xids end the affected lease or every lease on the GPU.

NVSwitch fabric manager (FIDELITY.md §3): each node runs nvidia-fabricmanager, which trains every
GPU's NVLinks after boot; per GPU `fabric_state` goes Not Started → In Progress → Completed over
`spec.fabric_training_s` twin seconds (Not Started for the first quarter, while the manager
discovers the baseboard), advanced by `tick(now)`, one "fabric" event per transition. A lease stands
for a CUDA context: it is refused (FAILED_PRECONDITION, `cudaErrorSystemNotReady`) while a GPU is
not Completed or while the fabric manager is stopped, and the refusal changes nothing.

- Creation: `NodeModel(spec, now)` is the node as its daemon first answers, and the daemon serves
  only once the fabric is trained, so the boot is taken to have begun `fabric_training_s` earlier:
  every GPU is Completed, no training events.
- Reboot: the fabric manager restarts (even if it had been stopped) and retrains every GPU from
  `now`; the RebootNode RPC replies once training is done, like "reboot and wait for the node".
- Stop: as NVIDIA's Fabric Manager guide describes, CUDA processes already running keep running
  (their leases stay), new ones fail to initialise; the GPUs' trained state is kept.
- Start: GPUs still Completed stay so (the manager re-attaches, as in its restart mode); any GPU
  not trained (stopped mid-training, or reset while the manager was down) trains from `now`.
- GPU reset: with the manager running the GPU is retrained within the reset call; with it stopped
  the GPU is left Not Started until the manager starts.
- NVLink down (Xid 74): the state stays Completed, Fabric Health Bandwidth becomes "Degraded".
"""

from __future__ import annotations

import copy
import functools
from collections import deque
from collections.abc import Iterable
from typing import Any

from services.gpu_node import activity, mig, thermal, topo_matrix
from services.gpu_node.errors import ModelError
from services.gpu_node.records import (
    FABRIC_COMPLETED,
    FABRIC_IN_PROGRESS,
    FABRIC_NOT_STARTED,
    FAULT_KINDS,
    NVLINK_GBYTES,
    NVLINK_SWITCH,
    NVLINKS_PER_GPU,
    Device,
    EccState,
    Fault,
    GpuState,
    Lease,
    LinkState,
)
from services.gpu_node.spec import NodeSpec
from services.gpu_node.views import (
    ComputeInstanceView,
    GpuInstanceView,
    GpuView,
    MigProfileView,
    NodeView,
    NvLinkView,
)
from services.gpu_node.xid import Health, RecoveryAction, kernel_line, worst_recovery, xid_info

GPU_NAME = "NVIDIA H100 80GB HBM3"
PCI_DEVICE_ID = "0x233010DE"
COMPUTE_CAPABILITY = "9.0"
PRODUCT_NAME = "NVIDIA HGX H100 8-GPU"
NVSWITCH_COUNT = 4
CPU_MODEL = "Intel(R) Xeon(R) Platinum 8480C"
CPU_SOCKETS = 2
CPU_CORES_PER_SOCKET = 56
CPU_THREADS = 224
MEMORY_BYTES = 2 * 1024**4  # 2 TB (32 × 64 GiB DIMMs)
SBE_XID92_THRESHOLD = 100  # volatile SBE count at which the driver reports a high SBE rate

MAX_ENDED_LEASES = 256
MAX_CLEARED_FAULTS = 256
MAX_RETAINED_EVENTS = 1000
MAX_KERNEL_LOG = 1000
STATE_VERSION = 1
FABRIC_DISCOVERY_FRACTION = 0.25  # share of the training time a GPU stays Not Started
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
CUDA_NOT_READY = "cudaErrorSystemNotReady: system not yet initialized"

EVENT_KINDS = (
    "xid", "health", "lease_start", "lease_end", "mig", "fault",
    "fault_clear", "gpu_reset", "node_reboot", "gpu_lost", "fabric", "fabric_manager", "clocks",
)


def numa_node(gpu: int) -> int:
    return 0 if gpu < 4 else 1


class NodeModel:
    """The whole server: 8 GPUs, leases, faults, events, kernel log."""

    def __init__(self, spec: NodeSpec, now: float) -> None:
        self.spec = spec
        self.boot_id = 1
        self.boot_time = now
        self.last_tick = now
        self._seq = 0
        self._drained_seq = 0
        self._lease_counter = 0
        self._fault_counter = 0
        self._gpus = [self._fresh_gpu(i) for i in range(spec.gpu_count)]
        self._leases: dict[str, Lease] = {}
        self._faults: dict[str, Fault] = {}
        self._events: deque[dict[str, Any]] = deque(maxlen=MAX_RETAINED_EVENTS)
        self._pending: list[dict[str, Any]] = []
        self._kernel_log: deque[str] = deque(maxlen=MAX_KERNEL_LOG)
        self.fabric_manager_running = True  # boot began fabric_training_s ago: GPUs are trained
        self._clocks_seen: dict[int, tuple[int, int]] = {}   # see _note_clocks
        self._apply_boot_layout(now, announce=False)
        self._seed_clocks()

    # ======================================================================= helpers

    def _fresh_gpu(self, i: int) -> GpuState:
        return GpuState(index=i, thermal=thermal.idle_state(self._offset(i)))

    def _offset(self, i: int) -> float:
        return _idle_offset(self.spec.gpu_uuid(i))

    def _where(self, gpu: int | None = None) -> str:
        return self.spec.name if gpu is None else f"{self.spec.name}: GPU {gpu}"

    def _fail(self, code: str, message: str, gpu: int | None = None) -> ModelError:
        return ModelError(code, f"{self._where(gpu)}: {message}")  # type: ignore[arg-type]

    def _gpu(self, gpu: int, *, allow_lost: bool = False) -> GpuState:
        if not 0 <= gpu < len(self._gpus):
            raise self._fail("NOT_FOUND", f"GPU {gpu} not found; valid: 0-{len(self._gpus) - 1}")
        g = self._gpus[gpu]
        if g.lost and not allow_lost:
            raise self._fail(
                "FAILED_PRECONDITION",
                "GPU_IS_LOST (Xid 79: GPU has fallen off the bus); only a node reboot brings it back",
                gpu,
            )
        return g

    def _apply_boot_layout(self, now: float, announce: bool) -> None:
        """mig-parted at boot: apply the spec's named layout to every GPU."""
        name = self.spec.mig_layout
        if name is None:
            return
        for g in self._gpus:
            try:
                g.mig_enabled, g.gis = mig.layout(name)  # fresh objects per GPU
            except ModelError as e:
                raise e.prefixed(self.spec.name) from None
            g.mig_pending = g.mig_enabled
            if announce:
                self._emit(now, "mig", gpu=g.index, message=f"GPU {g.index}: layout {name} applied at boot")

    def _emit(
        self, now: float, kind: str, *, gpu: int = -1, xid: int = 0, lease_id: str = "",
        health: str = "", message: str = "",
    ) -> dict[str, Any]:
        self._seq += 1
        event = {
            "seq": self._seq, "time": now, "node": self.spec.name, "kind": kind, "gpu": gpu,
            "xid": xid, "lease_id": lease_id, "health": health, "message": message,
        }
        self._events.append(event)
        self._pending.append(event)
        return event

    def _klog(self, now: float, line: str) -> None:
        # dmesg prefixes seconds since boot.
        self._kernel_log.append(f"[{max(0.0, now - self.boot_time):12.6f}] {line}")

    def _active_leases(self, gpu: int | None = None) -> list[Lease]:
        return [
            lease for lease in self._leases.values()
            if lease.active and (gpu is None or gpu in lease.gpus)
        ]

    def _active_faults(self, gpu: int) -> list[Fault]:
        return [f for f in self._faults.values() if f.active and f.gpu == gpu]

    def _conditions(self, g: GpuState) -> list[tuple[Health, bool, RecoveryAction, str]]:
        """(health, device-plugin healthy, recovery, reason) of every active fault on the GPU."""
        out = []
        for f in self._active_faults(g.index):
            if f.kind == "THERMAL_SLOWDOWN":
                out.append((Health.WARN, True, RecoveryAction.NONE, "thermal slowdown"))
            elif f.xid:
                info = xid_info(f.xid)
                out.append((info.health, info.device_plugin_healthy, info.recovery, f"Xid {f.xid}: {info.meaning}"))
        return out

    def _health(self, g: GpuState) -> tuple[Health, bool, RecoveryAction, str]:
        conds = self._conditions(g)
        if not conds:
            return Health.PASS, True, RecoveryAction.NONE, ""
        worst = max(conds, key=lambda c: c[0])
        return (
            worst[0],
            all(c[1] for c in conds),
            worst_recovery([c[2] for c in conds]),
            "; ".join(c[3] for c in conds),
        )

    def _health_snapshot(self) -> list[tuple[Health, bool]]:
        return [self._health(g)[:2] for g in self._gpus]

    def _emit_health_changes(self, before: list[tuple[Health, bool]], now: float) -> None:
        for g, old in zip(self._gpus, before, strict=True):
            health, dp_ok, _, reason = self._health(g)
            if (health, dp_ok) != old:
                plugin = "healthy" if dp_ok else "unhealthy"
                self._emit(
                    now, "health", gpu=g.index, health=health.name,
                    message=f"GPU {g.index}: {old[0].name} -> {health.name}, device plugin {plugin}"
                    + (f" ({reason})" if reason else ""),
                )

    def _utilization(self, gpu: int) -> float:
        """Load on the GPU: whole-GPU leases count fully, a MIG device by its share of 7 slices."""
        total = 0.0
        for lease in self._active_leases(gpu):
            for d in lease.devices:
                if d.gpu != gpu:
                    continue
                if not d.is_mig:
                    total += lease.utilization
                    continue
                gi = self._gpus[gpu].gi(d.gi_id)
                ci = gi.ci(d.ci_id) if gi else None
                total += lease.utilization * (ci.slices if ci else 1) / 7.0
        return min(100.0, total)

    def _holder(self, gpu: int, gi_id: int | None = None, ci_id: int | None = None) -> Lease | None:
        for lease in self._active_leases(gpu):
            for d in lease.devices:
                if d.gpu == gpu and (gi_id is None or d.gi_id == gi_id) and (ci_id is None or d.ci_id == ci_id):
                    if gi_id is not None and not d.is_mig:
                        continue
                    return lease
        return None

    @staticmethod
    def _lease_name(lease: Lease) -> str:
        return f"lease {lease.id} (job {lease.job_id})"

    def _end_lease(self, lease: Lease, reason: str, now: float) -> None:
        lease.active, lease.end_reason, lease.ended_at = False, reason, now
        self._emit(now, "lease_end", gpu=lease.gpus[0] if len(lease.gpus) == 1 else -1,
                   lease_id=lease.id, message=f"job {lease.job_id}: {reason}")
        ended = [k for k, v in self._leases.items() if not v.active]
        for k in ended[: max(0, len(ended) - MAX_ENDED_LEASES)]:
            del self._leases[k]

    def _clear(self, fault: Fault, now: float, why: str) -> None:
        fault.active, fault.cleared_at = False, now
        if fault.xid == 74:  # one link-down fault per link at most, so its link comes back
            self._gpus[fault.gpu].links[fault.link].up = True
        event = self._emit(now, "fault_clear", gpu=fault.gpu, xid=fault.xid,
                           message=f"fault {fault.id} cleared: {why}")
        event["fault"] = fault.to_dict()  # the bus republishes the fault record from this
        cleared = [k for k, v in self._faults.items() if not v.active]
        for k in cleared[: max(0, len(cleared) - MAX_CLEARED_FAULTS)]:
            del self._faults[k]

    # ======================================================================= queries

    def node_info(self, now: float) -> NodeView:
        worst = max((self._health(g)[0] for g in self._gpus), default=Health.PASS)
        if any(g.lost for g in self._gpus):
            worst = Health.FAIL
        return NodeView(
            hostname=self.spec.name, rack=self.spec.rack, product_name=PRODUCT_NAME,
            driver_version=self.spec.driver_version, cuda_version=self.spec.cuda_version,
            gpu_count=sum(1 for g in self._gpus if not g.lost), nvswitch_count=NVSWITCH_COUNT,
            cpu_sockets=CPU_SOCKETS, cpu_cores_per_socket=CPU_CORES_PER_SOCKET, cpu_threads=CPU_THREADS,
            cpu_model=CPU_MODEL, memory_bytes=MEMORY_BYTES, health=worst, boot_id=self.boot_id,
            uptime_s=max(0.0, now - self.boot_time), active_leases=len(self._active_leases()),
            fabric_manager_running=self.fabric_manager_running,
        )

    def gpu_info(self, gpu: int) -> GpuView:
        """One GPU as NVML/DCGM report it; a lost GPU raises GPU_IS_LOST."""
        return self._view(self._gpu(gpu))

    def list_gpus(self, nvlinks: bool = True) -> list[GpuView]:
        """All GPUs; a lost one appears as a stub with `lost` set, as nvidia-smi prints an error row.
        `nvlinks=False` skips the 18 per-GPU link views (telemetry does not need them, every second)."""
        return [self._view(g, nvlinks) for g in self._gpus]

    def gpu_utilization(self, gpu: int) -> float:
        return self._utilization(gpu)

    def _view(self, g: GpuState, nvlinks: bool = True) -> GpuView:
        health, dp_ok, recovery, reason = self._health(g)
        lost = g.lost
        util = 0.0 if lost else self._utilization(g.index)
        act = activity.activity(util)
        slowdown = any(f.kind == "THERMAL_SLOWDOWN" for f in self._active_faults(g.index))
        sm, mem_clock, reasons = self._clocks(g, util, slowdown)
        if util > 0 and thermal.target_power(util) > g.power_limit_w:
            reasons.append("SW_POWER_CAP")   # the load wants more than the power limit lets it draw
        total = activity.MEMORY_TOTAL_MIB
        reserved = activity.MEMORY_RESERVED_MIB
        used = 0 if lost else self._memory_used(g, util)
        leases = [lease.id for lease in self._active_leases(g.index)]
        links = [
            NvLinkView(
                link=i, up=(ls.up and not lost), bandwidth_gbytes=NVLINK_GBYTES, nvswitch=NVLINK_SWITCH[i],
                crc_errors=ls.crc_errors, replay_errors=ls.replay_errors, recovery_errors=ls.recovery_errors,
            )
            for i, ls in enumerate(g.links)
        ] if nvlinks else []
        t = g.thermal
        return GpuView(
            index=g.index, uuid=self.spec.gpu_uuid(g.index), name=GPU_NAME,
            pci_bus_id=self.spec.pci_bus_id(g.index), pci_device_id=PCI_DEVICE_ID,
            serial=self.spec.gpu_serial(g.index), compute_capability=COMPUTE_CAPABILITY,
            numa_node=numa_node(g.index), memory_total_mib=total, memory_used_mib=used,
            memory_free_mib=max(0, total - reserved - used), memory_reserved_mib=reserved,
            temperature_c=0.0 if lost else round(t.temp_c, 2),
            memory_temperature_c=0.0 if lost else round(t.mem_temp_c, 2),
            power_w=0.0 if lost else round(t.power_w, 3), power_limit_w=g.power_limit_w,
            total_energy_mj=int(t.energy_mj), gpu_util=act.gpu_util, mem_copy_util=act.mem_copy_util,
            sm_clock_mhz=0 if lost else sm, mem_clock_mhz=0 if lost else mem_clock,
            max_sm_clock_mhz=thermal.SM_CLOCK_MAX_MHZ, persistence_mode=g.persistence, compute_mode="Default",
            mig_enabled=g.mig_enabled, lost=lost, health=health, last_xid=g.last_xid,
            recovery_action=recovery, ecc=copy.copy(g.ecc), nvlinks=links,
            clock_throttle_reasons=[] if lost else reasons, lease_ids=leases,
            pcie_replay_counter=g.pcie_replay, tensor_active=act.tensor_active,
            dram_active=act.dram_active, gr_engine_active=act.gr_engine_active,
            device_plugin_healthy=dp_ok, health_reason=reason,
            fabric_state=g.fabric_state,
            fabric_status="Success" if g.fabric_state == FABRIC_COMPLETED else "N/A",
            fabric_clique_id=0, fabric_cluster_uuid=ZERO_UUID,
            fabric_bandwidth="Degraded" if any(not ls.up for ls in g.links) else "Full",
        )

    def _clocks(self, g: GpuState, util: float, slowdown: bool) -> tuple[int, int, list[str]]:
        return thermal.clocks(util, g.thermal.temp_c, slowdown, g.app_sm_mhz, g.app_mem_mhz)

    def _clock_pair(self, g: GpuState) -> tuple[int, int]:
        slowdown = any(f.kind == "THERMAL_SLOWDOWN" for f in self._active_faults(g.index))
        sm, mem, _ = self._clocks(g, self._utilization(g.index), slowdown)
        return sm, mem

    def _seed_clocks(self) -> None:
        """What _note_clocks compares with, as the node is now (at boot or restored from its store)."""
        self._clocks_seen = {g.index: self._clock_pair(g) for g in self._gpus if not g.lost}

    def _note_clocks(self, now: float) -> None:
        """A `clocks` event (NVML's nvmlEventTypeClock) for each GPU whose SM or memory clock, as its
        view reports it, differs from what the last tick saw: it went busy or idle, its application
        clocks were set, a thermal slowdown began or ended. A change while the daemon was down is
        not announced (the restored node is the new baseline)."""
        for g in self._gpus:
            if g.lost:
                continue
            sm, mem = self._clock_pair(g)
            before = self._clocks_seen.get(g.index)
            self._clocks_seen[g.index] = (sm, mem)
            if before is not None and before != (sm, mem):
                self._emit(now, "clocks", gpu=g.index,
                           message=f"GPU {g.index}: clocks SM {before[0]} -> {sm} MHz, memory {before[1]} -> {mem} MHz")

    def _memory_used(self, g: GpuState, util: float) -> int:
        if not g.mig_enabled:
            return activity.memory_used_mib(activity.MEMORY_TOTAL_MIB, util, self._holder(g.index) is not None)
        used = 0
        for gi in g.gis:
            used += self.gi_memory_used_mib(g.index, gi)
        return used

    def gi_memory_used_mib(self, gpu: int, gi: mig.GpuInstance) -> int:
        holders = [self._holder(gpu, gi.id, ci.id) for ci in gi.cis]
        util = self.gi_utilization(gpu, gi)
        capacity = int(gi.spec.memory_gib * 1024)
        return activity.memory_used_mib(capacity, util, any(h is not None for h in holders))

    def gi_utilization(self, gpu: int, gi: mig.GpuInstance) -> float:
        """Load on one GPU instance: each held CI contributes its share of the GI's compute slices."""
        total = 0.0
        for ci in gi.cis:
            holder = self._holder(gpu, gi.id, ci.id)
            if holder is not None:
                total += holder.utilization * ci.slices / gi.spec.compute_slices
        return min(100.0, total)

    def gpu_instances_raw(self, gpu: int) -> list[mig.GpuInstance]:
        """The GI records of a GPU (copies), for renderers such as the dcgm exporter."""
        return copy.deepcopy(self._gpu(gpu).gis)

    def mig_profiles(self, gpu: int) -> list[MigProfileView]:
        """`nvidia-smi mig -lgip`: free counts depend on the layout; all zero while MIG is disabled."""
        g = self._gpu(gpu)
        out = []
        for p in mig.GI_PROFILES:
            free = mig.free_placements(p, g.gis) if g.mig_enabled else []
            out.append(MigProfileView(
                name=p.name, gi_profile_id=p.gi_profile_id, max_instances=p.max_instances,
                free_instances=mig.free_instances(p, g.gis) if g.mig_enabled else 0,
                sm_count=p.sm_count, memory_gib=p.memory_gib, memory_slices=p.size,
                placements=list(p.placements), free_placements=free,
            ))
        return out

    def _gi_view(self, gpu: int, gi: mig.GpuInstance) -> GpuInstanceView:
        return GpuInstanceView(
            gpu=gpu, id=gi.id, profile=gi.profile, gi_profile_id=gi.spec.gi_profile_id,
            placement_start=gi.start, placement_size=gi.spec.size,
            compute_instances=[self._ci_view(gpu, gi, ci) for ci in gi.cis],
        )

    def _ci_view(self, gpu: int, gi: mig.GpuInstance, ci: mig.ComputeInstance) -> ComputeInstanceView:
        profile = mig.ci_device_profile(gi.profile, ci.slices)
        return ComputeInstanceView(
            id=ci.id, profile=profile, slices=ci.slices, uuid=self.spec.mig_uuid(gpu, gi.id, ci.id, profile)
        )

    def gpu_instances(self, gpu: int) -> list[GpuInstanceView]:
        g = self._gpu(gpu)
        return [self._gi_view(gpu, gi) for gi in sorted(g.gis, key=lambda x: x.start)]

    def leases(self, include_ended: bool = False) -> list[Lease]:
        return [copy.deepcopy(v) for v in self._leases.values() if include_ended or v.active]

    def lease(self, lease_id: str) -> Lease:
        if lease_id not in self._leases:
            raise self._fail("NOT_FOUND", f"lease '{lease_id}' not found")
        return copy.deepcopy(self._leases[lease_id])

    def faults(self, include_cleared: bool = False) -> list[Fault]:
        return [copy.deepcopy(f) for f in self._faults.values() if include_cleared or f.active]

    def topology(self) -> topo_matrix.TopoMatrix:
        """`nvidia-smi topo -m`; lost GPUs drop out, down NVLinks lower the NV# count."""
        up = {g.index: sum(1 for ls in g.links if ls.up) for g in self._gpus if not g.lost}
        return topo_matrix.topology(up)

    def kernel_log(self) -> list[str]:
        return list(self._kernel_log)

    def events_after(self, seq: int) -> list[dict[str, Any]]:
        """Retained, already drained (committed) events with seq > `seq`."""
        return [dict(e) for e in self._events if seq < e["seq"] <= self._drained_seq]

    @property
    def last_seq(self) -> int:
        return self._seq

    # ======================================================================= MIG

    def set_mig_mode(self, gpu: int, enabled: bool, now: float) -> GpuView:
        g = self._gpu(gpu)
        if g.mig_enabled == enabled:
            g.mig_pending = enabled   # asking for the current mode cancels a pending change
            return self._view(g)
        holder = self._holder(gpu)
        if holder is not None:
            raise self._fail("FAILED_PRECONDITION", f"in use by {self._lease_name(holder)}; release it first", gpu)
        if not enabled and g.gis:
            raise self._fail(
                "FAILED_PRECONDITION",
                f"cannot disable MIG while GPU instances exist ({mig.describe(g.gis)}); destroy them first",
                gpu,
            )
        g.mig_enabled = g.mig_pending = enabled
        self._emit(now, "mig", gpu=gpu, message=f"GPU {gpu}: MIG mode {'enabled' if enabled else 'disabled'}")
        return self._view(g)

    def request_mig_mode(self, gpu: int, enabled: bool, now: float) -> bool:
        """nvmlDeviceSetMigMode: the driver resets the GPU to apply the mode. True if it did (the
        GPU was idle: as set_mig_mode); False if the GPU is in use (a lease; for disabling, GPU
        instances), so the mode is left pending until the next reset or reboot, as nvml.h's
        activationStatus IN_USE says."""
        g = self._gpu(gpu)
        busy = self._holder(gpu) is not None or (not enabled and g.gis)
        if g.mig_enabled == enabled or not busy:
            self.set_mig_mode(gpu, enabled, now)
            return True
        if g.mig_pending != enabled:
            g.mig_pending = enabled
            self._emit(now, "mig", gpu=gpu,
                       message=f"GPU {gpu}: MIG mode {'enable' if enabled else 'disable'} pending until reset")
        return False

    def mig_mode(self, gpu: int) -> tuple[bool, bool]:
        """(current, pending) MIG mode, as nvmlDeviceGetMigMode answers it."""
        g = self._gpu(gpu, allow_lost=True)
        return g.mig_enabled, g.mig_pending

    def _mig_gpu(self, gpu: int) -> GpuState:
        g = self._gpu(gpu)
        if not g.mig_enabled:
            raise self._fail("FAILED_PRECONDITION", "MIG mode is disabled; enable it first", gpu)
        return g

    def _find_gi(self, g: GpuState, gi_id: int) -> mig.GpuInstance:
        gi = g.gi(gi_id)
        if gi is None:
            have = ", ".join(str(x.id) for x in g.gis) or "none"
            raise self._fail("NOT_FOUND", f"GPU instance {gi_id} not found (existing: {have})", g.index)
        return gi

    def create_gpu_instance(
        self, gpu: int, profile: str, now: float, placement_start: int | None = None,
        default_compute_instance: bool = False,
    ) -> GpuInstanceView:
        g = self._mig_gpu(gpu)
        try:
            gi = mig.plan_gpu_instance(g.gis, profile, placement_start, default_compute_instance)
        except ModelError as e:
            raise e.prefixed(self._where(gpu)) from None
        g.gis.append(gi)
        self._emit(now, "mig", gpu=gpu,
                   message=f"GPU {gpu}: created GI {gi.id} ({gi.profile} at {gi.start}:{gi.spec.size})")
        return self._gi_view(gpu, gi)

    def destroy_gpu_instance(self, gpu: int, gi_id: int, now: float) -> None:
        g = self._mig_gpu(gpu)
        gi = self._find_gi(g, gi_id)
        holder = self._holder(gpu, gi_id)
        if holder is not None:
            raise self._fail("FAILED_PRECONDITION", f"GI {gi_id} in use by {self._lease_name(holder)}", gpu)
        if gi.cis:
            ids = ", ".join(str(c.id) for c in gi.cis)
            raise self._fail(
                "FAILED_PRECONDITION", f"GI {gi_id} still has compute instances ({ids}); destroy them first", gpu
            )
        g.gis.remove(gi)
        self._emit(now, "mig", gpu=gpu, message=f"GPU {gpu}: destroyed GI {gi_id} ({gi.profile})")

    def create_compute_instance(self, gpu: int, gi_id: int, slices: int, now: float,
                                placement_start: int | None = None) -> ComputeInstanceView:
        g = self._mig_gpu(gpu)
        gi = self._find_gi(g, gi_id)
        try:
            ci = mig.plan_compute_instance(gi, slices, placement_start)
        except ModelError as e:
            raise e.prefixed(self._where(gpu)) from None
        gi.cis.append(ci)
        self._emit(now, "mig", gpu=gpu, message=f"GPU {gpu}: created CI {ci.id} ({slices}c) in GI {gi_id}")
        return self._ci_view(gpu, gi, ci)

    def destroy_compute_instance(self, gpu: int, gi_id: int, ci_id: int, now: float) -> None:
        g = self._mig_gpu(gpu)
        gi = self._find_gi(g, gi_id)
        ci = gi.ci(ci_id)
        if ci is None:
            have = ", ".join(str(c.id) for c in gi.cis) or "none"
            raise self._fail("NOT_FOUND", f"compute instance {ci_id} not found in GI {gi_id} (existing: {have})", gpu)
        holder = self._holder(gpu, gi_id, ci_id)
        if holder is not None:
            raise self._fail("FAILED_PRECONDITION", f"GI {gi_id} CI {ci_id} in use by {self._lease_name(holder)}", gpu)
        gi.cis.remove(ci)
        self._emit(now, "mig", gpu=gpu, message=f"GPU {gpu}: destroyed CI {ci_id} in GI {gi_id}")

    # ======================================================================= NVML settings

    # What nvidia-smi -pl / -pm / -e / -ac change, through NVML's set calls (native/nvml/set_calls.c via
    # nvml_control.py). Each checks everything before it changes anything; an unchanged value is
    # no event.

    def set_power_limit(self, gpu: int, watts: float, now: float) -> GpuView:
        """nvmlDeviceSetPowerManagementLimit: within the board's constraints (200-700 W on H100 SXM)."""
        g = self._gpu(gpu)
        if not POWER_LIMIT_MIN_W <= watts <= thermal.POWER_CAP_W:
            raise self._fail("INVALID_ARGUMENT", f"power limit {watts:g} W outside "
                             f"{POWER_LIMIT_MIN_W:g}-{thermal.POWER_CAP_W:g} W", gpu)
        if watts != g.power_limit_w:
            self._emit(now, "settings", gpu=gpu,
                       message=f"GPU {gpu}: power limit {watts:g} W (was {g.power_limit_w:g} W)")
            g.power_limit_w = watts
        return self._view(g)

    def set_persistence(self, gpu: int, enabled: bool, now: float) -> GpuView:
        g = self._gpu(gpu)
        if enabled != g.persistence:
            self._emit(now, "settings", gpu=gpu,
                       message=f"GPU {gpu}: persistence mode {'enabled' if enabled else 'disabled'}")
            g.persistence = enabled
        return self._view(g)

    def set_ecc_mode(self, gpu: int, enabled: bool, now: float) -> GpuView:
        """nvmlDeviceSetEccMode: pending until the GPU is reset or the node reboots."""
        g = self._gpu(gpu)
        if enabled != g.ecc_pending:
            self._emit(now, "settings", gpu=gpu, message=f"GPU {gpu}: ECC mode {'enabled' if enabled else 'disabled'}"
                       " (pending: takes effect at the next reset or reboot)")
            g.ecc_pending = enabled
        return self._view(g)

    def set_app_clocks(self, gpu: int, mem_mhz: int, sm_mhz: int, now: float) -> GpuView:
        """nvmlDeviceSetApplicationsClocks: a supported (memory, graphics) pair; a busy GPU runs at it.
        ResetApplicationsClocks is this with the defaults."""
        g = self._gpu(gpu)
        if mem_mhz not in thermal.SUPPORTED_MEM_CLOCKS_MHZ or sm_mhz not in thermal.SUPPORTED_SM_CLOCKS_MHZ:
            raise self._fail("INVALID_ARGUMENT", f"application clocks {mem_mhz},{sm_mhz} MHz not supported "
                             f"(memory {thermal.SUPPORTED_MEM_CLOCKS_MHZ}, graphics "
                             f"{thermal.SM_CLOCK_IDLE_MHZ}-{thermal.SM_CLOCK_MAX_MHZ} in 15 MHz steps)", gpu)
        if (mem_mhz, sm_mhz) != (g.app_mem_mhz, g.app_sm_mhz):
            self._emit(now, "settings", gpu=gpu, message=f"GPU {gpu}: application clocks memory {mem_mhz} MHz, "
                       f"graphics {sm_mhz} MHz")
            g.app_mem_mhz, g.app_sm_mhz = mem_mhz, sm_mhz
        return self._view(g)

    def app_clocks(self, gpu: int) -> tuple[int, int]:
        """(graphics, memory) application clocks in MHz."""
        g = self._gpu(gpu, allow_lost=True)
        return g.app_sm_mhz, g.app_mem_mhz

    def ecc_mode(self, gpu: int) -> tuple[bool, bool]:
        """(current, pending) ECC mode, as nvmlDeviceGetEccMode."""
        g = self._gpu(gpu, allow_lost=True)
        return g.ecc_enabled, g.ecc_pending

    # ======================================================================= leases

    def acquire(
        self, job_id: str, now: float, *, count: int = 0, gpus: Iterable[int] = (), mig_profile: str = "",
        utilization: int = 0,
    ) -> Lease:
        """Lease whole GPUs (`count` or explicit `gpus`) or `count` MIG devices of `mig_profile`.

        All or nothing: a request that cannot be fully satisfied takes nothing.
        """
        gpus = list(gpus)
        if not job_id:
            raise self._fail("INVALID_ARGUMENT", "job_id is required")
        if not 0 <= utilization <= 100:
            raise self._fail("INVALID_ARGUMENT", f"utilization {utilization} out of range 0-100")
        if len(set(gpus)) != len(gpus):
            raise self._fail("INVALID_ARGUMENT", f"GPU list {gpus} names a GPU twice")
        if gpus and count and count != len(gpus):
            raise self._fail("INVALID_ARGUMENT", f"count {count} disagrees with {len(gpus)} GPUs listed")
        for i in gpus:
            self._gpu(i)
        if not self.fabric_manager_running:
            raise self._fail(
                "FAILED_PRECONDITION",
                f"{CUDA_NOT_READY} (NVIDIA fabric manager is not running; start nvidia-fabricmanager)",
            )
        if mig_profile:
            devices = self._pick_mig(mig_profile, count or (0 if gpus else 1), gpus)
        else:
            if not gpus and count <= 0:
                raise self._fail("INVALID_ARGUMENT", "ask for count >= 1 or list GPUs")
            devices = self._pick_whole(count, gpus)
        self._lease_counter += 1
        n = self._lease_counter
        lease = Lease(
            id=f"{self.spec.name}-lease-{n}", job_id=job_id, devices=devices,
            env={
                "NVIDIA_VISIBLE_DEVICES": ",".join(d.uuid for d in devices),
                # The container runtime renumbers what it exposes from 0.
                "CUDA_VISIBLE_DEVICES": ",".join(str(k) for k in range(len(devices))),
            },
            created_at=now, utilization=utilization, pid=10_000 + (n * 7_919) % 50_000,
        )
        self._leases[lease.id] = lease
        where = ", ".join(
            f"GPU {d.gpu}" + (f" GI {d.gi_id} CI {d.ci_id} ({d.mig_profile})" if d.is_mig else "") for d in devices
        )
        self._emit(now, "lease_start", gpu=lease.gpus[0] if len(lease.gpus) == 1 else -1,
                   lease_id=lease.id, message=f"job {job_id}: {where}")
        return copy.deepcopy(lease)

    def _unusable(self, g: GpuState) -> str | None:
        if g.lost:
            return "lost"
        health, dp_ok, _, reason = self._health(g)
        if not dp_ok or health == Health.FAIL:
            return f"unhealthy ({reason})"
        return self._fabric_unready(g)

    def _fabric_unready(self, g: GpuState) -> str | None:
        if g.fabric_state == FABRIC_COMPLETED:
            return None
        return f"{CUDA_NOT_READY} (NVLink fabric state {g.fabric_state})"

    def _raise_if_fabric_blocked(self, gpus: list[int]) -> None:
        """A request that falls short only because GPUs are still training fails as CUDA would."""
        scope = [g for g in self._gpus if (not gpus or g.index in gpus) and not g.lost]
        training = [g.index for g in scope if self._fabric_unready(g)]
        if training:
            states = ", ".join(f"GPU {i} {self._gpus[i].fabric_state}" for i in training)
            raise self._fail("FAILED_PRECONDITION", f"{CUDA_NOT_READY} (NVLink fabric training: {states})")

    def _pick_whole(self, count: int, gpus: list[int]) -> list[Device]:
        if gpus:
            for i in gpus:
                g = self._gpus[i]
                if g.mig_enabled:
                    raise self._fail("FAILED_PRECONDITION", "MIG mode is enabled; lease a MIG profile instead", i)
                holder = self._holder(i)
                if holder is not None:
                    raise self._fail("FAILED_PRECONDITION", f"already held by {self._lease_name(holder)}", i)
                why = self._unusable(g)
                if why:
                    raise self._fail("FAILED_PRECONDITION", why, i)
            chosen = gpus
        else:
            free = [
                g.index for g in self._gpus
                if not g.mig_enabled and self._holder(g.index) is None and self._unusable(g) is None
            ]
            if count > len(free):
                self._raise_if_fabric_blocked([])
                raise self._fail(
                    "RESOURCE_EXHAUSTED",
                    f"asked for {count} whole GPU(s), {len(free)} free ({', '.join(map(str, free)) or 'none'})",
                )
            chosen = free[:count]
        return [Device(gpu=i, uuid=self.spec.gpu_uuid(i)) for i in chosen]

    def _pick_mig(self, profile: str, count: int, gpus: list[int]) -> list[Device]:
        valid = mig.device_profile_names()
        if profile not in valid:
            raise self._fail("INVALID_ARGUMENT", f"MIG profile '{profile}' unknown; valid: {', '.join(valid)}")
        candidates: list[Device] = []
        for g in self._gpus:
            if (gpus and g.index not in gpus) or not g.mig_enabled or self._unusable(g):
                continue
            for gi in sorted(g.gis, key=lambda x: x.start):
                for ci in sorted(gi.cis, key=lambda x: x.start):
                    name = mig.ci_device_profile(gi.profile, ci.slices)
                    if name == profile and self._holder(g.index, gi.id, ci.id) is None:
                        uuid = self.spec.mig_uuid(g.index, gi.id, ci.id, name)
                        candidates.append(Device(g.index, uuid, gi.id, ci.id, name, True))
        want = count or len(gpus)
        if want > len(candidates):
            self._raise_if_fabric_blocked(gpus)
            scope = f"on GPU(s) {', '.join(map(str, gpus))}" if gpus else "on this node"
            raise self._fail(
                "RESOURCE_EXHAUSTED", f"asked for {want} × {profile}, {len(candidates)} free {scope}"
            )
        return candidates[:want]

    def release(self, lease_id: str, now: float) -> Lease:
        """End a lease; releasing an already ended lease is a no-op that returns it."""
        lease = self._leases.get(lease_id)
        if lease is None:
            raise self._fail("NOT_FOUND", f"lease '{lease_id}' not found")
        if lease.active:
            self._end_lease(lease, "released", now)
        return copy.deepcopy(lease)

    def report_load(self, lease_id: str, utilization: int, now: float) -> Lease:
        lease = self._leases.get(lease_id)
        if lease is None:
            raise self._fail("NOT_FOUND", f"lease '{lease_id}' not found")
        if not 0 <= utilization <= 100:
            raise self._fail("INVALID_ARGUMENT", f"utilization {utilization} out of range 0-100")
        if not lease.active:
            raise self._fail("FAILED_PRECONDITION", f"lease '{lease_id}' has ended ({lease.end_reason})")
        lease.utilization = utilization
        return copy.deepcopy(lease)

    def set_pid(self, lease_id: str, pid: int, now: float) -> Lease:
        """The job's process on the lease's devices (NVML's running process, the Xid lines' pid)."""
        lease = self._leases.get(lease_id)
        if lease is None:
            raise self._fail("NOT_FOUND", f"lease '{lease_id}' not found")
        if not 0 < pid < 2**22:   # Linux's pid_max limit
            raise self._fail("INVALID_ARGUMENT", f"pid {pid} out of range 1-{2**22 - 1}")
        if not lease.active:
            raise self._fail("FAILED_PRECONDITION", f"lease '{lease_id}' has ended ({lease.end_reason})")
        lease.pid = pid
        return copy.deepcopy(lease)

    # ======================================================================= faults

    def inject_fault(
        self, kind: str, gpu: int, now: float, *, xid: int = 0, link: int = 0, count: int = 0,
        lease_id: str = "",
    ) -> Fault:
        if kind not in FAULT_KINDS:
            raise self._fail("INVALID_ARGUMENT", f"fault kind '{kind}' unknown; valid: {', '.join(FAULT_KINDS)}")
        side = kind  # which side effects apply: Xids 48 and 74 stand for their hardware faults
        if kind == "XID":
            try:
                xid_info(xid)
            except ModelError as e:
                raise e.prefixed(self._where(gpu)) from None
            side = {48: "ECC_DBE", 74: "NVLINK_DOWN"}.get(xid, "XID")
        g = self._gpu(gpu)
        raised = {"ECC_DBE": 48, "NVLINK_DOWN": 74}.get(side, xid if side == "XID" else 0)
        if side == "NVLINK_DOWN":
            if not 0 <= link < NVLINKS_PER_GPU:
                raise self._fail("INVALID_ARGUMENT", f"NVLink {link} out of range 0-{NVLINKS_PER_GPU - 1}", gpu)
            if not g.links[link].up:
                raise self._fail("ALREADY_EXISTS", f"NVLink {link} is already down", gpu)
        if side == "THERMAL_SLOWDOWN":
            active = [f for f in self._active_faults(gpu) if f.kind == "THERMAL_SLOWDOWN"]
            if active:
                raise self._fail("ALREADY_EXISTS", f"thermal slowdown already active (fault {active[0].id})", gpu)
        target = self._fault_lease(gpu, lease_id)
        if side == "ECC_SBE":
            count = count or 1  # the proto default 0 means "one error"
            crossing = g.ecc.volatile_sbe < SBE_XID92_THRESHOLD <= g.ecc.volatile_sbe + count
            raised = 92 if crossing else 0

        # --- checks done; mutate from here on
        before = self._health_snapshot()
        self._fault_counter += 1
        fault = Fault(
            id=f"{self.spec.name}-fault-{self._fault_counter}", kind=kind, gpu=gpu, injected_at=now,
            xid=raised, link=link if side == "NVLINK_DOWN" else 0, count=count if side == "ECC_SBE" else 0,
            lease_id=target.id if target else "",
        )
        self._faults[fault.id] = fault
        event = self._emit(now, "fault", gpu=gpu, xid=raised, lease_id=fault.lease_id,
                           message=f"injected {kind}" + (f" (Xid {raised})" if raised else "") + f" on GPU {gpu}")
        effects: list[str] = []
        if side == "ECC_SBE":
            g.ecc.volatile_sbe += count
            g.ecc.aggregate_sbe += count
            effects.append(f"{count} single-bit ECC error(s) corrected; volatile SBE {g.ecc.volatile_sbe}")
        elif side == "ECC_DBE":
            g.ecc.volatile_dbe += 1
            g.ecc.aggregate_dbe += 1
            g.ecc.uncorrectable_remapped_rows += 1
            g.ecc.row_remap_pending = True
            effects.append("double-bit ECC error; row remap pending")
        elif side == "NVLINK_DOWN":
            ls: LinkState = g.links[link]
            ls.up = False
            ls.crc_errors += 16
            ls.replay_errors += 4
            ls.recovery_errors += 1
            effects.append(f"NVLink {link} down")
        elif side == "THERMAL_SLOWDOWN":
            g.thermal = thermal.start_slowdown(g.thermal)
            effects.append("thermal slowdown: clocks throttled")
        elif raised == 63:
            g.ecc.row_remap_pending = True
        elif raised == 64:
            g.ecc.row_remap_failure = True
        if raised:
            effects += self._raise_xid(g, raised, target, now, link)
        health, _, recovery, _ = self._health(g)
        effects.append(f"health {health.name}, recovery {recovery.name}")
        fault.effect = "; ".join(effects)
        event["fault"] = fault.to_dict()  # final record (with its effect), for the bus's fault topic
        self._emit_health_changes(before, now)
        return copy.deepcopy(fault)

    def _fault_lease(self, gpu: int, lease_id: str) -> Lease | None:
        """The job a fault hits: the named lease (must hold this GPU) or the first lease on the GPU."""
        if not lease_id:
            on_gpu = self._active_leases(gpu)
            return on_gpu[0] if on_gpu else None
        lease = self._leases.get(lease_id)
        if lease is None:
            raise self._fail("NOT_FOUND", f"lease '{lease_id}' not found", gpu)
        if not lease.active:
            raise self._fail("FAILED_PRECONDITION", f"lease '{lease_id}' has ended ({lease.end_reason})", gpu)
        if gpu not in lease.gpus:
            raise self._fail("FAILED_PRECONDITION", f"lease '{lease_id}' holds no device on GPU {gpu}", gpu)
        return lease

    def _raise_xid(self, g: GpuState, xid: int, target: Lease | None, now: float, link: int) -> list[str]:
        info = xid_info(xid)
        g.last_xid = xid
        line = kernel_line(xid, self.spec.pci_bus_id(g.index), target.pid if target else None, link)
        self._klog(now, line)
        self._emit(now, "xid", gpu=g.index, xid=xid, lease_id=target.id if target else "", message=line)
        effects = [f"Xid {xid}: {info.meaning}"]
        victims: list[Lease] = []
        if info.leases_end == "affected" and target is not None:
            victims = [target]
        elif info.leases_end == "all":
            victims = self._active_leases(g.index)
        if info.gpu_lost:
            g.lost = True
            self._emit(now, "gpu_lost", gpu=g.index, xid=xid, message=f"GPU {g.index} has fallen off the bus")
            effects.append("GPU lost until node reboot")
        for lease in victims:
            self._end_lease(lease, f"xid {xid} on GPU {g.index}", now)
        if victims:
            effects.append("ended " + ", ".join(v.id for v in victims))
        return effects

    def clear_fault(self, fault_id: str, now: float) -> Fault:
        fault = self._faults.get(fault_id)
        if fault is None:
            raise self._fail("NOT_FOUND", f"fault '{fault_id}' not found")
        if not fault.active:
            return copy.deepcopy(fault)
        if fault.xid and xid_info(fault.xid).gpu_lost:
            raise self._fail(
                "FAILED_PRECONDITION", f"fault {fault_id}: GPU lost (Xid 79); only a node reboot clears it", fault.gpu
            )
        before = self._health_snapshot()
        self._clear(fault, now, "cleared by operator")
        self._emit_health_changes(before, now)
        return copy.deepcopy(fault)

    def reset_gpu(self, gpu: int, now: float) -> GpuView:
        """`nvidia-smi -r`: refused while in use; clears volatile ECC and Xid state, activates pending
        row remaps, brings NVLinks up and loses the MIG layout (MIG mode itself stays)."""
        g = self._gpu(gpu)
        holders = self._active_leases(gpu)
        if holders:
            names = ", ".join(self._lease_name(h) for h in holders)
            raise self._fail("FAILED_PRECONDITION", f"in use by {names}; release before reset", gpu)
        before = self._health_snapshot()
        self._emit(now, "gpu_reset", gpu=gpu, message=f"GPU {gpu} reset")
        for f in self._active_faults(gpu):
            if f.kind != "THERMAL_SLOWDOWN":  # a reset does not fix the cooling
                self._clear(f, now, "GPU reset")
        g.ecc.volatile_sbe = g.ecc.volatile_dbe = 0
        g.ecc.row_remap_pending = False
        g.ecc_enabled = g.ecc_pending   # an ECC mode change takes effect at a reset
        g.last_xid = 0
        for ls in g.links:
            ls.up = True
        # NVSwitch systems: the fabric manager re-trains a reset GPU as part of the reset.
        self._set_fabric(g, FABRIC_NOT_STARTED, now, "GPU reset")
        g.fabric_train_start = None
        if self.fabric_manager_running:
            self._set_fabric(g, FABRIC_IN_PROGRESS, now, "fabric manager training NVLinks")
            self._set_fabric(g, FABRIC_COMPLETED, now, "NVLink training completed")
        if g.gis:
            self._emit(now, "mig", gpu=gpu, message=f"GPU {gpu}: MIG layout lost on reset ({mig.describe(g.gis)})")
            g.gis = []
        if g.mig_pending != g.mig_enabled:   # a mode nvmlDeviceSetMigMode left pending
            self.set_mig_mode(gpu, g.mig_pending, now)
        self._emit_health_changes(before, now)
        return self._view(g)

    def reboot(self, now: float) -> NodeView:
        """Node reboot: all leases end, faults clear, lost GPUs return, MIG layout re-applied at boot."""
        before = self._health_snapshot()
        self.boot_id += 1
        self._emit(now, "node_reboot", message=f"{self.spec.name} rebooted (boot {self.boot_id})")
        for lease in self._active_leases():
            self._end_lease(lease, "node reboot", now)
        for f in [f for f in self._faults.values() if f.active]:
            self._clear(f, now, "node reboot")
        for i, old in enumerate(self._gpus):
            fresh = self._fresh_gpu(i)
            # Persistent across reboots: MIG mode, aggregate ECC, remapped rows, the ECC mode (InfoROM;
            # a pending change takes effect now). The power limit, persistence mode and application
            # clocks go back to their defaults, as when the driver reloads.
            fresh.mig_enabled = fresh.mig_pending = old.mig_pending   # a pending MIG mode takes effect
            fresh.ecc_enabled = fresh.ecc_pending = old.ecc_pending
            fresh.ecc = EccState(
                aggregate_sbe=old.ecc.aggregate_sbe, aggregate_dbe=old.ecc.aggregate_dbe,
                correctable_remapped_rows=old.ecc.correctable_remapped_rows,
                uncorrectable_remapped_rows=old.ecc.uncorrectable_remapped_rows,
                row_remap_failure=old.ecc.row_remap_failure,
            )
            fresh.links = [LinkState(crc_errors=x.crc_errors, replay_errors=x.replay_errors,
                                     recovery_errors=x.recovery_errors) for x in old.links]
            self._gpus[i] = fresh
        self.boot_time = now
        self.last_tick = now
        self._kernel_log.clear()
        self._apply_boot_layout(now, announce=True)
        # nvidia-fabricmanager is enabled at boot: it starts and trains every GPU from now.
        if not self.fabric_manager_running:
            self.fabric_manager_running = True
            self._emit(now, "fabric_manager", message="fabric manager started at boot")
        for g in self._gpus:
            g.fabric_state, g.fabric_train_start = FABRIC_NOT_STARTED, now
        self._emit_health_changes(before, now)
        return self.node_info(now)

    # ======================================================================= fabric manager

    def _set_fabric(self, g: GpuState, state: str, now: float, why: str) -> None:
        if g.fabric_state == state:
            return
        old, g.fabric_state = g.fabric_state, state
        self._emit(now, "fabric", gpu=g.index, message=f"GPU {g.index}: fabric state {old} -> {state} ({why})")

    def _advance_fabric(self, now: float) -> None:
        if not self.fabric_manager_running:
            return
        period = max(0.0, self.spec.fabric_training_s)
        for g in self._gpus:
            if g.fabric_train_start is None or g.lost:
                continue
            elapsed = now - g.fabric_train_start
            if elapsed >= period * FABRIC_DISCOVERY_FRACTION:
                self._set_fabric(g, FABRIC_IN_PROGRESS, now, "fabric manager training NVLinks")
            if elapsed >= period:
                self._set_fabric(g, FABRIC_COMPLETED, now, "NVLink training completed")
                g.fabric_train_start = None

    def fabric_ready_at(self) -> float | None:
        """Twin time the last scheduled training ends; None when nothing is training."""
        starts = [g.fabric_train_start for g in self._gpus if g.fabric_train_start is not None and not g.lost]
        if not starts or not self.fabric_manager_running:
            return None
        return max(starts) + max(0.0, self.spec.fabric_training_s)

    def stop_fabric_manager(self, now: float) -> NodeView:
        """`systemctl stop nvidia-fabricmanager`: running leases continue, new ones are refused.

        GPUs keep their fabric state; a training in progress is abandoned (resumes on start)."""
        if not self.fabric_manager_running:  # like systemctl: stopping a stopped service is a no-op
            return self.node_info(now)
        self.fabric_manager_running = False
        self._emit(now, "fabric_manager", message="fabric manager stopped; new CUDA contexts will fail")
        return self.node_info(now)

    def start_fabric_manager(self, now: float) -> NodeView:
        """`systemctl start nvidia-fabricmanager`: trained GPUs stay Completed; others train from now."""
        if self.fabric_manager_running:  # starting a running service is a no-op
            return self.node_info(now)
        self.fabric_manager_running = True
        self._emit(now, "fabric_manager", message="fabric manager started")
        for g in self._gpus:
            if g.fabric_state != FABRIC_COMPLETED:
                g.fabric_train_start = now
                self._set_fabric(g, FABRIC_NOT_STARTED, now, "fabric manager started")
        self._advance_fabric(now)
        return self.node_info(now)

    # ======================================================================= time

    def tick(self, now: float) -> None:
        """Advance telemetry to `now` (power and temperature follow the current load)."""
        self._advance_fabric(now)
        dt = now - self.last_tick
        if dt <= 0:
            return
        for g in self._gpus:
            if g.lost:
                continue
            slowdown = any(f.kind == "THERMAL_SLOWDOWN" for f in self._active_faults(g.index))
            g.thermal = thermal.advance(g.thermal, self._utilization(g.index), dt, self._offset(g.index), slowdown,
                                        g.power_limit_w)
        self.last_tick = now
        self._note_clocks(now)

    # ======================================================================= events

    @property
    def has_pending_events(self) -> bool:
        return bool(self._pending)

    def drain_events(self) -> list[dict[str, Any]]:
        """Events not yet drained, oldest first; they count as committed from here on."""
        out, self._pending = self._pending, []
        if out:
            self._drained_seq = out[-1]["seq"]
        return [dict(e) for e in out]

    def requeue_events(self, events: list[dict[str, Any]]) -> None:
        """Put drained events back (their persist failed), so the next drain retries them."""
        if not events:
            return
        self._pending = [dict(e) for e in events] + self._pending
        self._drained_seq = min(self._drained_seq, events[0]["seq"] - 1)

    # ======================================================================= persistence

    def to_state(self) -> dict[str, Any]:
        """The whole node as JSON-serialisable data."""
        return {
            "version": STATE_VERSION,
            "node": self.spec.name,
            "boot_id": self.boot_id,
            "boot_time": self.boot_time,
            "last_tick": self.last_tick,
            "seq": self._seq,
            "drained_seq": self._drained_seq,
            "lease_counter": self._lease_counter,
            "fault_counter": self._fault_counter,
            "gpus": [g.to_dict() for g in self._gpus],
            "leases": [lease.to_dict() for lease in self._leases.values()],
            "faults": [f.to_dict() for f in self._faults.values()],
            "events": [dict(e) for e in self._events],
            "kernel_log": list(self._kernel_log),
            "fabric_manager_running": self.fabric_manager_running,
        }

    @classmethod
    def from_state(cls, spec: NodeSpec, state: dict[str, Any], now: float) -> NodeModel:
        """Rebuild a node from `to_state()` output. Events past the drained mark are pending again."""
        if state.get("version") != STATE_VERSION:
            raise ModelError("FAILED_PRECONDITION", f"{spec.name}: state version {state.get('version')} unsupported")
        if state["node"] != spec.name or len(state["gpus"]) != spec.gpu_count:
            raise ModelError(
                "FAILED_PRECONDITION",
                f"{spec.name}: saved state belongs to node '{state['node']}' with {len(state['gpus'])} GPUs",
            )
        model = cls.__new__(cls)
        model.spec = spec
        model.boot_id = state["boot_id"]
        model.boot_time = state["boot_time"]
        model.last_tick = state["last_tick"]
        model._seq = state["seq"]
        model._drained_seq = state["drained_seq"]
        model._lease_counter = state["lease_counter"]
        model._fault_counter = state["fault_counter"]
        model._gpus = [GpuState.from_dict(d) for d in state["gpus"]]
        # Creation order matters ("first lease on the GPU"); a store may hand rows back in any order.
        leases = sorted(state["leases"], key=lambda d: _serial(d["id"]))
        faults = sorted(state["faults"], key=lambda d: _serial(d["id"]))
        model._leases = {d["id"]: Lease.from_dict(d) for d in leases}
        model._faults = {d["id"]: Fault.from_dict(d) for d in faults}
        model._events = deque((dict(e) for e in state["events"]), maxlen=MAX_RETAINED_EVENTS)
        model._pending = [dict(e) for e in model._events if e["seq"] > model._drained_seq]
        model._kernel_log = deque(state["kernel_log"], maxlen=MAX_KERNEL_LOG)
        model.fabric_manager_running = state.get("fabric_manager_running", True)
        model._seed_clocks()
        del now  # restoring observes nothing new; the next tick advances telemetry
        return model


POWER_LIMIT_MIN_W = 200.0   # nvmlDeviceGetPowerManagementLimitConstraints' floor on an H100 SXM


def _serial(record_id: str) -> int:
    """The counter at the end of a lease or fault id (`gpu003-lease-12` → 12)."""
    tail = record_id.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


@functools.cache
def _idle_offset(uuid: str) -> float:
    return thermal.idle_offset(uuid)
