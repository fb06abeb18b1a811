"""What RGW asks of RADOS, over the `Cluster` model: put, read, remove whole objects.

`Cluster` has no object removal yet, so `remove` is done here on the PG the object maps to:
like a write it needs the PG active, then drops the object and its chunks on every OSD.
"""

from __future__ import annotations

from services.ceph.cluster import Cluster
from services.ceph.errors import CephError


def remove(cluster: Cluster, pool: str, name: str) -> None:
    remote = getattr(cluster, "remove_object", None)
    if remote is not None:  # a cluster behind the monitor daemon (services.ceph.rgw.mon_client.MonCluster)
        remote(pool, name)
        return
    gone = forget(cluster, pool, name)
    if gone is not None:
        pg, chunks = gone
        for pos, osd in chunks:
            cluster.store.delete(osd, (pg, name, pos))


def forget(cluster: Cluster, pool: str, name: str) -> tuple[str, list[tuple[int, int]]] | None:
    """Drop the object from its PG (which must be active): its PG and the (shard, OSD) pairs that may
    hold its chunks, for the caller to delete; None if it was not there."""
    pg = cluster.locate(pool, name)
    info = pg.objects.get(name)
    if info is None:
        return None
    pg.require_active(cluster.is_up, "delete")
    del pg.objects[name]
    chunks = {(pos, o) for pos, o in enumerate(pg.acting) if o is not None} | set(pg.targets.items())
    for stale in (*pg.missing.values(), *pg.backfilled.values()):
        stale.discard(name)
    return str(pg.pgid), sorted(chunks)


def remove_many(cluster: Cluster, objs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Remove these (pool, name) objects; returns those that could not be (a PG not active, the
    monitor away). Behind the monitor daemon, one call per pool for all of them."""
    left: list[tuple[str, str]] = []
    remote = getattr(cluster, "remove_objects", None)
    pools: dict[str, list[str]] = {}
    for pool, name in objs:
        pools.setdefault(pool, []).append(name)
    for pool, names in pools.items():
        if remote is not None:
            try:
                failed, _ = remote(pool, names)
            except CephError:
                failed = names
            left += [(pool, n) for n in failed]
            continue
        for name in names:
            try:
                remove(cluster, pool, name)
            except CephError:
                left.append((pool, name))
    return left
