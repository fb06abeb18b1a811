"""The twin's one event schema: the envelope every event carries and each kind's payload.

An event is one flat JSON object: the envelope's fields (`ENVELOPE`) beside its kind's payload
fields, as the gRPC Event message has them, so a subscriber reads `event["xid"]` directly. Only
`emulator.bus` builds envelopes (`envelope()`); docs/EVENTS.md is rendered from this module
(`python -m emulator.events > docs/EVENTS.md`) and a test keeps the two equal.

    validate(doc)                 -> (Envelope, payload model); EventError naming what is wrong
    validate_message(topic, doc)  also checks the topic (events, fault records, telemetry)
    check_log(path)               -> (count, problems) of an event log ($CLUSTERTWIN_EVENT_LOG)
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SCHEMA_VERSION = 1
Subsystem = Literal["twin", "gpu", "fabric", "ceph", "lustre", "network", "train"]


class EventError(ValueError):
    """A published document that is not a valid event (or fault record) of this schema."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Envelope(Strict):
    """The fields every event carries, whatever its kind."""

    v: Literal[1] = Field(description="Schema version of the envelope and payloads.")
    twin: str = Field(description="The twin's name (the `clustertwin/<twin>` topic prefix).")
    subsystem: Subsystem = Field(description="Which part of the twin the event belongs to.")
    source: str = Field(description="The daemon or program that published it: gpu001, fabric, ceph-mon, "
                                    "mds01, oss02, network (`twin net fault`), faults (the twin's fault log), train.")
    kind: str = Field(description="The event kind (the last topic level); selects the payload below.")
    id: str = Field(description="Unique id of this event (32 hex digits), for de-duplication.")
    time: float = Field(description="Twin-clock time, Unix seconds (emulator/clock.py: follows --clock-scale).")
    message: str = Field("", description="One human-readable line.")


ENVELOPE = tuple(Envelope.model_fields)


class FaultPayload(Strict):
    """A fault of any subsystem: the `fault` field of fault events, and the retained record on
    `faults/<node>/<fault id>` while the fault is active (an empty retained message removes it)."""

    id: str = Field(description="The fault's id (`twin fault clear ID`): fault-7, gpu001-fault-3, osd.4-1, net-2.")
    subsystem: str = Field(description="What it hits: gpu, ceph, lustre, network, fabric, slurm.")
    target: str = Field(description="`gpu001 GPU 3`, `osd.4`, `oss01`, `ib-leaf01:ib-spine01:0`, `gpu002`.")
    kind: str = Field(description="The subsystem's fault kind: xid, nvlink_down, stop, slow, oss-kill, link-down, ...")
    params: dict[str, Any] = Field(description="The kind's parameters: xid, link, count, lease_id; factor, "
                                               "pool, object; percent, group_a, group_b, ...")
    backend_id: str = Field("", description="For the twin's fault log: the subsystem's own id of the fault.")
    active: bool = Field(description="True while injected, false once cleared.")
    injected_at: float = Field(description="When it was injected (Unix seconds).")
    cleared_at: float | None = Field(None, description="When it was cleared, null while active.")
    effect: str = Field("", description="What it did, in words.")


class Telemetry(Strict):
    """One GPU's telemetry sample on `telemetry/<node>/gpu/<index>` (not an event: no envelope; QoS 0,
    every telemetry interval; the fields of dcgm-exporter's DCGM_FI_DEV_* gauges). A lost GPU sends none."""

    time: float = Field(description="Twin-clock time, Unix seconds.")
    node: str = Field(description="The GPU server.")
    gpu: int = Field(description="GPU index 0..7.")
    uuid: str = Field(description="GPU UUID (GPU-...).")
    power_w: float = Field(description="DCGM_FI_DEV_POWER_USAGE.")
    temperature_c: float = Field(description="DCGM_FI_DEV_GPU_TEMP.")
    memory_temperature_c: float = Field(description="DCGM_FI_DEV_MEMORY_TEMP.")
    gpu_util: float = Field(description="DCGM_FI_DEV_GPU_UTIL (%).")
    mem_copy_util: float = Field(description="DCGM_FI_DEV_MEM_COPY_UTIL (%).")
    sm_clock_mhz: int = Field(description="DCGM_FI_DEV_SM_CLOCK.")
    mem_clock_mhz: int = Field(description="DCGM_FI_DEV_MEM_CLOCK.")
    memory_used_mib: int = Field(description="DCGM_FI_DEV_FB_USED.")
    memory_free_mib: int = Field(description="DCGM_FI_DEV_FB_FREE.")
    total_energy_mj: float = Field(description="DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION.")
    health: str = Field(description="DCGM health: PASS, WARN, FAIL.")
    last_xid: int = Field(description="DCGM_FI_DEV_XID_ERRORS: the last Xid, 0 if none.")
    throttle_reasons: list[str] = Field(description="DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, by name.")


# --------------------------------------------------------------------------- payloads, per subsystem


class FaultEvent(Strict):
    """A fault of the twin's one fault log (`twin fault inject|clear`, any subsystem) recorded or cleared."""

    fault: FaultPayload = Field(description="The fault record (above).")


class GpuEvent(Strict):
    """A GPU server's event, as its gRPC `Event` message and its store have it (DCGM's event
    and health-watch records; `xid` is the NVRM Xid the kernel log shows)."""

    seq: int = Field(description="The server's event sequence number (its gRPC WatchEvents order).")
    node: str = Field(description="The GPU server: gpu001.")
    gpu: int = Field(description="GPU index 0..7, -1 for the whole server.")
    xid: int = Field(description="NVRM Xid (0 if none): 31, 48, 63, 64, 74, 79, 94, 95, ...")
    lease_id: str = Field(description="The lease (job) it hit, '' if none.")
    health: str = Field(description="DCGM health (PASS, WARN, FAIL) for `health`, else ''.")


class GpuFaultEvent(GpuEvent):
    """A fault injected on (or cleared from) a GPU."""

    fault: FaultPayload = Field(description="The fault record (above).")


class FabricEvent(Strict):
    """An event of the InfiniBand fabric manager, shaped as UFM's events (`GET /ufmRest/app/events`)."""

    seq: int = Field(description="The fabric manager's event sequence number.")
    severity: Literal["Info", "Warning", "Minor", "Critical"] = Field(description="UFM severity.")
    system: str = Field(description="The switch or system concerned, '' for the fabric as a whole.")


class FabricPortEvent(FabricEvent):
    """A port taken down or up (UFM's port events; OpenSM re-sweeps, after trap 128 for a switch port)."""

    node: str = Field(description="The IB node description: ib-leaf01, `gpu001 mlx5_0`.")
    port: int = Field(description="Port number on that node.")
    port_name: str = Field(description="UFM port name (GUID_port).")
    resweep_seconds: float = Field(description="How long OpenSM's re-sweep took.")
    trap_128: bool = Field(description="Whether a trap 128 (PortInfo change) started the sweep.")


class CephOsdEvent(Strict):
    """An OSD's state changed in the OSD map (`ceph osd tree`; the monitor's log `osd.N marked down`)."""

    node: Literal["ceph"] = Field(description="Always `ceph` (the topic level).")
    osd: int = Field(description="The OSD id.")
    host: str = Field(description="Its host in the CRUSH map.")
    epoch: int = Field(description="The OSD map epoch that changed it.")


class CephPgEvent(Strict):
    """A placement group's state changed (`ceph pg stat`: active+clean, active+undersized+degraded, peered)."""

    node: Literal["ceph"] = Field(description="Always `ceph`.")
    pg: str = Field(description="The PG id: 2.1f.")
    from_: str | None = Field(alias="from", description="Its previous state, null when first seen.")
    to: str = Field(description="Its new state.")
    epoch: int = Field(description="The OSD map epoch.")


class CephFaultEvent(Strict):
    """An OSD fault of the twin's fault API injected or cleared (`twin fault inject osd.N`)."""

    node: Literal["ceph"] = Field(description="Always `ceph`.")
    osd: int = Field(description="The OSD id.")
    fault: FaultPayload = Field(description="The fault record (above).")


class LustreEvent(Strict):
    """A Lustre server event (what `lctl dl`, the MDS's and OSS's console logs and recovery show)."""

    node: str = Field(description="The MDS or OSS daemon that saw it: mds01, oss02.")


class LustreOssEvent(LustreEvent):
    oss: str = Field(description="The OSS concerned.")


class LustreMoveEvent(LustreEvent):
    """A target served by another server: `from` the one that had it, `to` the one that has it now."""

    from_: str = Field(alias="from", description="The server (OSS, MDS) that served it.")
    to: str = Field(description="The server that serves it now.")


class LustreOstMoveEvent(LustreMoveEvent):
    ost: int = Field(description="OST index.")


class LustreOstEvent(LustreEvent):
    ost: int = Field(description="OST index.")


class LustreOstActiveEvent(LustreOstEvent):
    oss: str = Field(description="The OSS serving it again.")


class LustreMdsFailoverEvent(LustreMoveEvent):
    mdt: int = Field(description="MDT index.")


class LustreFaultEvent(LustreEvent):
    """An OSS fault injected or cleared (the LustreOss fault RPCs, `twin lustre fault`)."""

    fault: FaultPayload = Field(description="The fault record (above).")


class DaemonStartEvent(Strict):
    """A daemon (re)started by the twin's supervisor, published from the daemon's own process on the
    twin clock before it serves."""

    daemon_kind: str = Field(description="Its kind: gpu_node, fabric, ceph_mon, ceph_osd, ceph_rgw, lustre_mds, ...")
    pid: int = Field(description="Its process id.")
    restarts: int = Field(description="How many times the supervisor restarted it (0: its first start).")


class NetworkFaultEvent(Strict):
    """A network fault (`twin net fault`) raised or, for `<kind>-clear`, cleared (netns backend)."""

    node: Literal["network"] = Field(description="Always `network`.")
    fault: FaultPayload = Field(description="The fault record (above).")


class TrainEvent(Strict):
    """A training job's progress (`twin train`): every time is modelled, never measured."""

    job_id: str = Field(description="The job.")
    step: int = Field(description="The training step.")
    modelled: Literal[True] = Field(description="Always true: the times are the model's.")


class TrainStartEvent(TrainEvent):
    gpus: int
    tp: int
    pp: int
    dp: int
    servers: list[str]
    compute_s: float
    dp_comm_s: float
    pp_comm_s: float
    step_s: float
    tokens_per_s: float
    fabric: str


class TrainProgressEvent(TrainEvent):
    loss: float
    modelled_s: float
    step_s: float
    tokens_per_s: float


class TrainCheckpointEvent(TrainEvent):
    write_s: float
    bytes: int
    standin_bytes: int
    path: str


class TrainFailedEvent(TrainEvent):
    reason: str
    modelled_s: float


class TrainCompletedEvent(TrainEvent):
    modelled_s: float


@dataclass(frozen=True)
class Kinds:
    """Event kinds of one subsystem that share a payload, and the real-system records they mirror."""

    subsystem: str
    kinds: tuple[str, ...]
    payload: type[Strict]
    mirrors: str


NET_FAULT_KINDS = ("link-down", "loss", "switch-down", "node-cut", "partition")

KINDS: tuple[Kinds, ...] = (
    Kinds("twin", ("fault", "fault_clear"), FaultEvent, "the twin's fault log (`twin fault inject|clear|list`)"),
    Kinds("twin", ("daemon_start",), DaemonStartEvent, "a daemon's boot line (Ceph's `osd.N boot`, systemd's "
          "`Started ...`), after a crash too"),
    Kinds("gpu", ("xid",), GpuEvent, "an NVRM Xid line in the kernel log (`NVRM: Xid (PCI:...): 79, ...`) "
          "and DCGM's DCGM_FR_XID_ERROR"),
    Kinds("gpu", ("health",), GpuEvent, "DCGM health watches (`dcgmi health -c`: PASS/WARN/FAIL)"),
    Kinds("gpu", ("gpu_lost",), GpuEvent, "Xid 79, GPU fallen off the bus (DCGM_FR_GPU_LOST)"),
    Kinds("gpu", ("gpu_reset", "node_reboot"), GpuEvent, "`nvidia-smi -r`, a server reboot"),
    Kinds("gpu", ("lease_start", "lease_end"), GpuEvent, "a job's GPUs allocated and released "
          "(DCGM job stats `dcgmi stats --jstart/--jstop`)"),
    Kinds("gpu", ("mig",), GpuEvent, "MIG layout changes (`nvidia-smi mig -cgi/-dgi/-cci/-dci`)"),
    Kinds("gpu", ("settings",), GpuEvent, "NVML set calls: power limit, persistence mode, ECC mode "
          "(`nvidia-smi -pl/-pm/-e`)"),
    Kinds("gpu", ("clocks",), GpuEvent, "a GPU's SM or memory clock changed (busy or idle, application "
          "clocks, thermal slowdown): NVML's nvmlEventTypeClock"),
    Kinds("gpu", ("fabric", "fabric_manager"), GpuEvent, "NVSwitch fabric state per GPU and the "
          "nvidia-fabricmanager service"),
    Kinds("gpu", ("fault", "fault_clear"), GpuFaultEvent, "the twin's fault injection (`twin fault inject`)"),
    Kinds("fabric", ("port_down", "port_up"), FabricPortEvent, "UFM port events; OpenSM trap 128 and re-sweep"),
    Kinds("fabric", ("partition_set", "partition_deleted"), FabricEvent, "UFM PKey (partition) changes"),
    Kinds("fabric", ("sharp_job_created", "sharp_job_released"), FabricEvent, "SHARP AM job trees"),
    Kinds("fabric", ("sharp_tree_moved", "sharp_tree_recovered", "sharp_tree_error"), FabricEvent,
          "SHARP AM tree re-creation after a switch or link fault"),
    Kinds("ceph", ("osd_up", "osd_down", "osd_in", "osd_out"), CephOsdEvent, "the monitor's OSD map changes "
          "(OSD_DOWN health check, `osd.N marked down`)"),
    Kinds("ceph", ("pg_state",), CephPgEvent, "PG states (PG_DEGRADED, PG_AVAILABILITY health checks)"),
    Kinds("ceph", ("fault", "fault_clear"), CephFaultEvent, "the twin's OSD faults (`twin fault inject osd.N`)"),
    Kinds("lustre", ("oss_down", "oss_up"), LustreOssEvent, "an OSS stopping and serving again "
          "(`twin lustre fault oss-kill/oss-start`)"),
    Kinds("lustre", ("oss_failover", "oss_failback"), LustreOstMoveEvent, "OST failover to the partner OSS "
          "and back (Lustre recovery: `Recovery over after ...`)"),
    Kinds("lustre", ("ost_inactive", "ost_full", "ost_full_clear"), LustreOstEvent, "`lfs df`/`lctl dl` OST "
          "states: INACTIVE, full"),
    Kinds("lustre", ("ost_active",), LustreOstActiveEvent, "an OST served again (its import reconnected)"),
    Kinds("lustre", ("mds_failover",), LustreMdsFailoverEvent, "the standby MDS mounting the MDT "
          "(MDT failover and recovery)"),
    Kinds("lustre", ("fault", "fault_clear"), LustreFaultEvent, "the twin's OSS faults (`twin lustre fault`)"),
    Kinds("network", NET_FAULT_KINDS + tuple(f"{k}-clear" for k in NET_FAULT_KINDS), NetworkFaultEvent,
          "link, switch, host and partition faults on the planes (`twin net fault`)"),
    Kinds("train", ("start",), TrainStartEvent, "a training job's launch (its parallelism and step time)"),
    Kinds("train", ("progress",), TrainProgressEvent, "each training step (QoS 0)"),
    Kinds("train", ("checkpoint",), TrainCheckpointEvent, "a checkpoint written"),
    Kinds("train", ("failed",), TrainFailedEvent, "the job failed (a fault reached it)"),
    Kinds("train", ("completed",), TrainCompletedEvent, "the job finished its steps"),
)

PAYLOADS: dict[tuple[str, str], type[Strict]] = {(k.subsystem, kind): k.payload for k in KINDS for kind in k.kinds}


def envelope(twin: str, subsystem: str, source: str, kind: str, payload: dict[str, Any], *,
             time: float, message: str = "") -> dict[str, Any]:
    """The event document: the envelope, then the payload's fields (which may not reuse its names)."""
    clash = sorted(set(payload) & set(ENVELOPE))
    if clash:
        raise EventError(f"{subsystem}/{kind} payload reuses envelope field(s) {', '.join(clash)}")
    doc = {"v": SCHEMA_VERSION, "twin": twin, "subsystem": subsystem, "source": source, "kind": kind,
           "id": uuid.uuid4().hex, "time": time, "message": message}
    return doc | payload


def _errors(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(document)'}: {err['msg']}" for err in e.errors())


def validate(doc: Any) -> tuple[Envelope, Strict]:
    """The event's envelope and payload, or EventError saying which field is wrong."""
    if not isinstance(doc, dict):
        raise EventError(f"an event is a JSON object, not {type(doc).__name__}")
    head = {k: v for k, v in doc.items() if k in ENVELOPE}
    try:
        env = Envelope.model_validate(head)
    except ValidationError as e:
        raise EventError(f"envelope: {_errors(e)}") from None
    model = PAYLOADS.get((env.subsystem, env.kind))
    if model is None:
        raise EventError(f"unknown event kind {env.subsystem}/{env.kind} (docs/EVENTS.md lists the kinds)")
    try:
        payload = model.model_validate({k: v for k, v in doc.items() if k not in ENVELOPE})
    except ValidationError as e:
        raise EventError(f"{env.subsystem}/{env.kind} payload: {_errors(e)}") from None
    return env, payload


def validate_message(topic: str, doc: Any) -> None:
    """One message as published: `.../events/<node>/<kind>` and `.../train/<job>/<kind>` carry an event
    whose kind is the topic's last level; `.../faults/<node>/<id>` carries that fault's record;
    `.../telemetry/<node>/gpu/<index>` that GPU's sample."""
    parts = topic.split("/")
    if len(parts) < 5:
        raise EventError(f"topic {topic!r} is not PREFIX/<events|faults|train>/<node>/<name>")
    what, name = parts[2], parts[-1]
    if what == "telemetry":
        try:
            sample = Telemetry.model_validate(doc)
        except ValidationError as e:
            raise EventError(f"telemetry: {_errors(e)}") from None
        if (sample.node, str(sample.gpu)) != (parts[3], name):
            raise EventError(f"telemetry of {sample.node} GPU {sample.gpu} on {topic!r}")
        return
    if what == "faults":
        try:
            fault = FaultPayload.model_validate(doc)
        except ValidationError as e:
            raise EventError(f"fault record: {_errors(e)}") from None
        if fault.id != name:
            raise EventError(f"fault record {fault.id!r} on the topic of {name!r}")
        return
    if what not in ("events", "train"):
        raise EventError(f"topic {topic!r}: only events/, faults/, train/ and telemetry/ carry documents")
    env, _ = validate(doc)
    if env.kind != name or (what == "train") != (env.subsystem == "train"):
        raise EventError(f"{env.subsystem}/{env.kind} event published on {topic!r}")


def check_log(path: str | Path) -> tuple[int, list[str]]:
    """An event log ($CLUSTERTWIN_EVENT_LOG, emulator/bus.py): how many messages it holds, and one
    line for each that is not valid, naming it (line, publisher pid, topic, what is wrong)."""
    count, problems = 0, []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        count, entry = count + 1, None
        try:
            entry = json.loads(line)
            validate_message(entry["topic"], entry["doc"])
        except (ValueError, KeyError, TypeError) as e:
            where = f"{path}:{n}"
            if isinstance(entry, dict):
                where += f" (pid {entry.get('pid')}, {entry.get('topic')})"
            problems.append(f"{where}: {e}")
    return count, problems


# --------------------------------------------------------------------------- docs/EVENTS.md

DOC_HEAD = """# Events

<!-- Generated from emulator/events.py by `python -m emulator.events > docs/EVENTS.md`; a test
     (tests/integration/test_events_schema.py) fails when the two differ. Edit emulator/events.py. -->

Every daemon of the twin publishes on its MQTT broker (`twin endpoints` names it). Topics, under
`PREFIX = clustertwin/<twin name>`:

| topic | QoS | what |
|---|---|---|
| `PREFIX/events/<node>/<kind>` | 1 | one event; `<node>`: gpu001, fabric, ceph, lustre, network, twin |
| `PREFIX/faults/<node>/<fault id>` | 1, retained while active | the fault's record (below) |
| `PREFIX/train/<job id>/<kind>` | 1 (`progress`: 0) | a training job's events |
| `PREFIX/telemetry/<node>/gpu/<index>` | 0 | a GPU's telemetry sample, every telemetry interval |
| `PREFIX/status/<daemon>` | 1, retained | `online`, or `offline` (also the daemon's MQTT last will) |

`twin events` tails them (`--check` flags what does not match this schema); `Twin.events(*patterns)`
subscribes from Python. Publish only through `emulator.bus` (`Publisher`, `SyncPublisher`): it builds
the envelope, and while the test suite runs it logs every message, which must then validate here.

## The envelope

An event is one JSON object: the envelope's fields beside its kind's payload fields (flat, as the
gRPC `Event` message has them: `event["xid"]`, not `event["payload"]["xid"]`). No payload reuses an
envelope field's name.

"""


def _type(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = (text or str(annotation)).replace("typing.", "").replace("NoneType", "null")
    return text.replace(" | ", " or ")   # a bare | would split the Markdown table's cell


def _fields(model: type[BaseModel]) -> list[str]:
    rows = ["| field | type | meaning |", "|---|---|---|"]
    for name, f in model.model_fields.items():
        required = "" if f.is_required() else " (optional)"
        rows.append(f"| `{f.alias or name}` | `{_type(f.annotation)}`{required} | {f.description or ''} |")
    return rows


def _payload_section(k: Kinds, first: dict[type, Kinds]) -> list[str]:
    title = ", ".join(f"`{kind}`" for kind in k.kinds)
    lines = [f"### {k.subsystem}: {title}", "", f"Mirrors: {k.mirrors}.", ""]
    if first.setdefault(k.payload, k) is not k:
        return [*lines, f"Payload: as {first[k.payload].subsystem} `{first[k.payload].kinds[0]}` above.", ""]
    doc = (k.payload.__doc__ or "").strip()
    if doc and k.payload.__doc__ != Strict.__doc__:
        lines += [" ".join(doc.split()), ""]
    return [*lines, *_fields(k.payload), ""]


def render() -> str:
    """docs/EVENTS.md."""
    lines = [DOC_HEAD.rstrip("\n"), "", *_fields(Envelope), "",
             "## The fault record", "", " ".join((FaultPayload.__doc__ or "").split()), "",
             *_fields(FaultPayload), "", "## Telemetry", "", " ".join((Telemetry.__doc__ or "").split()), "",
             *_fields(Telemetry), "", "## Payloads, per kind", ""]
    first: dict[type, Kinds] = {}
    for k in KINDS:
        lines += _payload_section(k, first)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(render(), end="")
