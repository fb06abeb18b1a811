"""The in-process Ceph cluster behind a stand-alone gateway: N hosts, each with one HDD OSD for the
EC 8+3 data pool and one SSD OSD for the replicated (size 3) index pool, as FIDELITY §4 lays out."""

from __future__ import annotations

from services.ceph.chunkstore import MemoryChunkStore
from services.ceph.cluster import Cluster
from services.ceph.crush import CrushMap
from services.ceph.pool import erasure_pool, replicated_pool

DATA_POOL = "default.rgw.buckets.data"
INDEX_POOL = "default.rgw.buckets.index"
SSD_OSD_BASE = 100  # SSD OSD of host h is osd.(100 + h)


def rgw_cluster(hosts: int = 12, pg_num: int = 32) -> Cluster:
    crush = CrushMap()
    for h in range(hosts):
        crush.add_osd(h, f"host{h:02d}", "hdd")
        crush.add_osd(SSD_OSD_BASE + h, f"host{h:02d}", "ssd", capacity_bytes=3_840_000_000_000)
    pools = [erasure_pool(1, DATA_POOL, pg_num=pg_num),
             replicated_pool(2, INDEX_POOL, pg_num=8, application="rgw")]
    return Cluster(crush, pools, MemoryChunkStore())
