"""A small EC cluster for the Ceph model tests: hosts with one HDD OSD each."""

from __future__ import annotations

from services.ceph.chunkstore import MemoryChunkStore
from services.ceph.cluster import Cluster
from services.ceph.crush import CrushMap
from services.ceph.pool import erasure_pool, replicated_pool


def crush_map(hosts: int, osds_per_host: int = 1) -> CrushMap:
    crush = CrushMap()
    for h in range(hosts):
        for j in range(osds_per_host):
            crush.add_osd(h * osds_per_host + j, f"host{h:02d}")
    return crush


def ec_cluster(hosts: int = 12, pg_num: int = 16, rbd: bool = False) -> tuple[Cluster, MemoryChunkStore]:
    crush = crush_map(hosts)
    pools = [erasure_pool(1, "default.rgw.buckets.data", pg_num=pg_num)]
    if rbd:
        for h in range(hosts):
            crush.add_osd(100 + h, f"host{h:02d}", "ssd", capacity_bytes=3_840_000_000_000)
        pools.append(replicated_pool(2, "rbd", pg_num=8))
    store = MemoryChunkStore()
    return Cluster(crush, pools, store), store
