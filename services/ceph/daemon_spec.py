"""The specs of Ceph's daemon kinds (DaemonConfig.spec, typed): what services/ceph/plan.py gives the
monitor, each OSD and the gateway, and what each parses at start (a malformed spec stops it with the
field named)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from emulator.daemon_config import DaemonSpec

DEFAULT_HEARTBEAT_S = 6.0    # Ceph's osd_heartbeat_interval


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OsdPlacement(Part):
    """One OSD as the monitor's CRUSH map and its clients know it."""

    id: int
    host: str
    device_class: Literal["hdd", "ssd"]
    capacity_bytes: int
    grpc: str                 # its CephOsd service
    msgr: str | None = None   # its messenger (services/ceph/msgr.py): chunk I/O; None: over gRPC's ChunkStream


class ErasureProfile(Part):   # the data pool's (the topology's ceph.ec)
    k: int = 8
    m: int = 3
    failure_domain: Literal["host", "osd"] = "host"


class ReplicatedProfile(Part):   # the index and RBD pools' (the topology's ceph.rbd)
    size: int = 3
    failure_domain: Literal["host", "osd"] = "host"


class MonTimingSpec(Part):    # twin seconds; services/ceph/monitor.MonTiming
    heartbeat_interval: float = DEFAULT_HEARTBEAT_S
    heartbeat_grace: float = 20.0
    down_out_interval: float = 600.0


class MonSpec(DaemonSpec):
    osds: list[OsdPlacement]
    ec: ErasureProfile = ErasureProfile()
    replicated: ReplicatedProfile = ReplicatedProfile()
    timing: MonTimingSpec = MonTimingSpec()
    pg_num: int = 32          # the data pool's PGs
    op_timeout: float = 30.0  # RBD calls' wait for a PG to become active


class OsdSpec(DaemonSpec):
    osd: int                  # its id: the daemon is osd.<id>
    host: str                 # its Ceph host, e.g. ceph03
    device_class: Literal["hdd", "ssd"] = "hdd"
    capacity_bytes: int = 0
    data_dir: str             # where its chunks live
    mon: str | None = None    # HOST:PORT of the monitor's CephMon service (None: no heartbeats)
    heartbeat_interval: float = DEFAULT_HEARTBEAT_S
    storage_timing: Literal["model", "fast"] = "model"   # `twin up --storage-timing`
    msgr: str | None = None   # HOST:PORT its messenger listens on (services/ceph/msgr.py); None: none


class RgwSpec(DaemonSpec):
    mon: str                  # HOST:PORT of the monitor's CephMon service
    s3: str                   # HOST:PORT the S3 API listens on
    op_timeout: float = 30.0
    zone: str = "default"
    users_file: str | None = None             # `twin up --ceph-users FILE`: users made at start
    lc_debug_interval: float | None = None    # `--rgw-lc-debug-interval`: a lifecycle "day" in twin seconds
    osds: dict[int, str] = {}                 # each OSD's messenger: data-pool reads go straight there
    ec: ErasureProfile = ErasureProfile()     # the data pool's profile (to join its data chunks)
