"""What RGW asks of RADOS, over the `Cluster` model: put, read, remove whole objects.

`Cluster` has no object removal yet, so `remove` is done here on the PG the object maps to:
like a write it needs the PG active, then drops the object and its chunks on every OSD.
"""

from __future__ import annotations

from services.ceph.cluster import Cluster


def remove(cluster: Cluster, pool: str, name: str) -> None:
    remote = getattr(cluster, "remove_object", None)
    if remote is not None:  # a cluster behind the monitor daemon (services.ceph.rgw.mon_client.MonCluster)
        remote(pool, name)
        return
    pg = cluster.locate(pool, name)
    info = pg.objects.get(name)
    if info is None:
        return
    pg.require_active(cluster.is_up, "delete")
    del pg.objects[name]
    osds = {(pos, o) for pos, o in enumerate(pg.acting) if o is not None}
    osds |= set(pg.targets.items())
    for pos, osd in osds:
        cluster.store.delete(osd, info.chunk_key(pg.pgid, pos))
    for stale in (*pg.missing.values(), *pg.backfilled.values()):
        stale.discard(name)
