"""What RGW asks of RADOS, over the `Cluster` model: put, read, remove whole objects.

`Cluster` has no object removal yet, so `remove` is done here on the PG the object maps to:
like a write it needs the PG active, then drops the object and its chunks on every OSD.
"""

from __future__ import annotations

from services.ceph.cluster import Cluster
from services.ceph.errors import PgUnavailable
from services.ceph.pg import PgState, state_string


def remove(cluster: Cluster, pool: str, name: str) -> None:
    remote = getattr(cluster, "remove_object", None)
    if remote is not None:  # a cluster behind the monitor daemon (services.ceph.rgw.daemon.MonCluster)
        remote(pool, name)
        return
    pg = cluster.locate(pool, name)
    info = pg.objects.get(name)
    if info is None:
        return
    state = pg.state(cluster.is_up)
    if not state & PgState.ACTIVE:
        raise PgUnavailable(str(pg.pgid), state_string(state), "delete blocks until the PG is active")
    del pg.objects[name]
    osds = {(pos, o) for pos, o in enumerate(pg.acting) if o is not None}
    osds |= set(pg.targets.items())
    for pos, osd in osds:
        cluster.store.delete(osd, info.chunk_key(pg.pgid, pos))
    for stale in (*pg.missing.values(), *pg.backfilled.values()):
        stale.discard(name)
