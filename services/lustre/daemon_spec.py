"""The specs of Lustre's daemon kinds (DaemonConfig.spec, typed): what services/lustre/plan.py gives
each MDS and OSS, and what each parses at start (a malformed spec stops it with the field named)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from emulator.daemon_config import DaemonSpec


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MdtSpec(Part):
    index: int = 0
    capacity_bytes: int


class MdsOst(Part):
    """An OST as the MDS allocates on it."""

    index: int
    oss: str                  # the OSS that serves it
    capacity_bytes: int


class OssOst(Part):
    """An OST as an OSS serves it."""

    index: int
    capacity_bytes: int
    dir: str                  # its data directory (its "disk"; the failover partner mounts the same one)


class LustreServerSpec(DaemonSpec):
    fsname: str
    # A second address of the same server: the host's management (OOB) one, `grpc` being its
    # storage-network address (services/lustre/server.py listens on both).
    admin: str | None = None


class MdsSpec(LustreServerSpec):
    mdt: MdtSpec
    osts: list[MdsOst]
    ost_servers: dict[int, list[str]]   # OST index -> the OSS (and partner) addresses that may serve it
    # The MDT's multiple-mount protection: the MDS holding this flock is active; the other (mds_ha)
    # waits as standby and takes over when the active one dies.
    lock_file: str | None = None
    statfs_interval: float = 1.0        # seconds between OST statfs polls


class OssSpec(LustreServerSpec):
    data_dir: str
    osts: list[OssOst]                  # its own OSTs
    partner: str | None = None          # its failover partner OSS
    partner_osts: list[OssOst] = []     # the partner's OSTs, which it takes over when the partner is down
    # The NVMe time model (services.lustre.ost.NvmeModel) applied as call duration x this factor:
    # 1.0 as modelled, 0 off (TWIN_LUSTRE_NVME_SCALE overrides it).
    nvme_scale: float = 1.0
