"""`ObjectIo` over a `Cluster` model: RBD's RADOS objects through PGs, chunks and OSDs like any other.

The monitor daemon uses it on its own Cluster (whose chunk store is the OSD daemons), so RBD I/O
takes the same path, PG states and OSD faults as RGW's; the unit tests use it on a Cluster over a
MemoryChunkStore. `put` can be given the monitor's own write (which also persists the object's
metadata and reports failed OSDs) instead of `Cluster.put`.
"""

from __future__ import annotations

from collections.abc import Callable

from services.ceph.cluster import Cluster
from services.ceph.errors import CephError, PgUnavailable
from services.ceph.pg import PgState, state_string


class ClusterObjectIo:
    def __init__(self, cluster: Cluster, put: Callable[[str, str, bytes], object] | None = None,
                 get: Callable[[str, str], bytes] | None = None,
                 remove: Callable[[str, str], object] | None = None,
                 put_many: Callable[[str, list[tuple[str, bytes]]], object] | None = None,
                 get_many: Callable[[str, list[str]], dict[str, bytes]] | None = None) -> None:
        self.cluster = cluster
        self._put_many, self._get_many = put_many, get_many
        self._put = put or cluster.put
        self._get = get or cluster.get
        self._remove = remove or self._remove_local

    def check_pool(self, pool: str) -> None:
        p = self.cluster.pool(pool)   # NOT_FOUND
        if p.erasure:
            raise CephError("INVALID_ARGUMENT", f"pool {pool} is erasure-coded: RBD images need a replicated "
                                                "pool (a separate --data-pool is not supported)")

    def put(self, pool: str, name: str, data: bytes) -> None:
        self._put(pool, name, data)

    def get(self, pool: str, name: str) -> bytes | None:
        if name not in self.cluster.locate(pool, name).objects:
            return None
        return self._get(pool, name)

    def put_many(self, pool: str, items: list[tuple[str, bytes]]) -> None:
        if self._put_many is not None:
            self._put_many(pool, items)
            return
        for name, data in items:
            self._put(pool, name, data)

    def get_many(self, pool: str, names: list[str]) -> dict[str, bytes | None]:
        there = [n for n in names if n in self.cluster.locate(pool, n).objects]
        got: dict[str, bytes | None] = dict.fromkeys(names)
        if self._get_many is not None:
            got.update(self._get_many(pool, there))
        else:
            got.update({n: self._get(pool, n) for n in there})
        return got

    def remove(self, pool: str, name: str) -> None:
        if name in self.cluster.locate(pool, name).objects:
            self._remove(pool, name)

    def list(self, pool: str, prefix: str) -> list[str]:
        pid = self.cluster.pool(pool).id
        return sorted(n for pgid, pg in self.cluster.pgs.items() if pgid.pool == pid
                      for n in pg.objects if n.startswith(prefix))

    def _remove_local(self, pool: str, name: str) -> None:
        c = self.cluster
        pg = c.locate(pool, name)
        info = pg.objects.get(name)
        if info is None:
            return
        state = pg.state(c.is_up)
        if not state & PgState.ACTIVE:
            raise PgUnavailable(str(pg.pgid), state_string(state), "delete blocks until the PG is active")
        del pg.objects[name]
        for pos, osd in {(p, o) for p, o in enumerate(pg.acting) if o is not None} | set(pg.targets.items()):
            c.store.delete(osd, info.chunk_key(pg.pgid, pos))
        for stale in (*pg.missing.values(), *pg.backfilled.values()):
            stale.discard(name)
