"""What libnvidia-ml.so.1 (native/nvml/) reads from its host's GPU-server daemon: the whole node in
one flat text page, refreshed by the library at most every few hundred milliseconds.

One line per fact, `KEY VALUE...`, space separated, a free-text value (a name) last; `gpu N` opens a
GPU's block and the lines up to the next `gpu` are about it. C parses it with sscanf, no JSON. The
page is the model read at once, so every call the library answers from one refresh is consistent.

    nvml 1                           format version
    driver 550.90.07                 nvmlSystemGetDriverVersion
    cuda 12040                       nvmlSystemGetCudaDriverVersion (major*1000 + minor*10)
    seq 171                          the id of the node's last event (event sets wait for events after it)
    event ID GPU TYPE DATA           the retained NVML events, oldest first: an Xid (nvmlEventType
                                     XidCriticalError, DATA the Xid), a single- or double-bit ECC error,
                                     a MIG configuration change, a clock change;
                                     ID = the node's event seq * 4 + which of the event's NVML events
    gpu 0                            then, per GPU:
    uuid GPU-...  / serial ... / bus 00000000:18:00.0 / pciid 0x233010DE / numa 0 / lost 0|1
    mem TOTAL_MIB RESERVED_MIB USED_MIB
    therm TEMP_C MEMTEMP_C POWER_MW LIMIT_MW ENERGY_MJ
    util GPU MEM / clocks SM MEM MAXSM / reasons BITMASK / lastxid N / replay N
    mig CURRENT PENDING              the MIG mode (0|1 each; pending: nvmlDeviceSetMigMode's, until a reset)
    ecc VOL_SBE VOL_DBE AGG_SBE AGG_DBE / remap CORR UNC PENDING FAILURE
    modes PERSISTENCE ECC_CURRENT ECC_PENDING   what NVML's set calls change (0|1 each)
    appclk SM MEM                    the application clocks (MHz)
    link N UP CRC REPLAY RECOVERY     one per NVLink
    proc PID USED_MIB GI CI           one per device of an active lease (CI = GI = 0xFFFFFFFF: whole GPU)
    gi ID PROFILE_ID START SIZE MEM_MIB USED_MIB   one per GPU instance
    ci GI ID SLICES START UUID PROFILE   one per compute instance: a MIG device
    gifree ... / cifree ...          what is still free (a MIG-enabled GPU; nvml_mig_profiles.py)
    name NVIDIA H100 80GB HBM3

The MIG profile tables (`gip`, `cip` lines, nvml_mig_profiles.py) and the supported clocks
(`supclk MAXSM MINSM STEP MEM...`: graphics MAXSM down to MINSM in STEP MHz, with each memory clock)
come once, before the GPUs.
"""

from __future__ import annotations

from services.gpu_node import mig
from services.gpu_node.model import NodeModel
from services.gpu_node.nvml_mig_profiles import PROFILE_LINES, capacity_lines
from services.gpu_node.thermal import SM_CLOCK_IDLE_MHZ, SM_CLOCK_MAX_MHZ, SUPPORTED_MEM_CLOCKS_MHZ
from services.gpu_node.views import GpuView

FORMAT_VERSION = 1
NO_INSTANCE = 0xFFFFFFFF   # NVML's "not a MIG process" gpuInstanceId/computeInstanceId
MAX_EVENT_LINES = 64
EVENT_XID, EVENT_SBE, EVENT_DBE = 0x8, 0x1, 0x2   # nvmlEventType*
EVENT_MIG_CONFIG = 0x100   # nvmlEventMigConfigChange
EVENT_CLOCK = 0x10         # nvmlEventTypeClock
ECC_EVENTS = {"ECC_SBE": EVENT_SBE, "ECC_DBE": EVENT_DBE}
# NVML's nvmlClocksEventReason* bits for the reasons the thermal model names.
REASON_BITS = {"GPU_IDLE": 0x1, "APPLICATIONS_CLOCKS_SETTING": 0x2, "SW_POWER_CAP": 0x4, "HW_SLOWDOWN": 0x8,
               "SW_THERMAL_SLOWDOWN": 0x20, "HW_THERMAL_SLOWDOWN": 0x40}


def cuda_int(version: str) -> int:
    """"12.4" -> 12040, as cudaDriverGetVersion and nvmlSystemGetCudaDriverVersion give it."""
    major, _, minor = version.partition(".")
    return int(major) * 1000 + int(minor or 0) * 10


def _gpu_lines(model: NodeModel, g: GpuView) -> list[str]:
    e = g.ecc
    out = [
        f"gpu {g.index}", f"uuid {g.uuid}", f"serial {g.serial}", f"bus {g.pci_bus_id}",
        f"pciid {g.pci_device_id}", f"numa {g.numa_node}", f"lost {int(g.lost)}",
        f"mem {g.memory_total_mib} {g.memory_reserved_mib} {g.memory_used_mib}",
        f"therm {int(g.temperature_c)} {int(g.memory_temperature_c)} {int(g.power_w * 1000)} "
        f"{int(g.power_limit_w * 1000)} {g.total_energy_mj}",
        f"util {g.gpu_util} {g.mem_copy_util}",
        f"clocks {g.sm_clock_mhz} {g.mem_clock_mhz} {g.max_sm_clock_mhz}",
        f"reasons {sum(REASON_BITS.get(r, 0) for r in g.clock_throttle_reasons)}",
        "mig {} {}".format(*map(int, model.mig_mode(g.index))),
        f"lastxid {g.last_xid}", f"replay {g.pcie_replay_counter}",
        f"ecc {e.volatile_sbe} {e.volatile_dbe} {e.aggregate_sbe} {e.aggregate_dbe}",
        f"remap {e.correctable_remapped_rows} {e.uncorrectable_remapped_rows} "
        f"{int(e.row_remap_pending)} {int(e.row_remap_failure)}",
        "modes {} {} {}".format(int(g.persistence_mode), *map(int, model.ecc_mode(g.index))),
        "appclk {} {}".format(*model.app_clocks(g.index)),
    ]
    out += [f"link {n.link} {int(n.up)} {n.crc_errors} {n.replay_errors} {n.recovery_errors}" for n in g.nvlinks]
    if not g.lost:
        gis = model.gpu_instances_raw(g.index)   # one copy of the layout for both (it is deep-copied)
        out += _proc_lines(model, g) + _mig_lines(model, g.index, gis)
        if g.mig_enabled:
            out += capacity_lines(gis)
    out.append(f"name {g.name}")
    return out


def _proc_lines(model: NodeModel, g: GpuView) -> list[str]:
    """The twin's leases as NVML's compute processes: one per leased device on this GPU. A lease
    holds the GPU's memory in use (shared among the leases on it; a MIG lease its instance's)."""
    mine = [(lease, d) for lease in model.leases() for d in lease.devices if d.gpu == g.index]
    whole = [x for x in mine if not x[1].is_mig]
    lines = []
    for lease, d in mine:
        if d.is_mig:
            gi = next((x for x in model.gpu_instances_raw(g.index) if x.id == d.gi_id), None)
            used = model.gi_memory_used_mib(g.index, gi) if gi else 0
            lines.append(f"proc {lease.pid} {used} {d.gi_id} {d.ci_id}")
        else:
            lines.append(f"proc {lease.pid} {g.memory_used_mib // max(1, len(whole))} {NO_INSTANCE} {NO_INSTANCE}")
    return lines


def _mig_lines(model: NodeModel, gpu: int, gis: list[mig.GpuInstance]) -> list[str]:
    lines = []
    for gi in sorted(gis, key=lambda x: x.start):
        mem = int(gi.spec.memory_gib * 1024)
        lines.append(f"gi {gi.id} {gi.spec.gi_profile_id} {gi.start} {gi.spec.size} {mem} "
                     f"{model.gi_memory_used_mib(gpu, gi)}")
    starts = {(gi.id, ci.id): ci.start for gi in gis for ci in gi.cis}
    for v in model.gpu_instances(gpu):
        lines += [f"ci {v.id} {c.id} {c.slices} {starts[v.id, c.id]} {c.uuid} {c.profile}" for c in v.compute_instances]
    return lines


def nvml_events(events: list[dict]) -> list[tuple[int, int, int, int]]:
    """(id, gpu, NVML event type, data) of the node's events that NVML reports: each Xid, the ECC
    errors injected (a double-bit error is also its Xid 48, an event of its own), each change of a
    GPU's MIG instances (a GPU or compute instance made or destroyed, a layout lost on reset or applied
    at boot; not a MIG mode change, which is no change of instances), and each change of a GPU's
    clocks (nvmlEventTypeClock, the model's `clocks` events; data 0, as nvml.h gives it for all but
    an Xid)."""
    out = []
    for e in events:
        if e["kind"] == "xid":
            out.append((e["seq"] * 4, e["gpu"], EVENT_XID, e["xid"]))
        elif e["kind"] == "fault" and e.get("fault", {}).get("kind") in ECC_EVENTS:
            out.append((e["seq"] * 4 + 1, e["gpu"], ECC_EVENTS[e["fault"]["kind"]], 0))
        elif e["kind"] == "mig" and e["gpu"] >= 0 and ": MIG mode " not in e.get("message", ""):
            out.append((e["seq"] * 4 + 2, e["gpu"], EVENT_MIG_CONFIG, 0))
        elif e["kind"] == "clocks":
            out.append((e["seq"] * 4 + 3, e["gpu"], EVENT_CLOCK, 0))
    return out


def render(model: NodeModel) -> str:
    spec = model.spec
    events = model.events_after(0)   # committed ones: an event set never sees one that may be undone
    lines = [f"nvml {FORMAT_VERSION}", f"driver {spec.driver_version}", f"cuda {cuda_int(spec.cuda_version)}",
             f"seq {events[-1]['seq'] * 4 + 3 if events else 0}"]
    lines += [f"event {i} {gpu} {kind} {data}" for i, gpu, kind, data in nvml_events(events)[-MAX_EVENT_LINES:]]
    lines += PROFILE_LINES
    lines.append(f"supclk {SM_CLOCK_MAX_MHZ} {SM_CLOCK_IDLE_MHZ} 15 " + " ".join(map(str, SUPPORTED_MEM_CLOCKS_MHZ)))
    for g in model.list_gpus():
        lines += _gpu_lines(model, g)
    return "\n".join(lines) + "\nend\n"
