"""Lustre's part of the twin's manifest, typed: its `lustre` section (what a client mount needs) and
the fields its MDS and OSS entries carry beyond every daemon's. services/lustre/plan.py writes them
through these models and every Lustre reader parses them with them (the core knows none of it).

    lu = LustreSection.of(twin.manifest)       # None: the twin runs no Lustre
    lu = LustreSection.require(manifest, run)  # RunDirError saying how to start it
    oss = entry.typed(OssEntry)                # an OSS's OSTs, partner and bulk port
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from emulator.manifest import DaemonEntry, Manifest
from emulator.rundir import RunDirError

SECTION = "lustre"


class OstInfo(BaseModel):
    index: int
    oss: str                       # the OSS that serves it
    partner: str | None = None     # its failover partner (oss_failover_pairs), which takes it over
    capacity_bytes: int
    dir: str                       # its data directory (RUN/lustre/OSTxxxx)
    servers: list[str]             # the gRPC addresses that may serve it, on the storage network: OSS, partner
    admin: list[str] = []          # the same servers' management (OOB) addresses


class LustreSection(BaseModel):
    fsname: str
    mgs: str                       # the mount source: MGS NIDs, e.g. 10.102.3.1@tcp:/hot
    mds: list[str]                 # the MDS's gRPC addresses (active first when mds_ha), storage network
    mds_admin: list[str] = []      # the same servers' management addresses
    osts: list[OstInfo]
    data_dir: str

    @classmethod
    def of(cls, manifest: Manifest) -> LustreSection | None:
        """The twin's Lustre, None if it runs none."""
        return manifest.section_as(SECTION, cls)

    @classmethod
    def require(cls, manifest: Manifest, run_dir: str | Path) -> LustreSection:
        found = cls.of(manifest)
        if found is None:
            raise RunDirError(f"the twin in {run_dir} runs no Lustre: start it with `twin up TOPOLOGY --lustre`")
        return found


class MdsEntry(DaemonEntry):
    fsname: str
    mdt: int
    failover: list[str] = []       # the other MDS's gRPC address(es) under mds_ha


class OssEntry(DaemonEntry):
    bulk: str                      # its bulk data port (services/lustre/bulk.py), storage network
    osts: list[int]
    partner: str | None = None


def servers(manifest: Manifest) -> tuple[dict[str, MdsEntry], dict[str, OssEntry]]:
    """The twin's MDS and OSS entries, by name."""
    return ({d.name: d.typed(MdsEntry) for d in manifest.daemons_of("lustre_mds")},
            {d.name: d.typed(OssEntry) for d in manifest.daemons_of("lustre_oss")})
