"""Ceph's part of the twin's manifest, typed: the fields its OSD and gateway entries carry beyond every
daemon's. services/ceph/plan.py writes them through these models and Ceph's readers parse them with
them (the core knows none of it).

    osds(manifest)       # every OSD's entry: its id and device class
    gateway(manifest)    # the RGW gateway's entry (its S3 URL), None if the twin runs no Ceph
"""

from __future__ import annotations

from emulator.manifest import DaemonEntry, Manifest


class OsdEntry(DaemonEntry):
    osd: int                  # its id: the daemon is osd.<id>
    device_class: str         # hdd or ssd


class RgwEntry(DaemonEntry):
    s3: str                   # the S3 endpoint's URL, on the storage network when there is one


def osds(manifest: Manifest) -> list[OsdEntry]:
    return [d.typed(OsdEntry) for d in manifest.daemons_of("ceph_osd")]


def gateway(manifest: Manifest) -> RgwEntry | None:
    found = manifest.daemons_of("ceph_rgw")
    return found[0].typed(RgwEntry) if found else None
